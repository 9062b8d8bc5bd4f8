// Pins inferSchema (get_schema): 2020-12 output with $schema, integer vs number, null, required as
// "present in every sample", arrays merging all their items recursively, type unions, and the
// bounds on work and size for huge arrays and map-like objects.
import { describe, expect, it } from 'vitest';
import { inferSchema, type JsonValue } from '../src/index.ts';
import { MAX_INFERRED_PROPERTIES, MAX_SAMPLED_ITEMS } from '../src/schema-inference.ts';
import { compileUserSchema } from '../src/schema-validation.ts';

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

describe('inferSchema', () => {
  it('types scalars, telling integer from number', () => {
    expect(inferSchema(1)).toEqual({ $schema: DIALECT, type: 'integer' });
    expect(inferSchema(1.5)).toEqual({ $schema: DIALECT, type: 'number' });
    expect(inferSchema('s')).toEqual({ $schema: DIALECT, type: 'string' });
    expect(inferSchema(false)).toEqual({ $schema: DIALECT, type: 'boolean' });
    expect(inferSchema(null)).toEqual({ $schema: DIALECT, type: 'null' });
  });

  it('describes an object with properties and every key required', () => {
    expect(inferSchema({ id: 1, name: 'a', nested: { ok: true } })).toEqual({
      $schema: DIALECT,
      type: 'object',
      properties: {
        id: { type: 'integer' },
        name: { type: 'string' },
        nested: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      },
      required: ['id', 'name', 'nested'],
    });
  });

  it('merges all array items: required only for keys in every item, types unioned, nested objects merged', () => {
    const rows: JsonValue = [
      { id: 1, price: 10, meta: { a: 1 }, note: 'x' },
      { id: 2, price: 10.5, meta: { a: 2, b: 'y' }, note: null },
      { id: 3, price: 7, meta: { a: 3 } },
    ];
    expect(inferSchema(rows)).toEqual({
      $schema: DIALECT,
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          price: { type: 'number' },
          meta: {
            type: 'object',
            properties: { a: { type: 'integer' }, b: { type: 'string' } },
            required: ['a'],
          },
          note: { type: ['string', 'null'] },
        },
        required: ['id', 'price', 'meta'],
      },
    });
  });

  it('unions incompatible item types in one type list, each keyword applying to its own type', () => {
    expect(inferSchema([1, 'a', { k: 1 }, [true], null])).toEqual({
      $schema: DIALECT,
      type: 'array',
      items: {
        type: ['object', 'array', 'string', 'integer', 'null'],
        properties: { k: { type: 'integer' } },
        required: ['k'],
        items: { type: 'boolean' },
      },
    });
  });

  it('merges items of nested arrays across all parents', () => {
    expect(inferSchema([{ tags: ['a'] }, { tags: [1] }, { tags: [] }])).toEqual({
      $schema: DIALECT,
      type: 'array',
      items: {
        type: 'object',
        properties: { tags: { type: 'array', items: { type: ['string', 'integer'] } } },
        required: ['tags'],
      },
    });
  });

  it('leaves items out for an empty array', () => {
    expect(inferSchema([])).toEqual({ $schema: DIALECT, type: 'array' });
  });

  it('produces schemas that ajv compiles and that accept the data they came from', () => {
    const data: JsonValue = {
      users: [
        { id: 1, roles: ['a'], profile: { age: 30 } },
        { id: 2, roles: [], profile: null },
      ],
      total: 2,
    };
    const schema = inferSchema(data);
    const validate = compileUserSchema(schema);
    expect(validate(data)).toBe(true);
    expect(validate({ users: [{ roles: [] }], total: 2 })).toBe(false);
  });

  it('samples arrays beyond MAX_SAMPLED_ITEMS evenly, first and last included, and says so', () => {
    const length = MAX_SAMPLED_ITEMS * 50;
    const rows: JsonValue[] = Array.from({ length }, (_, i) => ({ i }));
    rows[0] = { i: 0, first: true };
    rows[length - 1] = { i: length - 1, last: 'yes' };
    const schema = inferSchema(rows);
    expect(schema.description).toBe(
      `Item schema inferred from ${MAX_SAMPLED_ITEMS} evenly spaced samples of ${length} items.`,
    );
    expect(schema.items).toEqual({
      type: 'object',
      properties: { i: { type: 'integer' }, first: { type: 'boolean' }, last: { type: 'string' } },
      required: ['i'],
    });
  });

  it('describes an object with very many keys as a map of its values', () => {
    const map: Record<string, JsonValue> = {};
    for (let i = 0; i <= MAX_INFERRED_PROPERTIES; i += 1) map[`user_${i}`] = { name: `n${i}`, age: i };
    expect(inferSchema(map)).toEqual({
      $schema: DIALECT,
      type: 'object',
      description: `A map with ${MAX_INFERRED_PROPERTIES + 1} distinct keys; additionalProperties describes its values.`,
      additionalProperties: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' } },
        required: ['name', 'age'],
      },
    });
  });

  it('keeps a "__proto__" key of the data as a property', () => {
    const schema = inferSchema(JSON.parse('{"__proto__": 1}') as JsonValue);
    expect(Object.keys(schema.properties as object)).toEqual(['__proto__']);
    expect(schema.required).toEqual(['__proto__']);
  });
});
