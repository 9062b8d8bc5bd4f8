// Pins the answer of every operation on its normal path (DESIGN.md §5), and that writes return a
// new context while the (frozen) input stays exactly as it was.
import { describe, expect, it } from 'vitest';
import { executeRead, executeWrite, type JsonValue } from '../src/index.ts';
import { crm, deepFreeze } from './fixtures.ts';

type Obj = Record<string, unknown>;

describe('get_all', () => {
  it('returns the node itself, for any kind of node', () => {
    const context = crm();
    expect(executeRead('get_all', context, {}, {}).result).toBe(context);
    expect(executeRead('get_all', 42, {}, {}).result).toBe(42);
    expect(executeRead('get_all', null, {}, {}).result).toBeNull();
  });
});

describe('get_schema', () => {
  it('returns the inferred 2020-12 schema of the node', () => {
    expect(executeRead('get_schema', { n: 1, tags: ['a'] }, {}, {}).result).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { n: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
      required: ['n', 'tags'],
    });
  });
});

describe('preview', () => {
  const customers = crm().customers as JsonValue;

  it('equals get_all without preview_keys and without paging arguments', () => {
    expect(executeRead('preview', customers, {}, {}).result).toBe(customers);
  });

  it('pages an array and projects object items to preview_keys, in preview_keys order', () => {
    const result = executeRead(
      'preview',
      customers,
      { offset: 1, limit: 1 },
      { preview_keys: ['name', 'id'] },
    ).result;
    expect(result).toEqual({ items: [{ name: 'Grace', id: 2 }], total: 3, offset: 1, limit: 1 });
    expect(Object.keys((result as { items: Obj[] }).items[0] as Obj)).toEqual(['name', 'id']);
  });

  it('defaults to offset 0 and limit 50 when only preview_keys is set', () => {
    const result = executeRead('preview', customers, {}, { preview_keys: ['id'] }).result;
    expect(result).toEqual({ items: [{ id: 1 }, { id: 2 }, { id: 3 }], total: 3, offset: 0, limit: 50 });
  });

  it('pages without projecting when only paging arguments are given', () => {
    const result = executeRead('preview', customers, { limit: 1 }, {}).result;
    expect(result).toEqual({ items: [(customers as JsonValue[])[0]], total: 3, offset: 0, limit: 1 });
  });

  it('leaves non-object items as they are and skips preview_keys an item lacks', () => {
    const result = executeRead(
      'preview',
      [1, 'two', { id: 3 }, { other: true }],
      {},
      { preview_keys: ['id'] },
    );
    expect(result.result).toEqual({ items: [1, 'two', { id: 3 }, {}], total: 4, offset: 0, limit: 50 });
  });

  it('pages an object as {key, value} entries with projected values', () => {
    const context = { a: { id: 1, x: 1 }, b: { id: 2, x: 2 }, c: 'plain' };
    const result = executeRead('preview', context, { offset: 1 }, { preview_keys: ['id'] }).result;
    expect(result).toEqual({
      items: [
        { key: 'b', value: { id: 2 } },
        { key: 'c', value: 'plain' },
      ],
      total: 3,
      offset: 1,
      limit: 50,
    });
  });

  it('returns an empty page past the end, and a scalar node as it is', () => {
    expect(executeRead('preview', customers, { offset: 10 }, {}).result).toEqual({
      items: [],
      total: 3,
      offset: 10,
      limit: 50,
    });
    expect(executeRead('preview', 'text', { limit: 5 }, { preview_keys: ['id'] }).result).toBe('text');
  });
});

describe('select', () => {
  it('picks object children by key and lists the missing ones', () => {
    const result = executeRead(
      'select',
      crm().settings as JsonValue,
      { keys: ['currency', 'nope', 'a/b'] },
      {},
    );
    expect(result.result).toEqual({ items: ['EUR', 1], missing: ['nope'] });
  });

  it('picks array items by index (integer or numeric string), out of range is missing', () => {
    const customers = crm().customers as JsonValue[];
    const result = executeRead('select', customers, { keys: [2, '0', 7, 'x', '01'] }, {});
    expect(result.result).toEqual({ items: [customers[2], customers[0]], missing: [7, 'x', '01'] });
  });

  it('matches array items by id_field, whole, with ids as strings or numbers', () => {
    const customers = crm().customers as JsonValue[];
    const result = executeRead('select', customers, { keys: ['3', 1, 99] }, { id_field: 'id' });
    expect(result.result).toEqual({ items: [customers[2], customers[0]], missing: [99] });
  });

  it('returns every item sharing an id, once, even when the id is asked twice', () => {
    const items = [
      { sku: 'a', n: 1 },
      { sku: 'b', n: 2 },
      { sku: 'a', n: 3 },
    ];
    const result = executeRead('select', items, { keys: ['a', 'a'] }, { id_field: 'sku' });
    expect(result.result).toEqual({ items: [items[0], items[2]], missing: [] });
  });
});

describe('query', () => {
  it('evaluates JMESPath on the node', () => {
    const context = crm();
    expect(
      executeRead('query', context, { query: "customers[?contains(tags, 'vip')].name" }, {}).result,
    ).toEqual(['Ada']);
    expect(executeRead('query', context, { query: 'length(customers)' }, {}).result).toBe(3);
    expect(executeRead('query', context, { query: 'customers[-1].{id: id, n: name}' }, {}).result).toEqual({
      id: 3,
      n: 'Linus',
    });
    expect(executeRead('query', context, { query: 'missing.field' }, {}).result).toBeNull();
  });
});

describe('create', () => {
  it('appends to an array by default and answers the new relative pointer', () => {
    const context = crm();
    const value = { id: 4, name: 'Barbara' };
    const written = executeWrite('create', context, { path: '/customers', value }, {});
    expect(written.result).toEqual({ pointer: '/customers/3', value });
    expect((written.context as Obj).customers).toEqual([...(context.customers as JsonValue[]), value]);
    expect(context).toEqual(crm());
  });

  it('inserts into an array at index, shifting later items', () => {
    const written = executeWrite('create', ['a', 'c'], { value: 'b', index: 1 }, {});
    expect(written).toEqual({ context: ['a', 'b', 'c'], result: { pointer: '/1', value: 'b' } });
    expect(executeWrite('create', ['a'], { value: 'z', index: 1 }, {}).context).toEqual(['a', 'z']);
  });

  it('adds a key to an object (path defaults to the context itself)', () => {
    const written = executeWrite('create', crm(), { key: 'owner', value: { name: 'Ops' } }, {});
    expect(written.result).toEqual({ pointer: '/owner', value: { name: 'Ops' } });
    expect((written.context as Obj).owner).toEqual({ name: 'Ops' });
  });

  it('escapes the new key in the answered pointer', () => {
    const written = executeWrite('create', crm(), { path: '/settings', key: 'x/y~z', value: 0 }, {});
    expect(written.result).toEqual({ pointer: '/settings/x~1y~0z', value: 0 });
  });
});

describe('update', () => {
  it('replaces the value at path', () => {
    const context = crm();
    const written = executeWrite('update', context, { path: '/customers/1/name', value: 'Grace H.' }, {});
    expect(written.result).toEqual({ pointer: '/customers/1/name', value: 'Grace H.' });
    expect(((written.context as Obj).customers as Obj[])[1]).toEqual({
      id: 2,
      name: 'Grace H.',
      email: 'grace@example.com',
      tags: [],
    });
    expect(context).toEqual(crm());
  });

  it('replaces the whole context with path ""', () => {
    expect(executeWrite('update', crm(), { path: '', value: [1] }, {})).toEqual({
      context: [1],
      result: { pointer: '', value: [1] },
    });
  });

  it('merges with merge: true (RFC 7396: null removes, objects merge, the rest replaces)', () => {
    const context = crm();
    const written = executeWrite(
      'update',
      context,
      {
        path: '/customers/0',
        value: { email: null, name: 'Ada L.', tags: ['x'], address: { city: 'London' } },
        merge: true,
      },
      {},
    );
    const merged = { id: 1, name: 'Ada L.', tags: ['x'], address: { city: 'London' } };
    expect(written.result).toEqual({ pointer: '/customers/0', value: merged });
    expect(((written.context as Obj).customers as Obj[])[0]).toEqual(merged);
    expect(context).toEqual(crm());
  });

  // RFC 7396 Appendix A, run through update with path "".
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ] as [JsonValue, JsonValue, JsonValue][])('merge %j with %j gives %j', (target, patch, expected) => {
    const written = executeWrite('update', deepFreeze(target), { path: '', value: patch, merge: true }, {});
    expect(written.context).toEqual(expected);
  });
});

describe('delete', () => {
  it('removes an array item (later items shift) and answers the removed value', () => {
    const context = crm();
    const written = executeWrite('delete', context, { path: '/customers/0' }, {});
    expect(written.result).toEqual({ pointer: '/customers/0', value: (context.customers as JsonValue[])[0] });
    expect(((written.context as Obj).customers as Obj[]).map((c) => c.id)).toEqual([2, 3]);
    expect(context).toEqual(crm());
  });

  it('removes an object key, escaped keys included', () => {
    const written = executeWrite('delete', crm(), { path: '/settings/a~1b' }, {});
    expect(written.result).toEqual({ pointer: '/settings/a~1b', value: 1 });
    expect((written.context as Obj).settings).toEqual({ currency: 'EUR', 'm~n': 2 });
  });
});

describe('move', () => {
  it('moves within an array (RFC 6902: removed first, then added)', () => {
    const written = executeWrite('move', deepFreeze(['a', 'b', 'c']), { from: '/0', to: '/2' }, {});
    expect(written).toEqual({ context: ['b', 'c', 'a'], result: { from: '/0', to: '/2' } });
  });

  it('appends with "-" and answers the final index', () => {
    const written = executeWrite(
      'move',
      crm(),
      { from: '/customers/0/tags/0', to: '/customers/1/tags/-' },
      {},
    );
    expect(written.result).toEqual({ from: '/customers/0/tags/0', to: '/customers/1/tags/0' });
    const customers = (written.context as Obj).customers as Obj[];
    expect(customers[0]?.tags).toEqual([]);
    expect(customers[1]?.tags).toEqual(['vip']);
  });

  it('moves between an array and an object, replacing an existing key', () => {
    const context = crm();
    const written = executeWrite('move', context, { from: '/customers/2', to: '/settings/currency' }, {});
    expect(written.result).toEqual({ from: '/customers/2', to: '/settings/currency' });
    expect(((written.context as Obj).settings as Obj).currency).toEqual(
      (context.customers as JsonValue[])[2],
    );
    expect((written.context as Obj).customers).toHaveLength(2);
    expect(context).toEqual(crm());
  });

  it('is a no-op when from equals to', () => {
    const context = crm();
    const written = executeWrite('move', context, { from: '/count', to: '/count' }, {});
    expect(written).toEqual({ context, result: { from: '/count', to: '/count' } });
  });
});

describe('copy', () => {
  it('copies a value to a new key and keeps the original', () => {
    const written = executeWrite('copy', crm(), { from: '/customers/0', to: '/featured' }, {});
    expect(written.result).toEqual({ from: '/customers/0', to: '/featured' });
    const next = written.context as Obj;
    expect(next.featured).toEqual((next.customers as JsonValue[])[0]);
    expect(next.customers).toHaveLength(3);
  });

  it('inserts a copy into an array at an index', () => {
    const written = executeWrite(
      'copy',
      deepFreeze({ list: ['a', 'b'], x: 'X' }),
      { from: '/x', to: '/list/1' },
      {},
    );
    expect(written).toEqual({
      context: { list: ['a', 'X', 'b'], x: 'X' },
      result: { from: '/x', to: '/list/1' },
    });
  });
});

describe('copy on write', () => {
  it('copies only the path to a small write in a large context and shares the rest', () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({
      id: i,
      payload: { text: `item ${i}`, n: [i, i + 1] },
    }));
    const context = deepFreeze({ items, other: { big: items.slice(0, 100) } });
    const written = executeWrite('update', context, { path: '/items/5/payload/text', value: 'changed' }, {});
    const next = written.context as { items: typeof items; other: unknown };
    expect(next.items[5]?.payload.text).toBe('changed');
    expect(context.items[5]?.payload.text).toBe('item 5');
    // Untouched subtrees are the very same objects, not copies.
    expect(next.other).toBe(context.other);
    expect(next.items[6]).toBe(context.items[6]);
    expect(next.items[5]?.payload.n).toBe(context.items[5]?.payload.n);
    expect(next.items).not.toBe(context.items);
  });
});
