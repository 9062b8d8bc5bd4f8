/**
 * What a custom tool writes to `console`, kept within a count of entries and a number of UTF-8
 * bytes: the entry that crosses the byte bound is cut, later ones are dropped, and one marker entry
 * at the end says how many were dropped and why. A tool that logs in a loop costs its own time,
 * never the control plane's memory.
 */
import type { ConsoleEntry, ConsoleLevel, SandboxLimits } from './protocol.ts';

const CUT = '…';

export class ConsoleCapture {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #entries: ConsoleEntry[] = [];
  #bytes = 0;
  #dropped = 0;
  #cut = false;

  constructor(limits: Pick<SandboxLimits, 'maxConsoleEntries' | 'maxConsoleBytes'>) {
    this.#maxEntries = limits.maxConsoleEntries;
    this.#maxBytes = limits.maxConsoleBytes;
  }

  write(level: ConsoleLevel, message: string): void {
    if (this.#entries.length >= this.#maxEntries || this.#bytes >= this.#maxBytes) {
      this.#dropped += 1;
      return;
    }
    const left = this.#maxBytes - this.#bytes;
    let kept = message;
    if (Buffer.byteLength(kept) > left) {
      kept = cutToBytes(kept, left - Buffer.byteLength(CUT)) + CUT;
      this.#cut = true;
    }
    this.#bytes += Buffer.byteLength(kept);
    this.#entries.push({ level, message: kept });
  }

  /** The entries, with the marker entry last when anything was cut or dropped. */
  entries(): ConsoleEntry[] {
    if (this.#dropped === 0 && !this.#cut) return [...this.#entries];
    const what = this.#dropped === 0 ? 'an entry was cut' : `${this.#dropped} more entries were dropped`;
    return [
      ...this.#entries,
      {
        level: 'truncated',
        message: `Console output truncated: ${what} (a call keeps ${this.#maxEntries} entries and ${this.#maxBytes} bytes).`,
      },
    ];
  }
}

/** The longest prefix of `text` within `bytes` UTF-8 bytes, never splitting a character. */
export function cutToBytes(text: string, bytes: number): string {
  if (bytes <= 0) return '';
  const encoded = Buffer.from(text, 'utf8').subarray(0, bytes);
  // A cut inside a multi-byte character decodes to U+FFFD at the end: drop it.
  return encoded.toString('utf8').replace(/\uFFFD$/, '');
}
