/**
 * Inferring a JSON Schema (2020-12) from data, for `get_schema`: what an agent needs to write a
 * query or a valid `value` without reading the whole context.
 */
import { isJsonObject, jsonTypeOf, type JsonSchema, type JsonTypeName, type JsonValue } from './json.ts';

export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** Arrays longer than this are sampled: this many items, evenly spaced, first and last included. */
export const MAX_SAMPLED_ITEMS = 1_000;
/** Objects (merged over samples) with more distinct keys than this are described as maps. */
export const MAX_INFERRED_PROPERTIES = 500;

type ScalarType = Exclude<JsonTypeName, 'array' | 'object'>;

// What has been observed at one place in the data, across every sample that reached it.
interface Shape {
  scalars: Set<ScalarType>;
  object?: { count: number; properties: Map<string, { count: number; shape: Shape }> };
  array?: { items?: Shape; seenItems: number; totalItems: number };
}

/**
 * The JSON Schema 2020-12 of `value` (`$schema` set): types with integer told apart from number,
 * objects with `properties` and `required` (keys present in every sample), arrays with `items` merged
 * over their items (sampled beyond MAX_SAMPLED_ITEMS, noted in the array's `description`).
 */
export function inferSchema(value: JsonValue): JsonSchema {
  const shape = emptyShape();
  observe(shape, value);
  return { $schema: SCHEMA_DIALECT, ...render(shape) };
}

function emptyShape(): Shape {
  return { scalars: new Set() };
}

function observe(shape: Shape, value: JsonValue): void {
  if (Array.isArray(value)) {
    const array = (shape.array ??= { seenItems: 0, totalItems: 0 });
    array.totalItems += value.length;
    for (const index of sampleIndexes(value.length)) {
      array.items ??= emptyShape();
      observe(array.items, value[index] as JsonValue);
      array.seenItems += 1;
    }
    return;
  }
  if (isJsonObject(value)) {
    const object = (shape.object ??= { count: 0, properties: new Map() });
    object.count += 1;
    for (const key of Object.keys(value)) {
      let entry = object.properties.get(key);
      if (entry === undefined) {
        entry = { count: 0, shape: emptyShape() };
        object.properties.set(key, entry);
      }
      entry.count += 1;
      observe(entry.shape, value[key] as JsonValue);
    }
    return;
  }
  shape.scalars.add(jsonTypeOf(value) as ScalarType);
}

function sampleIndexes(length: number): number[] {
  if (length <= MAX_SAMPLED_ITEMS) return Array.from({ length }, (_, i) => i);
  const step = (length - 1) / (MAX_SAMPLED_ITEMS - 1);
  return Array.from({ length: MAX_SAMPLED_ITEMS }, (_, i) => Math.round(i * step));
}

// Several types become one `type: [...]` rather than an `anyOf`: `properties`, `required` and
// `items` only constrain instances of their own type, so the merged schema stays exact and short.
function render(shape: Shape): JsonSchema {
  const types: JsonTypeName[] = [];
  if (shape.object) types.push('object');
  if (shape.array) types.push('array');
  for (const type of ['string', 'number', 'integer', 'boolean', 'null'] as const) {
    // integer is a subset of number: when both were seen, number alone describes them.
    if (type === 'integer' && shape.scalars.has('number')) continue;
    if (shape.scalars.has(type)) types.push(type);
  }
  if (types.length === 0) return {};
  const schema: JsonSchema = { type: types.length === 1 ? types[0] : types };
  if (shape.object) Object.assign(schema, renderObject(shape.object));
  if (shape.array) Object.assign(schema, renderArray(shape.array));
  return schema;
}

function renderObject(object: NonNullable<Shape['object']>): JsonSchema {
  if (object.properties.size > MAX_INFERRED_PROPERTIES) {
    // So many distinct keys means a map keyed by ids or names, not a record: one value schema tells
    // an agent more than thousands of properties, and keeps the answer within the result limit.
    const values = emptyShape();
    for (const entry of object.properties.values()) mergeShape(values, entry.shape);
    return {
      description: `A map with ${object.properties.size} distinct keys; additionalProperties describes its values.`,
      additionalProperties: render(values),
    };
  }
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [key, entry] of object.properties) {
    // defineProperty: a "__proto__" key in the data must become a property, not a prototype.
    Object.defineProperty(properties, key, {
      value: render(entry.shape),
      enumerable: true,
      writable: true,
      configurable: true,
    });
    if (entry.count === object.count) required.push(key);
  }
  return required.length > 0 ? { properties, required } : { properties };
}

function renderArray(array: NonNullable<Shape['array']>): JsonSchema {
  const schema: JsonSchema = {};
  if (array.items) schema.items = render(array.items);
  if (array.seenItems < array.totalItems) {
    schema.description = `Item schema inferred from ${array.seenItems} evenly spaced samples of ${array.totalItems} items.`;
  }
  return schema;
}

function mergeShape(into: Shape, from: Shape): void {
  for (const type of from.scalars) into.scalars.add(type);
  if (from.object) {
    const object = (into.object ??= { count: 0, properties: new Map() });
    object.count += from.object.count;
    for (const [key, entry] of from.object.properties) {
      const target = object.properties.get(key);
      if (target === undefined) {
        object.properties.set(key, { count: entry.count, shape: cloneShape(entry.shape) });
      } else {
        target.count += entry.count;
        mergeShape(target.shape, entry.shape);
      }
    }
  }
  if (from.array) {
    const array = (into.array ??= { seenItems: 0, totalItems: 0 });
    array.seenItems += from.array.seenItems;
    array.totalItems += from.array.totalItems;
    if (from.array.items) mergeShape((array.items ??= emptyShape()), from.array.items);
  }
}

function cloneShape(shape: Shape): Shape {
  const copy = emptyShape();
  mergeShape(copy, shape);
  return copy;
}
