// Pins that a tool's context must exist: an ADI is created or moved only to a json_path the table's
// data has (the refusal names the deepest part that exists and its keys or length, so the path can
// be fixed); one whose context disappears later shows `status: context_missing` in the admin API
// and answers calls with NOT_FOUND naming the tool, the table and the path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer } from './support/tools.ts';

let t: TestApp;
let tableId: string;

const DATA = {
  customers: [{ id: 1 }, { id: 2 }],
  orders: [],
  meta: { version: 1, note: null },
  'a/b': { x: 1 },
  wide: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${String(i).padStart(2, '0')}`, i])),
};

beforeAll(async () => {
  t = await startTestApp();
  tableId = (await t.call('POST', '/api/v2/tables', { body: { name: 'crm', data: DATA } })).body.id;
});
afterAll(() => t.close());

const createAdi = (json_path: string, operation_type = 'get_all') =>
  t.call('POST', '/api/v2/adis', { body: { table_id: tableId, json_path, operation_type } });

describe('creating an ADI on a path that does not exist', () => {
  it('is refused, naming the deepest existing part and its keys, and creates nothing', async () => {
    const res = await createAdi('/customerz');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.message).toBe(
      `json_path "/customerz" does not exist in table "crm" (${tableId}): the deepest part that exists ` +
        'is "" (the whole table), an object with keys a/b, customers, meta, orders, wide',
    );
    expect(res.body.error.details).toMatchObject({
      field: 'json_path',
      json_path: '/customerz',
      table_id: tableId,
      existing_path: '',
      existing_type: 'object',
      keys: ['a/b', 'customers', 'meta', 'orders', 'wide'],
      key_count: 5,
    });
    expect((await t.call('GET', `/api/v2/adis?table_id=${tableId}`)).body.items).toEqual([]);
  });

  it('names a nested prefix, an array and its indexes, or a scalar', async () => {
    const nested = await createAdi('/meta/versions/0');
    expect(nested.body.error.message).toContain(
      'the deepest part that exists is "/meta", an object with keys note, version',
    );
    const array = await createAdi('/customers/2');
    expect(array.body.error.message).toContain(
      'the deepest part that exists is "/customers", an array of 2 item(s): continue with an index from 0 to 1',
    );
    expect(array.body.error.details).toMatchObject({ existing_type: 'array', length: 2 });
    const notIndex = await createAdi('/customers/first');
    expect(notIndex.body.error.details.existing_path).toBe('/customers');
    const empty = await createAdi('/orders/0');
    expect(empty.body.error.message).toContain('"/orders", an empty array');
    const scalar = await createAdi('/meta/version/x');
    expect(scalar.body.error.message).toContain('"/meta/version", a number, which has nothing inside it');
    const escaped = await createAdi('/a~1b/y');
    expect(escaped.body.error.details).toMatchObject({ existing_path: '/a~1b', keys: ['x'] });
  });

  it('shows the first 20 keys of a wide object, and how many there are', async () => {
    const res = await createAdi('/wide/k99');
    const first20 = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    expect(res.body.error.details).toMatchObject({ existing_path: '/wide', keys: first20, key_count: 30 });
    expect(res.body.error.message).toContain(`an object with 30 keys, the first 20: ${first20.join(', ')}`);
  });

  it('accepts every path that exists, a JSON null and escaped keys included', async () => {
    for (const path of ['', '/customers', '/customers/1', '/orders', '/meta/note', '/a~1b', '/a~1b/x']) {
      const res = await createAdi(path);
      expect(res.status, path).toBe(201);
      expect(res.body.status).toBe('ok');
    }
  });
});

describe('moving an ADI', () => {
  it('to a path that does not exist is refused and the ADI keeps its path', async () => {
    const adi = (await createAdi('/customers')).body;
    const res = await t.call('PATCH', `/api/v2/adis/${adi.id}`, { body: { json_path: '/clients' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject({ json_path: '/clients', existing_path: '' });
    expect((await t.call('GET', `/api/v2/adis/${adi.id}`)).body.json_path).toBe('/customers');
    const moved = await t.call('PATCH', `/api/v2/adis/${adi.id}`, { body: { json_path: '/meta' } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ json_path: '/meta', status: 'ok' });
  });
});

describe('a context that disappears after the ADI was saved', () => {
  it('shows context_missing in the ADI and the list, and ok again once the data is back', async () => {
    const table = await t.call('POST', '/api/v2/tables', { body: { name: 'shop', data: { a: [], b: {} } } });
    const a = (
      await t.call('POST', '/api/v2/adis', {
        body: { table_id: table.body.id, json_path: '/a', operation_type: 'preview' },
      })
    ).body;
    const b = (
      await t.call('POST', '/api/v2/adis', {
        body: { table_id: table.body.id, json_path: '/b', operation_type: 'get_all' },
      })
    ).body;
    await t.call('PUT', `/api/v2/tables/${table.body.id}/data`, { body: { b: {} } });
    expect((await t.call('GET', `/api/v2/adis/${a.id}`)).body.status).toBe('context_missing');
    const listed = await t.call('GET', `/api/v2/adis?table_id=${table.body.id}`);
    expect(listed.body.items.map((x: { id: string; status: string }) => [x.id, x.status])).toEqual([
      [a.id, 'context_missing'],
      [b.id, 'ok'],
    ]);
    // Renaming it is still allowed: only a new json_path is checked.
    const renamed = await t.call('PATCH', `/api/v2/adis/${a.id}`, { body: { name: 'orphan' } });
    expect(renamed.body).toMatchObject({ name: 'orphan', status: 'context_missing' });
    await t.call('PUT', `/api/v2/tables/${table.body.id}/data`, { body: { a: [1], b: {} } });
    expect((await t.call('GET', `/api/v2/adis/${a.id}`)).body.status).toBe('ok');
  });

  it('answers calls with NOT_FOUND naming the tool, the table and the path, for reads and writes', async () => {
    const f = await buildFixture(
      t,
      { rows: [{ id: 1 }], keep: 1 },
      {
        read_rows: { json_path: '/rows', operation_type: 'get_all' },
        add_row: { json_path: '/rows', operation_type: 'create' },
      },
    );
    const { data } = await tableState(t, f);
    delete data.rows;
    await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, { token: f.token, body: data });
    for (const [tool, args] of [
      ['read_rows', {}],
      ['add_row', { value: { id: 2 } }],
    ] as const) {
      const res = toolAnswer(await execute(t, f, tool, args));
      expect(res.isError).toBe(true);
      expect(res.value.error).toEqual({
        code: 'NOT_FOUND',
        message:
          `tool "${tool}": table "crm" (${f.tableId}) has no data at "/rows" (the tool's json_path) any more; ` +
          "the tool's owner must restore the data there or change the tool's json_path",
        details: { tool_name: tool, table_id: f.tableId, table_name: 'crm', json_path: '/rows' },
      });
    }
    expect((await tableState(t, f)).data).toEqual({ keep: 1 });
  });
});
