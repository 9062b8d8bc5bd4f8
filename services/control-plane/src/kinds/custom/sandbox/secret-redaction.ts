/**
 * Secrets given to a custom tool must not leave it in its answer: every string of the result
 * (keys included), every console line and every error message has each secret value replaced by
 * a marker before it leaves the worker. This catches a tool that returns, logs or throws a secret
 * as is (or inside a longer string); the host then takes out its common encodings too (base64,
 * hex, percent-encoding: secrets/secret-forms.ts). Any other transformation is beyond any filter.
 */
import type { JsonValue } from '@bindery/context-ops';
import type { ConsoleEntry } from './protocol.ts';

export const REDACTED = '[secret]';

export class SecretRedaction {
  // Longest first, so a secret that contains another is replaced whole.
  readonly #values: string[];

  constructor(secrets: Readonly<Record<string, string>>) {
    this.#values = [...new Set(Object.values(secrets).filter((value) => value.length > 0))].sort(
      (a, b) => b.length - a.length,
    );
  }

  get active(): boolean {
    return this.#values.length > 0;
  }

  text(text: string): string {
    let out = text;
    for (const value of this.#values) if (out.includes(value)) out = out.replaceAll(value, REDACTED);
    return out;
  }

  /**
   * `text` as `text` does, for JSON text: a secret holding a quote, a backslash or a control
   * character stands there escaped, so its escaped form is taken out too.
   */
  jsonText(text: string): string {
    let out = this.text(text);
    for (const value of this.#values) {
      const escaped = JSON.stringify(value).slice(1, -1);
      if (escaped !== value && out.includes(escaped)) out = out.replaceAll(escaped, REDACTED);
    }
    return out;
  }

  json(value: JsonValue): JsonValue {
    if (!this.active) return value;
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((item) => this.json(item));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, JsonValue> = {};
      for (const [key, item] of Object.entries(value)) {
        // defineProperty: a key named __proto__ stays a plain key.
        Object.defineProperty(out, this.text(key), {
          value: this.json(item),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    return value;
  }

  console(entries: ConsoleEntry[]): ConsoleEntry[] {
    if (!this.active) return entries;
    return entries.map((entry) => ({ level: entry.level, message: this.text(entry.message) }));
  }
}
