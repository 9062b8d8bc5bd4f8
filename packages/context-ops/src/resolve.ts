/**
 * Finding a node under the context by pointer tokens, with errors that tell the agent which part of
 * its path did not exist.
 */
import { OpError } from './errors.ts';
import { describeType, isJsonObject, ownChild, type JsonValue } from './json.ts';
import { formatPointer } from './pointer.ts';

/** Which argument a pointer came from and its text, for error messages. */
export interface PointerSource {
  argument: string;
  pointer: string;
}

/** True when `token` is a canonical RFC 6901 array index: digits, no sign, no leading zero. */
export function isArrayIndexToken(token: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(token);
}

/** The canonical array index a token names; anything else (`01`, `-1`, `1.0`, `-`) is refused. */
export function parseArrayIndex(token: string, source: PointerSource): number {
  if (isArrayIndexToken(token)) return Number(token);
  if (token === '-') {
    throw new OpError(
      'VALIDATION_FAILED',
      `\`${source.argument}\` "${source.pointer}": "-" (the end of an array) can only be the last token of a target path that appends`,
      { argument: source.argument, pointer: source.pointer, token, reason: 'append_token' },
    );
  }
  throw new OpError(
    'VALIDATION_FAILED',
    `\`${source.argument}\` "${source.pointer}": "${token}" is not an array index (use 0, 1, 2, ... without leading zeros)`,
    { argument: source.argument, pointer: source.pointer, token, reason: 'bad_array_index' },
  );
}

/**
 * The node at `tokens` under `root`; throws NOT_FOUND (missing key, index out of range, or a scalar
 * on the way) with the pointer in details.
 */
export function resolveTokens(root: JsonValue, tokens: readonly string[], source: PointerSource): JsonValue {
  let node: JsonValue = root;
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i] as string;
    const next: JsonValue | undefined = childAt(node, token, source);
    if (next === undefined) throw notFound(node, tokens.slice(0, i), token, source);
    node = next;
  }
  return node;
}

// Array tokens must be canonical; a missing child (or a scalar parent) gives undefined.
function childAt(node: JsonValue, token: string, source: PointerSource): JsonValue | undefined {
  if (Array.isArray(node)) return node[parseArrayIndex(token, source)];
  if (isJsonObject(node)) return ownChild(node, token);
  return undefined;
}

function notFound(parent: JsonValue, parentTokens: readonly string[], token: string, source: PointerSource) {
  const parentPointer = formatPointer(parentTokens);
  const where = parentPointer === '' ? 'the context' : `"${parentPointer}"`;
  let reason: string;
  if (Array.isArray(parent))
    reason = `${where} is an array of ${parent.length} items; index ${token} is out of range`;
  else if (isJsonObject(parent)) reason = `${where} has no key "${token}"`;
  else reason = `${where} is ${describeType(parent)}, which has no children`;
  return new OpError('NOT_FOUND', `\`${source.argument}\` "${source.pointer}" not found: ${reason}`, {
    argument: source.argument,
    pointer: source.pointer,
    missing_at: formatPointer([...parentTokens, token]),
  });
}
