/**
 * How large JSON is, as the UTF-8 length of its compact text (what `JSON.stringify` writes), and
 * how much a write changed that: a store caps a table's size by keeping the number and adding each
 * write's difference, instead of serialising the whole table again. Writes copy on write (only the
 * containers on the path to an edit are new), so comparing the old and new context by reference,
 * as diffChanges does, costs what the write touched: the members of the containers it replaced and
 * the values it added or removed, never the unchanged rest.
 */
import { sharedEnds } from './changes.ts';
import { isJsonObject, type JsonObject, type JsonValue } from './json.ts';
import { utf8Length } from './serialize.ts';

/** The UTF-8 length of `JSON.stringify(value)`. */
export function jsonBytes(value: JsonValue): number {
  return utf8Length(JSON.stringify(value));
}

/** `"key":value` in an object. */
function memberBytes(key: string, value: JsonValue): number {
  return utf8Length(JSON.stringify(key)) + 1 + jsonBytes(value);
}

/** The commas between `count` members or items. */
function commas(count: number): number {
  return count > 0 ? count - 1 : 0;
}

/**
 * `jsonBytes(after) - jsonBytes(before)`, computed from what differs between them: subtrees shared
 * by reference count nothing (a copied but equal subtree is measured whole, as diffChanges compares
 * it all the way down).
 */
export function jsonBytesDelta(before: JsonValue, after: JsonValue): number {
  if (before === after) return 0;
  if (Array.isArray(before) && Array.isArray(after)) return arrayDelta(before, after);
  if (isJsonObject(before) && isJsonObject(after)) return objectDelta(before, after);
  return jsonBytes(after) - jsonBytes(before);
}

function objectDelta(before: JsonObject, after: JsonObject): number {
  let delta = 0;
  const beforeKeys = Object.keys(before);
  for (const key of beforeKeys) {
    if (!Object.hasOwn(after, key)) delta -= memberBytes(key, before[key] as JsonValue);
  }
  const afterKeys = Object.keys(after);
  for (const key of afterKeys) {
    const next = after[key] as JsonValue;
    if (!Object.hasOwn(before, key)) delta += memberBytes(key, next);
    else delta += jsonBytesDelta(before[key] as JsonValue, next);
  }
  return delta + commas(afterKeys.length) - commas(beforeKeys.length);
}

/** Items shared at both ends count nothing; the middle item by item when it kept its length. */
function arrayDelta(before: JsonValue[], after: JsonValue[]): number {
  const { start, endBefore, endAfter } = sharedEnds(before, after);
  let delta = commas(after.length) - commas(before.length);
  if (endBefore - start === endAfter - start) {
    for (let i = start; i < endBefore; i += 1) {
      delta += jsonBytesDelta(before[i] as JsonValue, after[i] as JsonValue);
    }
    return delta;
  }
  for (let i = start; i < endBefore; i += 1) delta -= jsonBytes(before[i] as JsonValue);
  for (let i = start; i < endAfter; i += 1) delta += jsonBytes(after[i] as JsonValue);
  return delta;
}
