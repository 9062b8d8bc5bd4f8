// Pins every refusal of the operations: the error code (DESIGN.md §8), the details an agent or the
// control plane can act on, and that a refused write leaves the input context untouched.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  executeRead,
  executeWrite,
  type JsonValue,
  type OperationDefinition,
} from '../src/index.ts';
import { crm, deepFreeze, opError } from './fixtures.ts';

type Obj = Record<string, unknown>;

function nested(depth: number): JsonValue {
  let value: JsonValue = 'leaf';
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

describe('NOT_FOUND', () => {
  it('names the pointer and where it stopped: missing key, index out of range, scalar on the way', () => {
    const missingKey = opError(() =>
      executeWrite('update', crm(), { path: '/settings/lang', value: 'en' }, {}),
    );
    expect(missingKey.code).toBe('NOT_FOUND');
    expect(missingKey.details).toEqual({
      argument: 'path',
      pointer: '/settings/lang',
      missing_at: '/settings/lang',
    });
    expect(missingKey.message).toBe('`path` "/settings/lang" not found: "/settings" has no key "lang"');

    const outOfRange = opError(() => executeWrite('delete', crm(), { path: '/customers/3/name' }, {}));
    expect(outOfRange.code).toBe('NOT_FOUND');
    expect(outOfRange.details).toEqual({
      argument: 'path',
      pointer: '/customers/3/name',
      missing_at: '/customers/3',
    });
    expect(outOfRange.message).toContain('array of 3 items; index 3 is out of range');

    const throughScalar = opError(() => executeWrite('copy', crm(), { from: '/count/x', to: '/y' }, {}));
    expect(throughScalar.code).toBe('NOT_FOUND');
    expect(throughScalar.details).toEqual({ argument: 'from', pointer: '/count/x', missing_at: '/count/x' });
    expect(throughScalar.message).toContain('"/count" is an integer, which has no children');
  });

  it('is raised by create for a missing parent or an index past the end', () => {
    expect(opError(() => executeWrite('create', crm(), { path: '/orders', value: 1 }, {})).code).toBe(
      'NOT_FOUND',
    );
    const past = opError(() => executeWrite('create', crm(), { path: '/customers', index: 4, value: 1 }, {}));
    expect(past.code).toBe('NOT_FOUND');
    expect(past.details).toEqual({ argument: 'index', pointer: '/customers', length: 3 });
  });

  it('is raised by move/copy for a missing target parent, and an index past the end', () => {
    const parent = opError(() => executeWrite('move', crm(), { from: '/count', to: '/nowhere/count' }, {}));
    expect(parent.code).toBe('NOT_FOUND');
    expect(parent.details).toMatchObject({ argument: 'to', missing_at: '/nowhere' });
    // After removing /customers/0 the array has 2 items, so index 3 is past its end (RFC 6902).
    const past = opError(() => executeWrite('move', crm(), { from: '/customers/0', to: '/customers/3' }, {}));
    expect(past.code).toBe('NOT_FOUND');
    expect(past.details).toMatchObject({ argument: 'to', length: 2 });
  });
});

describe('create', () => {
  it('answers CONFLICT for an existing object key and changes nothing', () => {
    const context = crm();
    const error = opError(() =>
      executeWrite('create', context, { path: '/settings', key: 'currency', value: 'USD' }, {}),
    );
    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ pointer: '/settings/currency', key: 'currency' });
    expect(context).toEqual(crm());
  });

  it('needs `key` for an object, refuses `index` there, and `key` for an array', () => {
    expect(opError(() => executeWrite('create', crm(), { path: '/settings', value: 1 }, {})).details).toEqual(
      {
        argument: 'key',
        pointer: '/settings',
      },
    );
    expect(opError(() => executeWrite('create', crm(), { index: 0, value: 1 }, {})).details).toEqual({
      argument: 'index',
      pointer: '',
    });
    const keyOnArray = opError(() =>
      executeWrite('create', crm(), { path: '/customers', key: 'x', value: 1 }, {}),
    );
    expect(keyOnArray.code).toBe('VALIDATION_FAILED');
    expect(keyOnArray.details).toEqual({ argument: 'key', pointer: '/customers' });
  });

  it('refuses a scalar parent', () => {
    const error = opError(() => executeWrite('create', crm(), { path: '/count', key: 'x', value: 1 }, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toBe('`path` "/count": "/count" is an integer, which cannot hold children');
  });
});

describe('delete and move', () => {
  it('refuses to delete the whole context', () => {
    const error = opError(() => executeWrite('delete', crm(), { path: '' }, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details?.argument).toBe('path');
  });

  it('refuses to move a value into its own child', () => {
    const context = crm();
    const error = opError(() =>
      executeWrite('move', context, { from: '/customers', to: '/customers/0/tags/-' }, {}),
    );
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ argument: 'to', from: '/customers', to: '/customers/0/tags/-' });
    expect(opError(() => executeWrite('move', context, { from: '', to: '/x' }, {})).code).toBe(
      'VALIDATION_FAILED',
    );
    expect(context).toEqual(crm());
  });

  it('allows a move next to itself (a sibling that shares a prefix string is not a child)', () => {
    const written = executeWrite('move', deepFreeze({ a: 1, ab: {} }), { from: '/a', to: '/ab/a' }, {});
    expect(written.context).toEqual({ ab: { a: 1 } });
  });
});

describe('query', () => {
  it('answers INVALID_QUERY with the library message for a syntax error', () => {
    const error = opError(() => executeRead('query', crm(), { query: 'customers[?name ==' }, {}));
    expect(error.code).toBe('INVALID_QUERY');
    expect(error.details?.stage).toBe('syntax');
    expect(typeof error.details?.message).toBe('string');
    expect(error.message).toBe(`The query is not valid JMESPath: ${String(error.details?.message)}`);
  });

  it('answers INVALID_QUERY for an expression that fails on the data', () => {
    const error = opError(() => executeRead('query', crm(), { query: 'no_such_function(@)' }, {}));
    expect(error.code).toBe('INVALID_QUERY');
    expect(error.details).toEqual({ stage: 'evaluation', message: 'Unknown function: no_such_function()' });
  });

  it('answers INVALID_QUERY for an expression longer than maxQueryLength, before parsing it', () => {
    const limits = { ...DEFAULT_LIMITS, maxQueryLength: 10 };
    const error = opError(() => executeRead('query', crm(), { query: 'customers[0]' }, {}, limits));
    expect(error.code).toBe('INVALID_QUERY');
    expect(error.details).toEqual({ length: 12, max_length: 10 });
    const long = `${'a.'.repeat(DEFAULT_LIMITS.maxQueryLength)}a`;
    expect(opError(() => executeRead('query', crm(), { query: long }, {})).details?.max_length).toBe(2_000);
  });
});

describe('RESULT_TOO_LARGE', () => {
  it('refuses a read whose answer passes maxResultBytes, with a hint to page or narrow', () => {
    const context = { rows: Array.from({ length: 5_000 }, (_, i) => ({ id: i, text: 'x'.repeat(100) })) };
    const limits = { ...DEFAULT_LIMITS, maxResultBytes: 10_000 };
    for (const [op, args] of [
      ['get_all', {}],
      ['query', { query: 'rows[].text' }],
      ['preview', { limit: 1000 }],
    ] as const) {
      const error = opError(() =>
        executeRead(op, op === 'preview' ? context.rows : context, args, {}, limits),
      );
      expect(error.code).toBe('RESULT_TOO_LARGE');
      expect(error.details).toEqual({ max_bytes: 10_000 });
      expect(error.message).toContain('`preview`');
      expect(error.message).toContain('narrower `query`');
    }
    // The same data, paged small enough, passes.
    expect(
      executeRead('preview', context.rows, { limit: 5 }, { preview_keys: ['id'] }, limits).result,
    ).toEqual({
      items: [{ id: 0 }, { id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }],
      total: 5_000,
      offset: 0,
      limit: 5,
    });
  });
});

describe('depth limit', () => {
  it('accepts a value exactly maxDepth containers deep and refuses one deeper', () => {
    const limits = { ...DEFAULT_LIMITS, maxDepth: 8 };
    expect(executeWrite('create', [], { value: nested(8) }, {}, limits).result).toEqual({
      pointer: '/0',
      value: nested(8),
    });
    const error = opError(() => executeWrite('create', [], { value: nested(9) }, {}, limits));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toMatchObject({ argument: 'value', max_depth: 8 });
  });

  it('uses 64 levels by default, for update and merge patches too', () => {
    expect(opError(() => executeWrite('update', crm(), { path: '/count', value: nested(65) }, {})).code).toBe(
      'VALIDATION_FAILED',
    );
    const deepPatch = { a: nested(64) };
    expect(
      opError(() => executeWrite('update', crm(), { path: '', value: deepPatch, merge: true }, {})).code,
    ).toBe('VALIDATION_FAILED');
    expect(executeWrite('update', crm(), { path: '/count', value: nested(64) }, {}).result).toEqual({
      pointer: '/count',
      value: nested(64),
    });
  });

  it('refuses values that are not plain JSON', () => {
    for (const value of [Number.NaN, Infinity, { when: new Date(0) }, [() => 1], { n: undefined }]) {
      const error = opError(() => executeWrite('create', [], { value }, {}));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.details?.argument).toBe('value');
    }
  });
});

describe('item_schema', () => {
  const itemSchema = {
    type: 'object',
    properties: { id: { type: 'integer' }, name: { type: 'string', minLength: 1 }, tags: { type: 'array' } },
    required: ['id', 'name'],
  };
  const customers = (): JsonValue => crm().customers as JsonValue;

  it('refuses a create whose new item breaks it, with ajv errors, leaving the input unchanged', () => {
    const context = customers();
    const error = opError(() =>
      executeWrite('create', context, { value: { id: 'four', name: '' } }, { item_schema: itemSchema }),
    );
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details?.item_schema_errors).toEqual([
      {
        instancePath: '/3/id',
        keyword: 'type',
        params: { type: 'integer' },
        message: 'must be integer',
        pointer: '/3',
      },
      {
        instancePath: '/3/name',
        keyword: 'minLength',
        params: { limit: 1 },
        message: 'must NOT have fewer than 1 characters',
        pointer: '/3',
      },
    ]);
    expect(error.message).toBe('The write breaks the item schema: /3/id must be integer (and 1 more)');
    expect(context).toEqual(customers());
  });

  it('checks the top-level child a deep update or deep delete changed', () => {
    const config = { item_schema: itemSchema };
    expect(
      opError(() => executeWrite('update', customers(), { path: '/1/name', value: 7 }, config)).details
        ?.item_schema_errors,
    ).toMatchObject([{ instancePath: '/1/name', pointer: '/1' }]);
    expect(
      opError(() => executeWrite('delete', customers(), { path: '/2/name' }, config)).details
        ?.item_schema_errors,
    ).toMatchObject([{ keyword: 'required', pointer: '/2' }]);
    // Deleting a whole item leaves nothing to check.
    expect(executeWrite('delete', customers(), { path: '/2' }, config).result).toMatchObject({
      pointer: '/2',
    });
  });

  it('checks both ends of a move: the child that lost the value and the one that gained it', () => {
    const strict = { item_schema: { type: 'object', properties: { tags: { type: 'array', minItems: 1 } } } };
    const context = deepFreeze([{ tags: ['a'] }, { tags: ['b'] }]);
    const error = opError(() =>
      executeWrite('move', context, { from: '/0/tags/0', to: '/1/tags/-' }, strict),
    );
    expect(error.details?.item_schema_errors).toMatchObject([{ instancePath: '/0/tags', pointer: '/0' }]);
    // Moving a value to the front of the array shifts the child it came from: /1 is now /2.
    const shifted = opError(() => executeWrite('move', context, { from: '/1/tags/0', to: '/0' }, strict));
    expect(shifted.details?.item_schema_errors).toMatchObject([
      { instancePath: '/0' },
      { instancePath: '/2/tags' },
    ]);
  });

  it('checks every child after a whole-context replace, only the patched keys after a whole-context merge', () => {
    const schema = { item_schema: { type: 'number' } };
    const context = deepFreeze({ a: 1, legacy: 'not a number' });
    // A merge that touches only "b" is not blocked by the pre-existing bad "legacy" child...
    expect(
      executeWrite('update', context, { path: '', value: { b: 2 }, merge: true }, schema).context,
    ).toEqual({
      a: 1,
      legacy: 'not a number',
      b: 2,
    });
    // ...but a replace of the whole context must satisfy the schema everywhere.
    const error = opError(() =>
      executeWrite('update', context, { path: '', value: { a: 1, b: 'x' } }, schema),
    );
    expect(error.details?.item_schema_errors).toMatchObject([{ instancePath: '/b' }]);
    expect(context).toEqual({ a: 1, legacy: 'not a number' });
  });

  it('checks a copy at its destination', () => {
    const schema = { item_schema: { type: 'object', required: ['id'] } };
    const context = deepFreeze({ a: { id: 1 }, note: 'text' });
    expect(opError(() => executeWrite('copy', context, { from: '/note', to: '/b' }, schema)).code).toBe(
      'VALIDATION_FAILED',
    );
    expect(executeWrite('copy', context, { from: '/a', to: '/b' }, schema).result).toEqual({
      from: '/a',
      to: '/b',
    });
  });
});

describe('arguments and config', () => {
  it('refuses unknown, missing and out-of-range arguments against the canonical input schema', () => {
    const unknown = opError(() => executeRead('get_all', crm(), { path: '/customers' }, {}));
    expect(unknown.code).toBe('VALIDATION_FAILED');
    expect(unknown.details?.argument).toBe('path');
    expect(unknown.message).toBe('Invalid arguments for get_all: arguments: unknown property "path"');

    const missing = opError(() => executeWrite('update', crm(), { path: '/count' }, {}));
    expect(missing.details?.argument).toBe('value');

    const tooBig = opError(() => executeRead('preview', [], { limit: 1001 }, {}));
    expect(tooBig.details?.argument).toBe('limit');
    expect(tooBig.message).toBe('Invalid arguments for preview: arguments/limit must be <= 1000');

    expect(opError(() => executeRead('select', [], { keys: [] }, {})).details?.argument).toBe('keys');
    expect(opError(() => executeRead('select', [], { keys: [true] }, {})).details?.argument).toBe('keys');
  });

  it('refuses an unknown config key at run time too', () => {
    const error = opError(() => executeRead('get_all', crm(), {}, { preview_keys: ['id'] }));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details?.field).toBe('preview_keys');
  });

  it('refuses select on scalar data', () => {
    const error = opError(() => executeRead('select', 'text', { keys: ['a'] }, {}));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toBe('select needs object or array data, but the data is a string');
    expect(error.details).toEqual({ node_type: 'string' });
  });

  it('refuses running an operation with the wrong executor or an unknown type', () => {
    expect(opError(() => executeRead('create', [], { value: 1 }, {})).code).toBe('INTERNAL');
    expect(opError(() => executeWrite('get_all', [], {}, {})).code).toBe('INTERNAL');
    const unknown = opError(() => executeRead('drop_table' as OperationDefinition['type'], [], {}, {}));
    expect(unknown.code).toBe('VALIDATION_FAILED');
    expect(unknown.message).toBe('Unknown operation "drop_table"');
  });
});

describe('input never mutated', () => {
  it('leaves an unfrozen context intact through every write, success or failure', () => {
    // Not frozen on purpose: an in-place write would succeed silently here, and the comparison shows it.
    const context = structuredClone(crm());
    const writes: [string, Obj, string][] = [
      ['create', { path: '/customers', value: { id: 9 } }, 'ok'],
      ['update', { path: '/settings', value: { x: 1 }, merge: true }, 'ok'],
      ['delete', { path: '/customers/1' }, 'ok'],
      ['move', { from: '/customers/0', to: '/settings/first' }, 'ok'],
      ['copy', { from: '/settings', to: '/customers/0' }, 'ok'],
      ['create', { path: '/settings', key: 'currency', value: 1 }, 'CONFLICT'],
      ['create', { path: '/customers', value: { id: 'x' } }, 'VALIDATION_FAILED'],
    ];
    const config = (op: string, args: Obj): Obj =>
      op === 'create' && (args.value as Obj | undefined)?.id === 'x'
        ? { item_schema: { type: 'object', properties: { id: { type: 'integer' } } } }
        : {};
    for (const [op, args, outcome] of writes) {
      if (outcome === 'ok') {
        expect(executeWrite(op as 'create', context, args, config(op, args)).context).not.toBe(context);
      } else {
        expect(opError(() => executeWrite(op as 'create', context, args, config(op, args))).code).toBe(
          outcome,
        );
      }
    }
    expect(context).toEqual(crm());
  });
});
