// Pins the operation registry (DESIGN.md §5): all ten operations, their kinds agreeing with the
// contracts package, and canonical input/config schemas an LLM and ajv can both rely on (type object,
// closed, every argument described, the right required lists).
import { OPERATION_TYPES, READ_OPERATIONS } from '@bindery/contracts';
import { describe, expect, it } from 'vitest';
import { OPERATIONS, type JsonSchema } from '../src/index.ts';
import { compileUserSchema } from '../src/schema-validation.ts';

const REQUIRED: Record<string, string[] | undefined> = {
  get_all: undefined,
  get_schema: undefined,
  preview: undefined,
  select: ['keys'],
  query: ['query'],
  create: ['value'],
  update: ['path', 'value'],
  delete: ['path'],
  move: ['from', 'to'],
  copy: ['from', 'to'],
};

const ARGUMENTS: Record<string, string[]> = {
  get_all: [],
  get_schema: [],
  preview: ['offset', 'limit'],
  select: ['keys'],
  query: ['query'],
  // Every write also takes expected_version, checked by the caller that stores the context.
  create: ['path', 'value', 'key', 'index', 'expected_version'],
  update: ['path', 'value', 'merge', 'expected_version'],
  delete: ['path', 'expected_version'],
  move: ['from', 'to', 'expected_version'],
  copy: ['from', 'to', 'expected_version'],
};

const CONFIG_KEYS: Record<string, string[]> = {
  get_all: [],
  get_schema: [],
  preview: ['preview_keys'],
  select: ['id_field'],
  query: [],
  create: ['item_schema'],
  update: ['item_schema'],
  delete: ['item_schema'],
  move: ['item_schema'],
  copy: ['item_schema'],
};

describe('OPERATIONS', () => {
  it('defines exactly the ten operation types, with kinds matching READ_OPERATIONS', () => {
    expect(Object.keys(OPERATIONS).sort()).toEqual([...OPERATION_TYPES].sort());
    for (const op of OPERATION_TYPES) {
      expect(OPERATIONS[op].type).toBe(op);
      expect(OPERATIONS[op].kind).toBe(READ_OPERATIONS.includes(op) ? 'read' : 'write');
    }
  });

  it.each(OPERATION_TYPES)('%s has a one-sentence summary', (op) => {
    expect(OPERATIONS[op].summary).toMatch(/^[A-Z][^.]*\.$/);
  });

  it.each(OPERATION_TYPES)('%s has a closed 2020-12 object input schema with described arguments', (op) => {
    const schema = OPERATIONS[op].inputSchema;
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    const properties = schema.properties as Record<string, JsonSchema>;
    expect(Object.keys(properties)).toEqual(ARGUMENTS[op]);
    for (const property of Object.values(properties)) {
      expect(typeof property.description).toBe('string');
      expect((property.description as string).length).toBeGreaterThan(20);
    }
    expect(schema.required).toEqual(REQUIRED[op]);
    expect(() => compileUserSchema(schema)).not.toThrow();
  });

  it.each(OPERATION_TYPES)('%s has a closed config schema with only its own keys', (op) => {
    const schema = OPERATIONS[op].configSchema;
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties as object)).toEqual(CONFIG_KEYS[op]);
    expect(() => compileUserSchema(schema)).not.toThrow();
  });

  it('is frozen, so no caller can change the canonical contract for everyone', () => {
    expect(Object.isFrozen(OPERATIONS.preview.inputSchema)).toBe(true);
    expect(() => {
      (OPERATIONS.preview.inputSchema.properties as Record<string, unknown>).page = { type: 'integer' };
    }).toThrow(TypeError);
    expect(Object.keys(OPERATIONS.preview.inputSchema.properties as object)).toEqual(['offset', 'limit']);
  });
});
