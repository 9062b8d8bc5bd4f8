/**
 * JMESPath `==` with a budget. The library's deep equality walks both values in full, and values
 * built by a query can share subtrees (`[@, @]` nested thirty times is a billion leaves in a few
 * hundred bytes), so each pair of nodes compared is one step of the meter.
 */
import type { Meter } from './meter.ts';

/** Deep equality of two JSON values, as the library's strictDeepEqual, one step per pair compared. */
export function deepEqual(first: unknown, second: unknown, meter: Meter): boolean {
  meter.step();
  if (first === second) return true;
  if (typeof first !== typeof second || typeof first !== 'object' || first === null || second === null) {
    return false;
  }
  if (Array.isArray(first) || Array.isArray(second)) {
    if (!Array.isArray(first) || !Array.isArray(second) || first.length !== second.length) return false;
    for (let i = 0; i < first.length; i += 1) {
      if (!deepEqual(first[i], second[i], meter)) return false;
    }
    return true;
  }
  const a = first as Record<string, unknown>;
  const b = second as Record<string, unknown>;
  const keys = Object.keys(a);
  const otherKeys = Object.keys(b).length;
  meter.step(keys.length + otherKeys);
  if (keys.length !== otherKeys) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !deepEqual(a[key], b[key], meter)) return false;
  }
  return true;
}
