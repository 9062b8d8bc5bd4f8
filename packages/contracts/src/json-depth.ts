/**
 * How deep JSON may nest on the wire, and the check both services run on a request body's raw text
 * before any parser or validator recurses into it. Depth counts containers: `1` is 0 deep, `[]`
 * and `{}` are 1, `{"a": [1]}` is 2.
 */

/**
 * The deepest JSON value a client may hand over to be stored or written: table data, a tool's
 * `value` argument, a binding's input-schema override. context-ops caps `value` with it too.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Levels a request may wrap around such a value. The deepest wrapping is a JSON-RPC batch holding
 * a progressive `execute_apis` call: `[ { params { arguments { executions [ { parameters {` puts
 * a parameter's value 7 levels down; one level is spare.
 */
export const JSON_ENVELOPE_DEPTH = 8;

/** The deepest nesting a whole request body may have, on every JSON entry point of both services. */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH + JSON_ENVELOPE_DEPTH;

/**
 * True when `text`, read as JSON, nests containers deeper than `limit`. One pass that counts
 * brackets outside strings and stops at the first level past the limit, so it costs O(n) and no
 * stack whatever the input. It validates nothing else: malformed text is the parser's to refuse.
 *
 * Hand-rolled on purpose: the parsers at hand (V8's JSON.parse, secure-json-parse) have no depth
 * option, and the point is to measure before they run. Strings are skipped with `indexOf`, so a
 * long string costs what a native search costs (a 7 MB document of small records: about 20 ms).
 */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth > limit) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** The index of the quote closing the string opened at `open`; -1 when there is none. */
function closingQuote(text: string, open: number): number {
  let at = text.indexOf('"', open + 1);
  while (at !== -1) {
    // Escaped when an odd number of backslashes precede it. Each run is counted once.
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
    at = text.indexOf('"', at + 1);
  }
  return -1;
}
