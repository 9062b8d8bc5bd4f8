// Pins how tool schemas are read (compileToolSchema): each JSON Schema dialect a tool may declare
// with `$schema` means what its own specification says, keywords nobody defined are ignored, and a
// dialect Bindery does not know is refused with a message naming it; and a binding may narrow such
// a schema (checkSchemaNarrowing), local `$ref`s included.
import { describe, expect, it } from 'vitest';
import {
  checkSchemaNarrowing,
  compileToolSchema,
  compileUserSchema,
  OpError,
  schemaDialect,
} from '../src/index.ts';
import type { JsonSchema } from '../src/json.ts';

const URIS = {
  'draft-04': 'http://json-schema.org/draft-04/schema#',
  'draft-06': 'http://json-schema.org/draft-06/schema#',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
} as const;

describe('tool schemas in every dialect', () => {
  it('reads each dialect, with vendor keywords and unknown formats ignored', () => {
    for (const [dialect, uri] of Object.entries(URIS)) {
      const schema = {
        $schema: uri,
        type: 'object',
        properties: {
          id: { type: 'string', 'x-vendor': true, format: 'our-own' },
          n: { type: 'integer', maximum: 5 },
        },
        required: ['id'],
        additionalProperties: false,
        'x-generator': 'some-tool',
      } as JsonSchema;
      expect(schemaDialect(schema)).toBe(dialect);
      const validate = compileToolSchema(schema);
      expect(validate({ id: 'a', n: 5 })).toBe(true);
      expect(validate({ id: 'a', n: 6 })).toBe(false);
      expect(validate({ n: 1 })).toBe(false);
      expect(validate({ id: 'a', other: 1 })).toBe(false);
      // A user's own schema stays strict: the same vendor keyword is a mistake there.
      expect(() => compileUserSchema({ ...schema, $schema: undefined } as unknown as JsonSchema)).toThrow();
    }
  });

  it('reads the same URI written with https, http or without its empty fragment', () => {
    expect(schemaDialect({ $schema: 'https://json-schema.org/draft-07/schema' } as JsonSchema)).toBe(
      'draft-07',
    );
    expect(schemaDialect({ $schema: 'http://json-schema.org/draft/2020-12/schema#' } as JsonSchema)).toBe(
      '2020-12',
    );
    expect(
      compileToolSchema({ $schema: 'https://json-schema.org/draft-07/schema', type: 'object' } as JsonSchema)(
        {},
      ),
    ).toBe(true);
  });

  it('gives each dialect its own meaning', () => {
    // draft-04: a boolean exclusiveMaximum makes maximum exclusive.
    const below = compileToolSchema({
      $schema: URIS['draft-04'],
      type: 'object',
      properties: { n: { type: 'number', maximum: 10, exclusiveMaximum: true } },
    } as JsonSchema);
    expect(below({ n: 9.9 })).toBe(true);
    expect(below({ n: 10 })).toBe(false);
    // In draft-07 the same keyword must be a number: the schema is not valid in its dialect.
    expect(() =>
      compileToolSchema({
        $schema: URIS['draft-07'],
        type: 'object',
        properties: { n: { type: 'number', exclusiveMaximum: true } },
      } as JsonSchema),
    ).toThrow();
    // 2019-09: unevaluatedProperties; draft-07: definitions and $ref.
    const sum = compileToolSchema({
      $schema: URIS['2019-09'],
      type: 'object',
      $defs: { n: { type: 'number' } },
      properties: { a: { $ref: '#/$defs/n' } },
      unevaluatedProperties: false,
    } as JsonSchema);
    expect(sum({ a: 1 })).toBe(true);
    expect(sum({ a: 1, b: 2 })).toBe(false);
    expect(sum({ a: 'x' })).toBe(false);
    // 2020-12 (also what no $schema means): $anchor, if/then/else, dependentRequired.
    const contact = compileToolSchema({
      type: 'object',
      $defs: { phone: { $anchor: 'phoneDef', type: 'string' } },
      properties: { via: { enum: ['phone', 'email'] }, phone: { $ref: '#phoneDef' } },
      if: { properties: { via: { const: 'phone' } }, required: ['via'] },
      then: { required: ['phone'] },
    } as JsonSchema);
    expect(contact({ via: 'phone', phone: '1' })).toBe(true);
    expect(contact({ via: 'phone' })).toBe(false);
    expect(contact({ via: 'email' })).toBe(true);
  });

  it('resolves references to the whole schema and to its own $id', () => {
    const own = {
      $id: 'https://example.test/s.json',
      type: 'object',
      $defs: { x: { type: 'string' } },
      properties: {
        a: { $ref: 'https://example.test/s.json#/$defs/x' },
        b: { $ref: 's.json#/$defs/x' },
        c: { $ref: '#' },
      },
    } as JsonSchema;
    const validate = compileToolSchema(own);
    expect(validate({ a: 'x', b: 'y', c: { a: 'z' } })).toBe(true);
    expect(validate({ c: { a: 1 } })).toBe(false);
    // Another schema naming the same id does not clash with it.
    const other = compileToolSchema({
      $id: 'https://example.test/s.json',
      type: 'object',
      properties: { z: { type: 'integer' } },
    } as JsonSchema);
    expect(other({ z: 'no' })).toBe(false);
    // A tree: its children are the whole schema again (a user's schema too).
    const tree = compileUserSchema({
      type: 'object',
      properties: { kids: { type: 'array', items: { $ref: '#' } } },
    } as JsonSchema);
    expect(tree({ kids: [{ kids: [] }] })).toBe(true);
    expect(tree({ kids: [1] })).toBe(false);
  });

  it('refuses a dialect it does not know, naming it', () => {
    let thrown: unknown;
    try {
      compileToolSchema({ $schema: 'https://example.test/mine', type: 'object' } as JsonSchema);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OpError);
    expect((thrown as OpError).message).toContain(
      '"https://example.test/mine" is not a JSON Schema dialect Bindery knows',
    );
  });
});

describe('narrowing a tool schema of another dialect', () => {
  const canonical = {
    $schema: URIS['draft-07'],
    type: 'object',
    definitions: { id: { type: 'string', pattern: '^[a-z]+$' } },
    properties: { id: { $ref: '#/definitions/id' }, limit: { type: 'integer', minimum: 1, maximum: 50 } },
    required: ['id'],
    'x-generator': 'zod-to-json-schema',
  } as JsonSchema;

  it('takes a narrower override, its referenced parts compared as if written out', () => {
    expect(() =>
      checkSchemaNarrowing(canonical, {
        $schema: URIS['draft-07'],
        type: 'object',
        properties: {
          id: { type: 'string', pattern: '^[a-z]+$', maxLength: 8 },
          limit: { type: 'integer', minimum: 1, maximum: 10 },
        },
        required: ['id'],
      } as JsonSchema),
    ).not.toThrow();
    expect(() =>
      checkSchemaNarrowing(canonical, {
        type: 'object',
        properties: { id: { enum: ['abc', 'def'] } },
        required: ['id'],
      } as JsonSchema),
    ).not.toThrow();
  });

  it('refuses a wider one, naming where', () => {
    expect(() =>
      checkSchemaNarrowing(canonical, {
        type: 'object',
        properties: { id: { type: 'string', pattern: '^[a-z]+$' }, limit: { type: 'integer', maximum: 99 } },
        required: ['id'],
      } as JsonSchema),
    ).toThrow(/limit/);
    // An enum value the referenced definition refuses.
    expect(() =>
      checkSchemaNarrowing(canonical, {
        type: 'object',
        properties: { id: { enum: ['abc', 'ABC'] } },
        required: ['id'],
      } as JsonSchema),
    ).toThrow(/"ABC" is not accepted by the canonical schema/);
  });

  it('says when the tool’s own schema cannot be used', () => {
    expect(() =>
      checkSchemaNarrowing(
        { $schema: 'https://example.test/mine', type: 'object' } as JsonSchema,
        {
          type: 'object',
        } as JsonSchema,
      ),
    ).toThrow(/cannot narrow the tool's own schema, which Bindery cannot use/);
  });

  it('leaves data alone and survives a malformed reference', () => {
    const odd = {
      type: 'object',
      properties: {
        kind: { const: { $ref: '#/%' } },
        mode: { type: 'string', default: 'a', enum: ['a', 'b'] },
      },
    } as JsonSchema;
    // The const's value is data: matched as written, never taken for a reference.
    expect(() =>
      checkSchemaNarrowing(odd, {
        type: 'object',
        properties: { kind: { const: { $ref: '#/%' } }, mode: { enum: ['a'] } },
      } as JsonSchema),
    ).not.toThrow();
    expect(() =>
      checkSchemaNarrowing(odd, {
        type: 'object',
        properties: { kind: { const: { $ref: '#/other' } } },
      } as JsonSchema),
    ).toThrow(/is not accepted by the canonical schema/);
  });

  it('stays bounded when large parts are referred to many times', () => {
    const big = 'x'.repeat(100_000);
    const schema = {
      type: 'object',
      $defs: { part: { type: 'string', description: big } },
      properties: Object.fromEntries(
        Array.from({ length: 200 }, (_, i) => [`p${i}`, { $ref: '#/$defs/part' }]),
      ),
    } as JsonSchema;
    // Written out, 20 MB: past its budget the rest is read as any value (the call-time check judges).
    expect(() =>
      checkSchemaNarrowing(schema, {
        type: 'object',
        properties: { p199: { type: 'string', enum: ['a'] } },
      } as JsonSchema),
    ).not.toThrow();
  });

  it('stays bounded on a schema that refers to itself many times', () => {
    const selfish = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, { $ref: '#' }])),
    } as JsonSchema;
    // Written out in full the copy would hold 8^16 nodes: the test's own timeout would end it.
    expect(() =>
      checkSchemaNarrowing(selfish, { type: 'object', properties: { p0: { type: 'object' } } } as JsonSchema),
    ).not.toThrow();
  });
});
