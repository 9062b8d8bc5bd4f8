// Pins the executor's answers to bad calls, each an isError result with a DESIGN.md code: bad
// JMESPath, results over the size limit, arguments breaking the schema, item_schema violations,
// and a context that no longer exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp({ maxResultBytes: 4096 });
  f = await buildFixture(
    t,
    { rows: Array.from({ length: 200 }, (_, i) => ({ id: i, text: `row ${i} `.repeat(4) })), gone: { x: 1 } },
    {
      ask: { json_path: '/rows', operation_type: 'query' },
      all: { json_path: '/rows', operation_type: 'get_all' },
      add: {
        json_path: '/rows',
        operation_type: 'create',
        config: {
          item_schema: {
            type: 'object',
            required: ['id', 'text'],
            properties: { id: { type: 'integer' }, text: { type: 'string' } },
          },
        },
      },
      lost: { json_path: '/gone', operation_type: 'get_all' },
    },
  );
});
afterAll(() => t.close());

describe('executor errors', () => {
  it('bad JMESPath is INVALID_QUERY', async () => {
    const res = toolAnswer(await execute(t, f, 'ask', { query: '[?id ==' }));
    expect(res).toMatchObject({ isError: true, value: { error: { code: 'INVALID_QUERY' } } });
  });

  it('a result over the limit is RESULT_TOO_LARGE with a hint', async () => {
    const res = toolAnswer(await execute(t, f, 'all'));
    expect(res.value.error.code).toBe('RESULT_TOO_LARGE');
    expect(res.value.error.message).toMatch(/preview|narrower/);
    const small = toolAnswer(await execute(t, f, 'ask', { query: 'length(@)' }));
    expect(small.value).toBe(200);
  });

  it('arguments breaking the schema are VALIDATION_FAILED, naming the argument', async () => {
    const missing = toolAnswer(await execute(t, f, 'ask', {}));
    expect(missing.value.error.code).toBe('VALIDATION_FAILED');
    expect(missing.value.error.message).toContain('query');
    const extra = toolAnswer(await execute(t, f, 'ask', { query: '@', sql: 'drop' }));
    expect(extra.value.error.message).toContain('sql');
  });

  it('a write breaking item_schema is VALIDATION_FAILED and changes nothing', async () => {
    const before = await tableState(t, f);
    const res = toolAnswer(await execute(t, f, 'add', { value: { id: 'not-a-number' } }));
    expect(res.value.error.code).toBe('VALIDATION_FAILED');
    expect(await tableState(t, f)).toEqual(before);
    const ok = toolAnswer(await execute(t, f, 'add', { value: { id: 1000, text: 'fine' } }));
    expect(ok.isError).toBe(false);
  });

  it('a context that was removed from the table is NOT_FOUND', async () => {
    const { data } = await tableState(t, f);
    delete data.gone;
    await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, { token: f.token, body: data });
    const res = toolAnswer(await execute(t, f, 'lost'));
    expect(res.value.error.code).toBe('NOT_FOUND');
    expect(res.value.error.message).toContain('/gone');
  });

  it('a malformed execute request is a 400', async () => {
    const res = await t.call('POST', `/internal/adi/${f.tools.ask!.adiId}/execute`, {
      token: 'internal-token-for-tests-only',
      body: { binding_id: f.tools.ask!.bindingId },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
  });
});
