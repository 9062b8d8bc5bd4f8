/**
 * Inferring a JSON Schema (2020-12) from data, for `get_schema`: what an agent needs to write a
 * query or a valid `value` without reading the whole context.
 */
import { isJsonObject, jsonTypeOf, type JsonSchema, type JsonTypeName, type JsonValue } from './json.ts';

export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/**
 * Arrays longer than this are sampled: this many items, evenly spaced, first and last included.
 * Objects with more keys than this (maps, then, see MAX_INFERRED_PROPERTIES) are sampled alike.
 */
export const MAX_SAMPLED_ITEMS = 1_000;
/** Objects (merged over samples) with more distinct keys than this are described as maps. */
export const MAX_INFERRED_PROPERTIES = 500;
/**
 * Keys and values read at most by one inference. Sampling bounds each array and object but not
 * their nesting, and inference costs about a microsecond a value on the event loop (a 12 MB context
 * of nested objects took 3.5 s). Past this many, values are not read (keys already read still
 * count) and the schema's root `description` says so.
 */
export const MAX_OBSERVED_VALUES = 50_000;

type ScalarType = Exclude<JsonTypeName, 'array' | 'object'>;

// What has been observed at one place in the data, across every sample that reached it.
interface Shape {
  scalars: Set<ScalarType>;
  object?: { count: number; sampled: boolean; properties: Map<string, { count: number; shape: Shape }> };
  array?: { items?: Shape; seenItems: number; totalItems: number };
}

// How many more keys and values an inference may read; `skipped` once some were left unread.
interface Reading {
  left: number;
  skipped: boolean;
}

/**
 * The JSON Schema 2020-12 of `value` (`$schema` set): types with integer told apart from number,
 * objects with `properties` and `required` (keys present in every sample), arrays with `items` merged
 * over their items (sampled beyond MAX_SAMPLED_ITEMS, noted in the array's `description`); from the
 * first MAX_OBSERVED_VALUES keys and values read, noted in the root `description` when there were more.
 */
export function inferSchema(value: JsonValue): JsonSchema {
  const shape = emptyShape();
  const reading: Reading = { left: MAX_OBSERVED_VALUES, skipped: false };
  observe(shape, value, reading);
  const schema: JsonSchema = { $schema: SCHEMA_DIALECT, ...render(shape) };
  if (reading.skipped) {
    const note = `Inferred from the first ${MAX_OBSERVED_VALUES} keys and values read; the rest was not read.`;
    schema.description = typeof schema.description === 'string' ? `${schema.description} ${note}` : note;
  }
  return schema;
}

function emptyShape(): Shape {
  return { scalars: new Set() };
}

function observe(shape: Shape, value: JsonValue, reading: Reading): void {
  if (Array.isArray(value)) {
    const array = (shape.array ??= { seenItems: 0, totalItems: 0 });
    array.totalItems += value.length;
    for (const index of sampleIndexes(value.length)) {
      if (reading.left <= 0) return void (reading.skipped = true);
      reading.left -= 1;
      array.items ??= emptyShape();
      observe(array.items, value[index] as JsonValue, reading);
      array.seenItems += 1;
    }
    return;
  }
  if (isJsonObject(value)) {
    if (reading.left <= 0) return void (reading.skipped = true);
    const object = (shape.object ??= { count: 0, sampled: false, properties: new Map() });
    object.count += 1;
    const keys = Object.keys(value);
    const sampled =
      keys.length > MAX_SAMPLED_ITEMS ? sampleIndexes(keys.length).map((i) => keys[i] as string) : keys;
    if (sampled !== keys) object.sampled = true;
    // Every (sampled) key first: keys decide properties, `required` and whether this is a map, and
    // cost little; then their values, while the budget lasts.
    const entries = sampled.map((key) => {
      let entry = object.properties.get(key);
      if (entry === undefined) {
        entry = { count: 0, shape: emptyShape() };
        object.properties.set(key, entry);
      }
      entry.count += 1;
      return entry;
    });
    reading.left -= entries.length;
    for (let i = 0; i < entries.length; i += 1) {
      if (reading.left <= 0) return void (reading.skipped = true);
      reading.left -= 1;
      observe((entries[i] as { shape: Shape }).shape, value[sampled[i] as string] as JsonValue, reading);
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
    for (const entry of object.properties.values()) absorbShape(values, entry.shape);
    const keys = object.sampled
      ? `more than ${MAX_SAMPLED_ITEMS} distinct keys (${object.properties.size} sampled)`
      : `${object.properties.size} distinct keys`;
    return {
      description: `A map with ${keys}; additionalProperties describes its values.`,
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

// Merges `from` into `into`, moving `from`'s subtrees instead of copying them: `from` is spent (each
// shape is rendered once, and a map's entries are rendered only through the merged shape). Copying
// made nested maps quadratic: every level copied everything below it again, so a 1.3 MB context of
// 60 nested maps took 19 s. Moved, each shape node is merged away at most once: linear overall.
function absorbShape(into: Shape, from: Shape): void {
  for (const type of from.scalars) into.scalars.add(type);
  if (from.object) {
    if (!into.object) into.object = from.object;
    else {
      const object = into.object;
      object.count += from.object.count;
      object.sampled ||= from.object.sampled;
      for (const [key, entry] of from.object.properties) {
        const target = object.properties.get(key);
        if (target === undefined) object.properties.set(key, entry);
        else {
          target.count += entry.count;
          absorbShape(target.shape, entry.shape);
        }
      }
    }
  }
  if (from.array) {
    if (!into.array) into.array = from.array;
    else {
      into.array.seenItems += from.array.seenItems;
      into.array.totalItems += from.array.totalItems;
      if (from.array.items) {
        if (into.array.items) absorbShape(into.array.items, from.array.items);
        else into.array.items = from.array.items;
      }
    }
  }
}
