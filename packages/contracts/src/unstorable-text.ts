/**
 * Text the platform refuses wherever it enters: a NUL character (U+0000), which PostgreSQL's
 * `text` and `jsonb` reject, and an unpaired UTF-16 surrogate (U+D800..U+DFFF alone), which is not
 * Unicode and cannot be stored faithfully. The control plane refuses such text in every body,
 * path parameter and query string; the gateway in the arguments of the tools it answers itself.
 */

export interface UnstorableText {
  /** JSON Pointer of the string inside the value checked (for a key: the key's own pointer). */
  pointer: string;
  /** Whether the bad text is an object key or a string value. */
  in: 'key' | 'value';
  problem: 'NUL' | 'lone surrogate';
}

// Only these escapes can put a NUL or a surrogate into parsed JSON: raw control characters are
// invalid JSON, and text decoded from UTF-8 holds no lone surrogate.
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/** False when JSON text certainly parses to no such string (a cheap test before a full walk). */
export function mayHoldUnstorableText(jsonText: string): boolean {
  return SUSPECT_ESCAPE.test(jsonText);
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one (no `u`
// flag: the pattern must see code units, not code points).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function problemOf(text: string): UnstorableText['problem'] | undefined {
  if (text.includes('\u0000')) return 'NUL';
  if (LONE_SURROGATE.test(text)) return 'lone surrogate';
  return undefined;
}

const escapeToken = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The first string (object key or value) in a JSON value that cannot be stored, or undefined.
 * Recursive: callers pass values whose depth a body parser has already bounded.
 */
export function findUnstorableText(value: unknown, pointer = ''): UnstorableText | undefined {
  if (typeof value === 'string') {
    const problem = problemOf(value);
    return problem && { pointer, in: 'value', problem };
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], `${pointer}/${i}`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = `${pointer}/${escapeToken(key)}`;
    const problem = problemOf(key);
    if (problem) return { pointer: at, in: 'key', problem };
    const found = findUnstorableText(item, at);
    if (found) return found;
  }
  return undefined;
}

/** Shows text with its NULs and lone surrogates escaped (`\u0000`), as JSON would. */
export function printableText(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/**
 * The one-line refusal of such text found under `part` (`body`, `params`, `arguments`):
 * `body/data/notes: the text contains a NUL character (U+0000), which cannot be stored`.
 */
export function unstorableTextMessage(part: string, found: UnstorableText): string {
  const what =
    found.problem === 'NUL'
      ? 'a NUL character (U+0000), which cannot be stored'
      : 'an unpaired UTF-16 surrogate, which is not valid Unicode';
  return `${part}${printableText(found.pointer)}: the ${found.in === 'key' ? 'key' : 'text'} contains ${what}`;
}
