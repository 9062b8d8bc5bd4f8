// Pins validateAdiConfig: which config keys each operation takes (preview_keys, id_field,
// item_schema), normalisation of an empty config, and refusals that name the bad field, including
// an item_schema that is not a valid JSON Schema.
import { OPERATION_TYPES, type OperationType } from '@bindery/contracts';
import { describe, expect, it } from 'vitest';
import { validateAdiConfig } from '../src/index.ts';
import { opError } from './fixtures.ts';

describe('validateAdiConfig', () => {
  it('accepts each operation its own keys and returns a copy', () => {
    const config = { preview_keys: ['id', 'name'] };
    const normalised = validateAdiConfig('preview', config);
    expect(normalised).toEqual(config);
    expect(normalised).not.toBe(config);
    expect(validateAdiConfig('select', { id_field: 'id' })).toEqual({ id_field: 'id' });
    for (const op of ['create', 'update', 'delete', 'move', 'copy'] as const) {
      const itemSchema = { type: 'object', properties: { email: { type: 'string', format: 'email' } } };
      expect(validateAdiConfig(op, { item_schema: itemSchema })).toEqual({ item_schema: itemSchema });
    }
  });

  it.each(OPERATION_TYPES)('normalises a missing config of %s to {}', (op) => {
    expect(validateAdiConfig(op, undefined)).toEqual({});
    expect(validateAdiConfig(op, null)).toEqual({});
    expect(validateAdiConfig(op, {})).toEqual({});
  });

  it('refuses an unknown key, naming it and the allowed ones', () => {
    const error = opError(() => validateAdiConfig('preview', { preview_keys: ['id'], previewKeys: ['x'] }));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details?.field).toBe('previewKeys');
    expect(error.message).toBe('Unknown config key "previewKeys" for preview (allowed: preview_keys)');
    expect(opError(() => validateAdiConfig('query', { id_field: 'id' })).message).toBe(
      'Unknown config key "id_field" for query (allowed: none)',
    );
    expect(opError(() => validateAdiConfig('get_all', { item_schema: {} })).details?.field).toBe(
      'item_schema',
    );
  });

  it('refuses a key of the wrong shape, naming the field', () => {
    const keys = opError(() => validateAdiConfig('preview', { preview_keys: ['id', 3] }));
    expect(keys.details?.field).toBe('preview_keys');
    expect(keys.message).toBe('Invalid preview config: config/preview_keys/1 must be string');
    expect(opError(() => validateAdiConfig('preview', { preview_keys: [] })).details?.field).toBe(
      'preview_keys',
    );
    expect(opError(() => validateAdiConfig('select', { id_field: '' })).details?.field).toBe('id_field');
    expect(opError(() => validateAdiConfig('create', { item_schema: 'object' })).details?.field).toBe(
      'item_schema',
    );
    expect(opError(() => validateAdiConfig('create', ['item_schema'])).details?.field).toBe('config');
  });

  it('refuses an operation type it does not know', () => {
    const error = opError(() => validateAdiConfig('truncate' as OperationType, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ field: 'operation_type' });
  });

  it('compiles item_schema and refuses one that is not a valid JSON Schema', () => {
    for (const itemSchema of [
      { type: 'strnig' },
      { type: 'object', properties: { n: { minLenght: 3 } } },
      { type: 'string', format: 'no-such-format' },
      { $ref: 'https://example.com/elsewhere.json' },
    ]) {
      const error = opError(() => validateAdiConfig('update', { item_schema: itemSchema }));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.details?.field).toBe('item_schema');
      expect(error.message).toMatch(/^config\.item_schema is not a valid JSON Schema: /);
    }
  });
});
