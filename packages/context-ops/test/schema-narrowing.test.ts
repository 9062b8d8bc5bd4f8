// Pins checkSchemaNarrowing: which input-schema overrides a binding may use (narrower: fewer
// properties, enums, consts, tighter bounds, defaults inside both schemas) and the exact message,
// naming the keyword path, for each kind of override that would accept more than the canonical one.
import { OPERATION_TYPES } from '@bindery/contracts';
import { describe, expect, it } from 'vitest';
import { checkSchemaNarrowing, OPERATIONS, type JsonSchema } from '../src/index.ts';
import { opError } from './fixtures.ts';

const preview = OPERATIONS.preview.inputSchema;
const select = OPERATIONS.select.inputSchema;
const update = OPERATIONS.update.inputSchema;

function refusal(canonical: JsonSchema, override: JsonSchema): { message: string; field: unknown } {
  const error = opError(() => checkSchemaNarrowing(canonical, override));
  expect(error.code).toBe('VALIDATION_FAILED');
  return { message: error.message, field: error.details?.field };
}

describe('accepted overrides', () => {
  it.each(OPERATION_TYPES)('accepts the canonical %s schema as its own override', (op) => {
    const canonical = OPERATIONS[op].inputSchema;
    expect(() => checkSchemaNarrowing(canonical, structuredClone(canonical))).not.toThrow();
  });

  it('accepts dropping optional properties, with or without additionalProperties: false', () => {
    expect(() => checkSchemaNarrowing(preview, { type: 'object', properties: {} })).not.toThrow();
    expect(() =>
      checkSchemaNarrowing(preview, {
        type: 'object',
        properties: { offset: { type: 'integer', minimum: 0, description: 'Skip this many.' } },
        additionalProperties: false,
      }),
    ).not.toThrow();
  });

  it('accepts tighter bounds, a default inside them, and making an optional property required', () => {
    expect(() =>
      checkSchemaNarrowing(preview, {
        type: 'object',
        properties: {
          limit: { type: 'integer', minimum: 5, maximum: 20, default: 10, description: 'Page size.' },
        },
        required: ['limit'],
      }),
    ).not.toThrow();
  });

  it('accepts enums and consts whose values the canonical schema accepts', () => {
    expect(() =>
      checkSchemaNarrowing(OPERATIONS.query.inputSchema, {
        type: 'object',
        properties: {
          query: { enum: ['length(@)', 'customers[].id'], description: 'One of two saved queries.' },
        },
        required: ['query'],
      }),
    ).not.toThrow();
    // A const on an optional property with a canonical default needs its own default, or `required`.
    for (const [path, required] of [
      [{ const: '/customers', default: '/customers' }, ['value']],
      [{ const: '/customers' }, ['value', 'path']],
    ] as const) {
      expect(() =>
        checkSchemaNarrowing(OPERATIONS.create.inputSchema, {
          type: 'object',
          properties: { path, value: {} },
          required: [...required],
        }),
      ).not.toThrow();
    }
  });

  it('accepts narrowing array items recursively, and giving the untyped `value` a shape', () => {
    expect(() =>
      checkSchemaNarrowing(select, {
        type: 'object',
        properties: {
          keys: { type: 'array', items: { type: 'string', pattern: '^c_' }, minItems: 1, maxItems: 10 },
        },
        required: ['keys'],
      }),
    ).not.toThrow();
    expect(() =>
      checkSchemaNarrowing(update, {
        type: 'object',
        properties: {
          path: { type: 'string', enum: ['/status'] },
          value: { type: 'string', enum: ['open', 'closed'] },
          merge: { type: 'boolean', const: false },
        },
        required: ['path', 'value'],
      }),
    ).not.toThrow();
  });

  it('accepts integer where the canonical type is number, and an exclusive bound at the same value', () => {
    const canonical = {
      type: 'object',
      properties: { x: { type: 'number', minimum: 0 } },
      additionalProperties: false,
    };
    expect(() =>
      checkSchemaNarrowing(canonical, {
        type: 'object',
        properties: { x: { type: 'integer', exclusiveMinimum: 0 } },
      }),
    ).not.toThrow();
  });
});

describe('refused overrides name the offending keyword', () => {
  it('refuses a looser maximum', () => {
    expect(
      refusal(preview, {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: 5000 } },
      }),
    ).toEqual({
      message: 'input_schema.properties.limit.maximum 5000 is looser than the canonical maximum 1000',
      field: 'input_schema.properties.limit.maximum',
    });
  });

  it('refuses a looser minimum, and an inclusive bound where the canonical one is exclusive', () => {
    expect(
      refusal(preview, { type: 'object', properties: { offset: { type: 'integer', minimum: -1 } } }).message,
    ).toBe('input_schema.properties.offset.minimum -1 is looser than the canonical minimum 0');
    const canonical = { type: 'object', properties: { x: { type: 'number', exclusiveMinimum: 0 } } };
    expect(
      refusal(canonical, { type: 'object', properties: { x: { type: 'number', minimum: 0 } } }).message,
    ).toBe('input_schema.properties.x.minimum 0 is looser than the canonical exclusiveMinimum 0');
  });

  it('refuses dropping a canonical bound', () => {
    expect(
      refusal(preview, { type: 'object', properties: { limit: { type: 'integer', minimum: 1 } } }).message,
    ).toBe(
      'input_schema.properties.limit.maximum is missing: the canonical maximum is 1000 and an override may only keep or tighten it',
    );
  });

  it('refuses a property the canonical schema does not have', () => {
    expect(refusal(preview, { type: 'object', properties: { page: { type: 'integer' } } })).toEqual({
      message:
        'input_schema.properties.page is not a property of the canonical schema (it has: offset, limit)',
      field: 'input_schema.properties.page',
    });
  });

  it('refuses dropping a required property, or leaving it out of required', () => {
    expect(refusal(select, { type: 'object', properties: {} }).message).toBe(
      'input_schema.properties.keys is required by the canonical schema and cannot be dropped',
    );
    const keys = OPERATIONS.select.inputSchema.properties as Record<string, JsonSchema>;
    expect(
      refusal(select, { type: 'object', properties: { keys: structuredClone(keys.keys as JsonSchema) } }),
    ).toEqual({
      message: 'input_schema.required must include "keys", which the canonical schema requires',
      field: 'input_schema.required',
    });
  });

  it('refuses a required entry the override does not declare', () => {
    expect(refusal(preview, { type: 'object', properties: {}, required: ['offset'] }).message).toBe(
      'input_schema.required lists "offset", which is not among input_schema.properties',
    );
  });

  it('refuses a wider or missing type', () => {
    expect(
      refusal(update, {
        ...structuredClone(update),
        properties: { ...(update.properties as object), merge: { type: 'string' } },
      }).message,
    ).toBe('input_schema.properties.merge.type "string" is not allowed by the canonical type "boolean"');
    expect(
      refusal(preview, { type: 'object', properties: { offset: { type: 'number', minimum: 0 } } }).message,
    ).toBe('input_schema.properties.offset.type "number" is not allowed by the canonical type "integer"');
    expect(
      refusal(preview, { type: 'object', properties: { offset: { description: 'Skip.' } } }).message,
    ).toBe(
      'input_schema.properties.offset.type is missing: the canonical type is "integer" and an override may only narrow it',
    );
    expect(
      refusal(select, {
        type: 'object',
        properties: {
          keys: { type: 'array', items: { type: ['string', 'boolean'] }, minItems: 1, maxItems: 5 },
        },
        required: ['keys'],
      }).message,
    ).toBe(
      'input_schema.properties.keys.items.type "boolean" is not allowed by the canonical type ["string","integer"]',
    );
  });

  it('refuses enum or const values the canonical schema would not accept', () => {
    expect(refusal(preview, { type: 'object', properties: { limit: { enum: [10, 5000] } } })).toEqual({
      message:
        'input_schema.properties.limit.enum[1] 5000 is not accepted by the canonical schema: value must be <= 1000',
      field: 'input_schema.properties.limit.enum',
    });
    expect(
      refusal(update, {
        type: 'object',
        properties: { path: { type: 'string' }, value: {}, merge: { const: 'yes' } },
        required: ['path', 'value'],
      }).message,
    ).toBe(
      'input_schema.properties.merge.const "yes" is not accepted by the canonical schema: value must be boolean',
    );
  });

  it('refuses dropping a canonical enum', () => {
    const canonical = { type: 'object', properties: { mode: { type: 'string', enum: ['a', 'b'] } } };
    expect(refusal(canonical, { type: 'object', properties: { mode: { type: 'string' } } }).message).toBe(
      'input_schema.properties.mode must keep an enum or const: the canonical schema only accepts listed values',
    );
  });

  it('refuses a default outside the canonical schema or outside the override itself', () => {
    expect(
      refusal(preview, {
        type: 'object',
        properties: { offset: { type: 'integer', minimum: 0, default: -1 } },
      }).message,
    ).toBe(
      'input_schema.properties.offset.default -1 is not accepted by the canonical schema: value must be >= 0',
    );
    expect(
      refusal(preview, {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 500 } },
      }).message,
    ).toBe(
      'input_schema.properties.limit.default 500 does not satisfy the override itself: value must be <= 100',
    );
  });

  it('refuses tightening a bound below the canonical default without giving a default of its own', () => {
    expect(
      refusal(preview, {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: 20 } },
      }),
    ).toEqual({
      message:
        'input_schema.properties.limit.default is missing: the canonical default 50 is outside this override, so give one it accepts or make the property required',
      field: 'input_schema.properties.limit.default',
    });
    expect(
      refusal(OPERATIONS.create.inputSchema, {
        type: 'object',
        properties: { path: { const: '/customers' }, value: {} },
        required: ['value'],
      }).field,
    ).toBe('input_schema.properties.path.default');
  });

  it('refuses array bounds and items that are looser or missing', () => {
    const keys = (items: JsonSchema | undefined, minItems: number) => ({
      type: 'object',
      properties: { keys: { type: 'array', ...(items ? { items } : {}), minItems, maxItems: 10 } },
      required: ['keys'],
    });
    expect(refusal(select, keys({ type: 'string' }, 0)).message).toBe(
      'input_schema.properties.keys.minItems 0 is looser than the canonical minItems 1',
    );
    expect(refusal(select, keys(undefined, 1)).message).toBe(
      'input_schema.properties.keys.items is missing: the canonical schema constrains the items',
    );
  });

  it('refuses changing a canonical pattern', () => {
    const canonical = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } } };
    expect(
      refusal(canonical, { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } } })
        .message,
    ).toBe('input_schema.properties.code.pattern must stay "^[A-Z]{3}$" as in the canonical schema');
  });

  it('refuses additionalProperties other than false', () => {
    expect(refusal(preview, { type: 'object', properties: {}, additionalProperties: true })).toEqual({
      message:
        'input_schema.additionalProperties must be false (or left out): the canonical schema accepts no other properties',
      field: 'input_schema.additionalProperties',
    });
  });

  it('refuses a root that is not type object', () => {
    expect(refusal(preview, { properties: {} }).message).toBe('input_schema.type must be "object"');
  });

  it.each([
    ['anyOf', { anyOf: [{ type: 'integer' }] }],
    ['$ref', { $ref: '#/$defs/x' }],
    ['oneOf', { oneOf: [{ type: 'integer' }] }],
    ['not', { not: { type: 'string' } }],
  ])('refuses the unsupported keyword %s and says which one', (keyword, schema) => {
    const { message, field } = refusal(preview, { type: 'object', properties: { limit: schema } });
    expect(field).toBe(`input_schema.properties.limit.${keyword}`);
    expect(
      message.startsWith(
        `input_schema.properties.limit.${keyword} is not supported in an input-schema override (supported: `,
      ),
    ).toBe(true);
  });

  it('refuses an unsupported keyword at the root and one that is not valid JSON Schema', () => {
    expect(refusal(preview, { type: 'object', $defs: {} }).field).toBe('input_schema.$defs');
    expect(refusal(preview, { type: 'object', properties: { limit: { type: 'integr' } } }).message).toMatch(
      /^input_schema is not a valid JSON Schema: /,
    );
  });
});
