/**
 * Deep freezing, for values shared by every caller and never changed once made. A frozen object is
 * also a promise to schema-validation.ts and adi-config.ts: they remember what they made of a frozen
 * schema or config by the object itself, without serialising it again. So freeze shared schemas and
 * configs with deepFreeze only: a shallow Object.freeze over children that still change would let
 * them answer for the object as it was.
 */

/**
 * Freezes `value` and everything inside it; answers `value`. An object frozen already is taken as
 * frozen all the way down (its children are not visited again).
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
