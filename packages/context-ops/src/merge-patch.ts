/**
 * JSON Merge Patch (RFC 7396), for `update` with `merge: true`.
 */
import { isJsonObject, ownChild, setOwn, type JsonObject, type JsonValue } from './json.ts';

/**
 * `target` with `patch` merged in per RFC 7396 (null deletes a key, objects merge, anything else
 * replaces); `target` is not mutated and untouched subtrees are shared.
 */
export function mergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return patch;
  const result: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const key of Object.keys(patch)) {
    const value = patch[key] as JsonValue;
    if (value === null) delete result[key];
    else setOwn(result, key, mergePatch(ownChild(result, key) ?? null, value));
  }
  return result;
}
