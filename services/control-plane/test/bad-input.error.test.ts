// Pins the regressions of bad input that used to answer 500 (or be stored mangled) and now gets a
// clear 400 VALIDATION_FAILED naming where: NUL characters and lone UTF-16 surrogates in bodies
// (keys and values), path ids, cursors and tool arguments; numbers that overflow to Infinity in
// query strings and bodies; JSON nested 10,000+ deep in table data
// and PUT bodies; a 5,000-deep input-schema override; wrong body types (`name: 123` is no longer
// coerced to "123"); non-JSON bodies; URLs the router cannot decode. Nothing is written by a
// refused request, and the server keeps answering.
import { MAX_BODY_DEPTH, MAX_JSON_DEPTH } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type CallResult, type TestApp } from './support/app.ts';
import { buildFixture, execute, type Fixture } from './support/tools.ts';

let t: TestApp;
let tableId: string;
let adiId: string;
let aeiId: string;
let fixture: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  tableId = (await t.call('POST', '/api/v2/tables', { body: { name: 'things', data: { a: 1 } } })).body.id;
  adiId = (
    await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '', operation_type: 'query' },
    })
  ).body.id;
  aeiId = (await t.call('POST', '/api/v2/aeis', { body: { name: 'agent' } })).body.id;
  fixture = await buildFixture(t, { items: [] }, { add: { json_path: '/items', operation_type: 'create' } });
});
afterAll(() => t.close());

function expectRefused(res: CallResult, message: string | RegExp) {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('VALIDATION_FAILED');
  expect(res.body.error.message).toMatch(message);
  expect(res.body.error.request_id).toBeTruthy();
}

const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);
const tableNames = async () =>
  (await t.call('GET', '/api/v2/tables?limit=200')).body.items.map((x: { name: string }) => x.name);
const tableData = async () => (await t.call('GET', `/api/v2/tables/${tableId}`)).body.data;

describe('NUL characters (PostgreSQL stores none)', () => {
  it('in a name: 400 naming body/name, nothing created', async () => {
    const res = await t.call('POST', '/api/v2/tables', { body: { name: 'bad\u0000name' } });
    expectRefused(res, /^body\/name: the text contains a NUL character/);
    expect(res.body.error.details).toMatchObject({ location: 'body', pointer: '/name', problem: 'NUL' });
    expect(await tableNames()).not.toContain('bad');
  });

  it('in table data, as a value or a key, on create and on PUT', async () => {
    expectRefused(
      await t.call('POST', '/api/v2/tables', { body: { name: 'n', data: { list: ['ok', 'x\u0000'] } } }),
      /^body\/data\/list\/1: the text/,
    );
    expectRefused(
      await t.call('POST', '/api/v2/tables', { body: { name: 'n', data: { 'k\u0000': 1 } } }),
      /^body\/data\/k\\u0000: the key contains a NUL/,
    );
    expectRefused(
      await t.call('PUT', `/api/v2/tables/${tableId}/data`, { body: { notes: 'a\u0000b' } }),
      /^body\/notes: the text contains a NUL/,
    );
    expect(await tableData()).toEqual({ a: 1 });
  });

  it('in a path id: 400 naming params/id', async () => {
    expectRefused(await t.call('GET', '/api/v2/tables/tbl_%00x'), /^params\/id: the text contains a NUL/);
    expectRefused(await t.call('DELETE', `/api/v2/adis/${adiId}%00`), /^params\/id:/);
  });

  it('in a cursor or any query value: 400 naming querystring/<field>', async () => {
    expectRefused(await t.call('GET', '/api/v2/tables?cursor=a%00b'), /^querystring\/cursor: the text/);
    expectRefused(await t.call('GET', '/api/v2/adis?table_id=%00'), /^querystring\/table_id:/);
  });

  it('in tool arguments on the internal execute route: 400 naming the argument, nothing written', async () => {
    const res = await execute(t, fixture, 'add', { value: { name: 'x\u0000' } });
    expectRefused(res, /^body\/arguments\/value\/name: the text contains a NUL/);
    const table = await t.call('GET', `/api/v2/tables/${fixture.tableId}`, { token: fixture.token });
    expect(table.body.data).toEqual({ items: [] });
  });
});

describe('lone UTF-16 surrogates (not Unicode: cannot be stored faithfully)', () => {
  it('in a name: refused (it used to be stored as U+FFFD)', async () => {
    expectRefused(
      await t.call('POST', '/api/v2/tables', { raw: '{"name":"lone\\ud800"}' }),
      /^body\/name: the text contains an unpaired UTF-16 surrogate/,
    );
    expectRefused(await t.call('POST', '/api/v2/tables', { raw: '{"name":"\\udc00x"}' }), /surrogate/);
    expect((await tableNames()).some((n: string) => n.startsWith('lone'))).toBe(false);
  });

  it('in data and in tool arguments', async () => {
    expectRefused(
      await t.call('PUT', `/api/v2/tables/${tableId}/data`, { raw: '{"a":"\\ud83d"}' }),
      /^body\/a: the text contains an unpaired/,
    );
    expectRefused(await execute(t, fixture, 'add', { value: '\udfff' }), /^body\/arguments\/value:/);
  });

  it('a surrogate pair (an emoji) is fine and stored faithfully', async () => {
    const res = await t.call('POST', '/api/v2/tables', {
      raw: '{"name":"smile \\ud83d\\ude00","data":"😀"}',
    });
    expect(res.status).toBe(201);
    const got = await t.call('GET', `/api/v2/tables/${res.body.id}`);
    expect(got.body).toMatchObject({ name: 'smile 😀', data: '😀' });
  });
});

describe('numbers that overflow a double', () => {
  it('in a query string: 400 (?limit=1e999 used to reach the database as Infinity: 500)', async () => {
    for (const limit of ['1e999', 'Infinity', '-Infinity']) {
      expectRefused(await t.call('GET', `/api/v2/tables?limit=${limit}`), /^querystring\/limit must be/);
    }
  });

  it('in a body: 400 naming where (1e999 used to be stored as null)', async () => {
    const res = await t.call('PUT', `/api/v2/tables/${tableId}/data`, { raw: '{"a":1e999}' });
    expectRefused(res, /^body\/a: the value is a number too large to represent/);
    expect(res.body.error.details).toMatchObject({ pointer: '/a', problem: 'non-finite number' });
    expectRefused(
      await t.call('POST', '/api/v2/tables', { raw: `{"name":"n","data":[${'9'.repeat(400)}]}` }),
      /^body\/data\/0: the value is a number too large/,
    );
    // 1e310 written as 251 digits and a 2-digit exponent: the raw-text pre-test used to let it
    // through, and it was stored as null.
    expectRefused(
      await t.call('PUT', `/api/v2/tables/${tableId}/data`, { raw: `{"a":1${'0'.repeat(250)}e60}` }),
      /^body\/a: the value is a number too large/,
    );
    expect(await tableData()).toEqual({ a: 1 });
    // Large but finite numbers are fine.
    const big = await t.call('POST', '/api/v2/tables', { raw: '{"name":"big","data":[1e308,-1e-300]}' });
    expect(big.status).toBe(201);
    expect((await t.call('GET', `/api/v2/tables/${big.body.id}`)).body.data).toEqual([1e308, -1e-300]);
  });
});

describe('JSON depth is bounded before anything recurses', () => {
  it('table data nested 10,000 deep: 400, not a crash; PUT 100,000 deep likewise', async () => {
    const deep = await t.call('POST', '/api/v2/tables', { raw: `{"name":"deep","data":${nested(10_000)}}` });
    expectRefused(deep, `JSON nested deeper than ${MAX_BODY_DEPTH} levels`);
    expect(deep.body.error.details).toEqual({ max_depth: MAX_BODY_DEPTH });
    for (const depth of [10_000, 100_000]) {
      expectRefused(
        await t.call('PUT', `/api/v2/tables/${tableId}/data`, { raw: nested(depth) }),
        'JSON nested deeper',
      );
    }
    expect(await tableData()).toEqual({ a: 1 });
    expect((await t.call('GET', '/healthz')).status).toBe(200);
  });

  it('table data has one limit, MAX_JSON_DEPTH, whether it comes in a create or a PUT', async () => {
    const atLimit = nested(MAX_JSON_DEPTH);
    const created = await t.call('POST', '/api/v2/tables', { raw: `{"name":"at-limit","data":${atLimit}}` });
    expect(created.status).toBe(201);
    expect((await t.call('PUT', `/api/v2/tables/${created.body.id}/data`, { raw: atLimit })).status).toBe(
      200,
    );
    const over = nested(MAX_JSON_DEPTH + 1);
    expectRefused(
      await t.call('POST', '/api/v2/tables', { raw: `{"name":"over","data":${over}}` }),
      `nested deeper than the limit of ${MAX_JSON_DEPTH} levels`,
    );
    expectRefused(
      await t.call('PUT', `/api/v2/tables/${created.body.id}/data`, { raw: over }),
      `nested deeper than the limit of ${MAX_JSON_DEPTH} levels`,
    );
  });

  it('a 5,000-deep input-schema override: 400 (the narrowing check used to overflow the stack)', async () => {
    let schema = '{"type":"object"}';
    for (let i = 0; i < 2_500; i++) schema = `{"type":"object","properties":{"a":${schema}}}`;
    expectRefused(
      await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
        raw: `{"adi_id":"${adiId}","input_schema":${schema}}`,
      }),
      'JSON nested deeper',
    );
    expect((await t.call('GET', `/api/v2/aeis/${aeiId}/bindings`)).body.items).toEqual([]);
  });

  it('an override has one limit, alone or in a batch (which nests it a level deeper)', async () => {
    // 33 schemas deep is 65 containers: over MAX_JSON_DEPTH, within the body limit either way.
    let schema: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 32; i++) schema = { type: 'object', properties: { q: schema } };
    const single = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: adiId, input_schema: schema },
    });
    expectRefused(single, `nested deeper than the limit of ${MAX_JSON_DEPTH} levels`);
    const batch = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: [{ adi_id: adiId, input_schema: schema }],
    });
    expectRefused(batch, `nested deeper than the limit of ${MAX_JSON_DEPTH} levels`);
  });

  it('tool arguments nested 10,000 deep: 400 on the internal execute route', async () => {
    const tool = fixture.tools.add!;
    const res = await t.call('POST', `/internal/adi/${tool.adiId}/execute`, {
      token: 'internal-token-for-tests-only',
      raw: `{"aei_id":"${fixture.aeiId}","binding_id":"${tool.bindingId}","request_id":"r","arguments":{"value":${nested(10_000)}}}`,
    });
    expectRefused(res, 'JSON nested deeper');
  });
});

describe('wrong types and media types are refused, never coerced', () => {
  it('name: 123 is 400 (it used to be stored as "123")', async () => {
    const res = await t.call('POST', '/api/v2/tables', { body: { name: 123 } });
    expectRefused(res, 'body/name must be string');
    expect(await tableNames()).not.toContain('123');
    expectRefused(
      await t.call('PATCH', `/api/v2/adis/${adiId}`, { body: { description: false } }),
      /^body\/description must be/,
    );
  });

  it('query strings and params are still read as their types (text parts are coerced)', async () => {
    const page = await t.call('GET', '/api/v2/tables?limit=1');
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(1);
    expectRefused(await t.call('GET', '/api/v2/tables?limit=1.5'), /^querystring\/limit/);
  });

  it('a text/plain body is refused (it used to be stored as a JSON string)', async () => {
    const res = await t.call('PUT', `/api/v2/tables/${tableId}/data`, {
      raw: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expectRefused(res, 'send the body as application/json');
    expect(await tableData()).toEqual({ a: 1 });
  });

  it('prototype poisoning is still refused', async () => {
    expectRefused(
      await t.call('POST', '/api/v2/tables', { raw: '{"name":"p","__proto__":{"admin":true}}' }),
      'not valid JSON',
    );
  });
});

describe('URLs the router cannot read keep the error body', () => {
  it('a percent-escape that is not UTF-8, and an overlong id', async () => {
    expectRefused(await t.call('GET', '/api/v2/tables/%ED%A0%80'), 'percent-escape');
    expectRefused(await t.call('GET', `/api/v2/tables/${'x'.repeat(500)}`), 'longer than any id');
  });
});
