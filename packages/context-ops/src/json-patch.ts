/**
 * The RFC 6902 primitives the write operations are built from (add, remove), applied with
 * copy-on-write and with errors that name the agent's argument.
 */
import { editContainer, setChild, type JsonContainer } from './copy-on-write.ts';
import { OpError } from './errors.ts';
import { describeType, isJsonObject, type JsonValue } from './json.ts';
import { formatPointer } from './pointer.ts';
import { parseArrayIndex, resolveTokens, type PointerSource } from './resolve.ts';

/** The container at `tokens`; NOT_FOUND when missing, VALIDATION_FAILED when it is a scalar. */
export function resolveContainer(
  root: JsonValue,
  tokens: readonly string[],
  source: PointerSource,
): JsonContainer {
  const node = resolveTokens(root, tokens, source);
  if (Array.isArray(node) || isJsonObject(node)) return node;
  const at = formatPointer(tokens);
  const where = at === '' ? 'the data' : `"${at}"`;
  throw new OpError(
    'VALIDATION_FAILED',
    `\`${source.argument}\` "${source.pointer}": ${where} is ${describeType(node)}, which cannot hold children`,
    { argument: source.argument, pointer: source.pointer, container: at },
  );
}

/** Inserts `value` at `index` of the array at `parentTokens` (0..length); NOT_FOUND past the end. */
export function insertIntoArray(
  root: JsonValue,
  parentTokens: readonly string[],
  length: number,
  index: number,
  value: JsonValue,
  source: PointerSource,
): { root: JsonValue; tokens: string[] } {
  if (index > length) {
    throw new OpError(
      'NOT_FOUND',
      `\`${source.argument}\` "${source.pointer}": index ${index} is past the end of an array of ${length} items (use 0 to ${length}, or append)`,
      { argument: source.argument, pointer: source.pointer, length },
    );
  }
  return {
    root: editContainer(root, parentTokens, (array) => (array as JsonValue[]).splice(index, 0, value)),
    tokens: [...parentTokens, String(index)],
  };
}

/**
 * RFC 6902 `add`: inserts into an array (last token an index or `-` to append) or sets an object
 * key, replacing what was there; returns the new root and the final tokens of the value.
 */
export function addAt(
  root: JsonValue,
  tokens: readonly string[],
  value: JsonValue,
  source: PointerSource,
): { root: JsonValue; tokens: string[] } {
  const last = tokens.at(-1);
  if (last === undefined) return { root: value, tokens: [] };
  const parentTokens = tokens.slice(0, -1);
  const parent = resolveContainer(root, parentTokens, source);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : parseArrayIndex(last, source);
    return insertIntoArray(root, parentTokens, parent.length, index, value, source);
  }
  return {
    root: editContainer(root, parentTokens, (object) => setChild(object, last, value)),
    tokens: [...tokens],
  };
}

/** RFC 6902 `remove` of a non-root node: returns the new root and the removed value. */
export function removeAt(
  root: JsonValue,
  tokens: readonly string[],
  source: PointerSource,
): { root: JsonValue; removed: JsonValue } {
  const removed = resolveTokens(root, tokens, source);
  const last = tokens.at(-1);
  if (last === undefined) throw new TypeError('removeAt needs a non-root pointer');
  const next = editContainer(root, tokens.slice(0, -1), (parent) => {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  });
  return { root: next, removed };
}
