/**
 * What a custom tool tells its caller while it runs (`ctx.progress`, `ctx.log`), on the worker's
 * side: held to the call's bounds, secrets taken out, and posted one way on the host call port,
 * so a report or a line never waits for the event loop and never fails the tool. The prelude has
 * already checked the arguments (vm-prelude.ts); this keeps the bounds:
 *
 * - progress: `maxProgressReports` reports are sent as they come; past them only the latest is
 *   kept, and sent when the call ends, so the caller still sees where the call got to.
 * - log: lines below the caller's level are never sent; `maxLogLines` are sent, then one warning
 *   line says the rest were dropped; a line whose data takes more than `maxLogLineBytes` of JSON
 *   is sent as that JSON text, cut, with `…`.
 */
import { logLevelAllows, type LogLevel } from '@bindery/contracts';
import type { JsonValue } from '@bindery/context-ops';
import type { MessagePort } from 'node:worker_threads';
import { cutToBytes } from './console-capture.ts';
import type { HostNotice, NoticeWants, SandboxLimits } from './protocol.ts';
import type { SecretRedaction } from './secret-redaction.ts';

/** Bytes of a progress message kept; a longer one is cut, with `…`. */
export const MAX_PROGRESS_MESSAGE_BYTES = 1024;
const CUT = '…';

export interface ProgressReport {
  progress: number;
  total?: number;
  message?: string;
}

export class ToolNotices {
  readonly #port: MessagePort | undefined;
  readonly #wants: NoticeWants;
  readonly #limits: Pick<SandboxLimits, 'maxProgressReports' | 'maxLogLines' | 'maxLogLineBytes'>;
  readonly #redaction: SecretRedaction;
  #reports = 0;
  #held: ProgressReport | undefined;
  #lines = 0;
  #ended = false;

  constructor(
    port: MessagePort | undefined,
    wants: NoticeWants | undefined,
    limits: Pick<SandboxLimits, 'maxProgressReports' | 'maxLogLines' | 'maxLogLineBytes'>,
    redaction: SecretRedaction,
  ) {
    this.#port = port;
    this.#wants = wants ?? { progress: false };
    this.#limits = limits;
    this.#redaction = redaction;
  }

  /** True when the caller hears lines of `level` (the prelude skips the work for others). */
  hears(level: LogLevel): boolean {
    const threshold = this.#wants.logLevel;
    return this.#port !== undefined && threshold !== undefined && logLevelAllows(threshold, level);
  }

  /** True when the caller hears progress reports. */
  get hearsProgress(): boolean {
    return this.#port !== undefined && this.#wants.progress;
  }

  progress(report: ProgressReport): void {
    if (!this.hearsProgress || this.#ended) return;
    const message =
      report.message === undefined
        ? undefined
        : this.#redaction.text(cut(report.message, MAX_PROGRESS_MESSAGE_BYTES));
    const kept: ProgressReport = {
      progress: report.progress,
      ...(report.total !== undefined && { total: report.total }),
      ...(message !== undefined && { message }),
    };
    if (this.#reports >= this.#limits.maxProgressReports) {
      this.#held = kept;
      return;
    }
    this.#reports += 1;
    this.#post({ notice: 'progress', ...kept });
  }

  /** `dataJson`: the line's data as JSON text (the prelude made it, so it parses). */
  log(level: LogLevel, dataJson: string): void {
    if (!this.hears(level) || this.#ended) return;
    if (this.#lines > this.#limits.maxLogLines) return;
    if (this.#lines === this.#limits.maxLogLines) {
      this.#lines += 1;
      if (this.hears('warning')) {
        const note = `ctx.log: this call sends at most ${this.#limits.maxLogLines} lines; later ones are dropped`;
        this.#post({ notice: 'log', level: 'warning', data: JSON.stringify(note) });
      }
      return;
    }
    this.#lines += 1;
    const max = this.#limits.maxLogLineBytes;
    let data: string;
    if (Buffer.byteLength(dataJson) <= max) {
      data = this.#redaction.active
        ? JSON.stringify(this.#redaction.json(JSON.parse(dataJson) as JsonValue))
        : dataJson;
    } else {
      // Secrets out before the cut, so none is left half in the line.
      data = JSON.stringify(cut(this.#redaction.jsonText(dataJson), max));
    }
    this.#post({ notice: 'log', level, data });
  }

  /** The call ended: the held progress report goes, then the end marker; nothing after it. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#held) this.#post({ notice: 'progress', ...this.#held });
    this.#held = undefined;
    this.#post({ notice: 'end' });
  }

  #post(notice: HostNotice): void {
    try {
      this.#port?.postMessage(notice);
    } catch {
      // A closed port (the event loop gave up on the call): nobody hears it any more.
    }
  }
}

function cut(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  return cutToBytes(text, bytes - Buffer.byteLength(CUT)) + CUT;
}
