/**
 * The JSON data model the engine works on, and the few safe accessors every operation shares.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
export type JsonObject = { [k: string]: JsonValue };
export type JsonSchema = Record<string, unknown>;

/** JSON type names as JSON Schema spells them, `integer` split out of `number`. */
export type JsonTypeName = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

/** True for a JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON Schema type name of a JSON value (`integer` for whole numbers). */
export function jsonTypeOf(value: JsonValue): JsonTypeName {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'boolean':
      return 'boolean';
    case 'number':
      return Number.isInteger(value) ? 'integer' : 'number';
    case 'string':
      return 'string';
    default:
      return 'object';
  }
}

/** The own child `key` of an object, or undefined; inherited members (`constructor`, ...) never count. */
export function ownChild(object: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** Sets an own data property; plain assignment of `__proto__` would swap the prototype instead. */
export function setOwn(object: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** "a string", "an integer", "null": for messages about a node's kind. */
export function describeType(value: JsonValue): string {
  const type = jsonTypeOf(value);
  if (type === 'null') return 'null';
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
