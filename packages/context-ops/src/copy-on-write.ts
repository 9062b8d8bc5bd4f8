/**
 * Structural sharing for writes: only the containers on the path to the edit are copied (shallowly),
 * so the caller's context is never mutated and a small write into a large context stays cheap.
 */
import { isJsonObject, setOwn, type JsonObject, type JsonValue } from './json.ts';

export type JsonContainer = JsonObject | JsonValue[];

/**
 * Returns a new root in which the container at `tokens` is a fresh shallow copy handed to `edit`;
 * every container on the way is copied too, everything else is shared with `root`. The path must
 * already be known to resolve to a container (callers resolve first, for the error messages).
 */
export function editContainer(
  root: JsonValue,
  tokens: readonly string[],
  edit: (container: JsonContainer) => void,
): JsonValue {
  const copy = shallowCopy(root);
  const [head, ...rest] = tokens;
  if (head === undefined) {
    edit(copy);
    return copy;
  }
  setChild(copy, head, editContainer(getChild(copy, head), rest, edit));
  return copy;
}

/** Returns a new root with the node at `tokens` replaced by `value` (the whole root when `tokens` is empty). */
export function replaceAt(root: JsonValue, tokens: readonly string[], value: JsonValue): JsonValue {
  const last = tokens.at(-1);
  if (last === undefined) return value;
  return editContainer(root, tokens.slice(0, -1), (parent) => setChild(parent, last, value));
}

function shallowCopy(node: JsonValue): JsonContainer {
  if (Array.isArray(node)) return node.slice();
  if (isJsonObject(node)) return { ...node };
  // Unreachable when callers resolve first; failing loudly beats writing into a scalar.
  throw new TypeError('copy-on-write walked into a scalar');
}

function getChild(container: JsonContainer, token: string): JsonValue {
  const child = Array.isArray(container) ? container[Number(token)] : container[token];
  if (child === undefined) throw new TypeError(`copy-on-write found no child "${token}"`);
  return child;
}

/** Sets child `token` of a container (array tokens are already-validated indexes). */
export function setChild(container: JsonContainer, token: string, value: JsonValue): void {
  if (Array.isArray(container)) container[Number(token)] = value;
  else setOwn(container, token, value);
}
