/**
 * JSON the platform refuses wherever it enters, because it cannot be stored as sent:
 * - a NUL character (U+0000), which PostgreSQL's `text` and `jsonb` reject;
 * - an unpaired UTF-16 surrogate (U+D800..U+DFFF alone), which is not Unicode;
 * - a number too large for a double (`1e999`), which parses to Infinity and would be stored as
 *   `null`.
 * The control plane refuses them in every body, path parameter and query string; the gateway in
 * the arguments of the tools it answers itself.
 */

export interface Unstorable {
  /** JSON Pointer of the bad key or value inside the value checked (a key: the key's own pointer). */
  pointer: string;
  in: 'key' | 'value';
  problem: 'NUL' | 'lone surrogate' | 'non-finite number';
}

// Only these can put such values into parsed JSON: raw control characters are invalid JSON, text
// decoded from UTF-8 holds no lone surrogate, and a number overflows a double (past 1.8e308) only
// with an exponent of 3+ digits or, with one of at most 2 digits (at most e99), with 210+ digits
// before it: 209 digits are below 1e209, times 1e99 below 1e308. (Counting 309 digits alone, as
// before, let `1` and 250 zeros `e60` through: Infinity.) A run of digits in a fraction or a string
// matches too; that only costs a walk. The lookbehind makes a run be tried from its start only:
// without it, 9 MB of 308-digit numbers took 16 s to test.
const SUSPECT = /\\u(?:0000|[dD][89a-fA-F])|[eE][+-]?\d{3}|(?<!\d)\d{210}/;

/** False when JSON text certainly parses to nothing unstorable (a cheap test before a full walk). */
export function mayHoldUnstorable(jsonText: string): boolean {
  return SUSPECT.test(jsonText);
}

// A NUL, a high surrogate not followed by a low one, or a low one not preceded by a high one, in
// one scan (no `u` flag: the pattern must see code units, not code points). The NUL is what it is
// for, hence the control character.
// eslint-disable-next-line no-control-regex
const BAD_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** BAD_TEXT for every match, to replace them. */
const ALL_BAD_TEXT = new RegExp(BAD_TEXT.source, 'g');

/**
 * `text` with its NULs and unpaired surrogates replaced by U+FFFD: how text the platform did not
 * write itself (an upstream's descriptions, its error messages) is stored when a refusal is not the
 * answer. A name or a key must not be rewritten (it is how the thing is asked for): check those
 * with findUnstorable and skip what holds such text.
 */
export function storableText(text: string): string {
  return BAD_TEXT.test(text) ? text.replace(ALL_BAD_TEXT, '\uFFFD') : text;
}

function textProblem(text: string): Unstorable['problem'] | undefined {
  if (!BAD_TEXT.test(text)) return undefined;
  return text.includes('\u0000') ? 'NUL' : 'lone surrogate';
}

const escapeToken = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** The path walked so far; a pointer string is built only for what is found. */
type Path = (string | number)[];

const pointerOf = (base: string, path: Path) =>
  base + path.map((token) => `/${typeof token === 'number' ? token : escapeToken(token)}`).join('');

function walk(value: unknown, path: Path): Pick<Unstorable, 'in' | 'problem'> | undefined {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem && { in: 'value', problem };
  }
  if (typeof value === 'number') {
    return Number.isFinite(value) ? undefined : { in: 'value', problem: 'non-finite number' };
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      // Numbers, booleans and null, the bulk of most data, without a call.
      if (
        typeof item === 'number'
          ? Number.isFinite(item)
          : typeof item !== 'string' && typeof item !== 'object'
      ) {
        continue;
      }
      path.push(i);
      const found = walk(item, path);
      if (found) return found;
      path.pop();
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    const problem = textProblem(key);
    if (problem) return { in: 'key', problem };
    const found = walk((value as Record<string, unknown>)[key], path);
    if (found) return found;
    path.pop();
  }
  return undefined;
}

/**
 * The first unstorable key or value in a parsed JSON value, or undefined; `pointer` is where the
 * value sits (prefixed to what is found). Recursive: callers pass values whose depth a body parser
 * has already bounded. Builds no string for what is fine, so walking large data stays cheap.
 */
export function findUnstorable(value: unknown, pointer = ''): Unstorable | undefined {
  const path: Path = [];
  const found = walk(value, path);
  return found && { pointer: pointerOf(pointer, path), ...found };
}

/** Text with its NULs and lone surrogates escaped (`\u0000`), as JSON would show it. */
export function printable(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

const PROBLEMS: Record<Unstorable['problem'], string> = {
  NUL: 'contains a NUL character (U+0000), which cannot be stored',
  'lone surrogate': 'contains an unpaired UTF-16 surrogate, which is not valid Unicode',
  'non-finite number': 'is a number too large to represent (it would be stored as null)',
};

/**
 * The one-line refusal of what was found under `part` (`body`, `params`, `arguments`), such as
 * `body/data/notes: the text contains a NUL character (U+0000), which cannot be stored`.
 */
export function unstorableMessage(part: string, found: Unstorable): string {
  const what = found.in === 'key' ? 'key' : found.problem === 'non-finite number' ? 'value' : 'text';
  return `${part}${printable(found.pointer)}: the ${what} ${PROBLEMS[found.problem]}`;
}
