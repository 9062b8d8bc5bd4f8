// Pins how the admin API answers bad input: the one error body, the right status, and nothing
// half-written (duplicate names, bad pointers, unknown ops and ids, bad JSON, oversize bodies,
// stale If-Match, schema overrides that widen the canonical schema, unknown fields, empty ids and
// constraints the database enforces).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapError } from '../src/http/error-handler.ts';
import { startTestApp, type CallResult, type TestApp } from './support/app.ts';

let t: TestApp;
let tableId: string;
let adiId: string;
let aeiId: string;

beforeAll(async () => {
  t = await startTestApp({ bodyLimitBytes: 64 * 1024 });
  tableId = (await t.call('POST', '/api/v2/tables', { body: { name: 'things', data: { items: [] } } })).body
    .id;
  adiId = (
    await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '/items', operation_type: 'preview' },
    })
  ).body.id;
  aeiId = (await t.call('POST', '/api/v2/aeis', { body: { name: 'x' } })).body.id;
});
afterAll(() => t.close());

function expectError(res: CallResult, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.request_id).toBeTruthy();
}

describe('admin API errors', () => {
  it('409 on a tool_name already used in the AEI, and the AEI keeps only the first', async () => {
    const other = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '/items', operation_type: 'get_all' },
    });
    const first = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: adiId, tool_name: 'peek' },
    });
    expect(first.status).toBe(201);
    const dup = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: other.body.id, tool_name: 'peek' },
    });
    expectError(dup, 409, 'CONFLICT');
    expect(dup.body.error.message).toContain('peek');
    const again = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, { body: { adi_id: adiId } });
    expectError(again, 409, 'CONFLICT');
    const list = await t.call('GET', `/api/v2/aeis/${aeiId}/bindings`);
    expect(list.body.items).toHaveLength(1);
  });

  it('a batch with one bad item binds nothing', async () => {
    const a = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '', operation_type: 'get_schema' },
    });
    const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: [{ adi_id: a.body.id }, { adi_id: 'adi_does_not_exist' }],
    });
    expectError(res, 404, 'NOT_FOUND');
    const list = await t.call('GET', `/api/v2/aeis/${aeiId}/bindings`);
    expect(list.body.items).toHaveLength(1);
    const twice = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: [
        { adi_id: a.body.id, tool_name: 'same' },
        { adi_id: adiId, tool_name: 'same' },
      ],
    });
    expectError(twice, 409, 'CONFLICT');
  });

  it('renaming an ADI into a name taken in one of its AEIs is refused, naming the AEI', async () => {
    const b = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '/items', operation_type: 'query' },
    });
    await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, { body: { adi_id: b.body.id } });
    const res = await t.call('PATCH', `/api/v2/adis/${b.body.id}`, { body: { name: 'peek' } });
    expectError(res, 409, 'CONFLICT');
    expect(res.body.error.details.aei_ids).toEqual([aeiId]);
    const still = await t.call('GET', `/api/v2/adis/${b.body.id}`);
    expect(still.body.name).toBe(b.body.name);
  });

  it('400 on a tool_name that breaks the pattern', async () => {
    const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: adiId, tool_name: 'has space' },
    });
    expectError(res, 400, 'VALIDATION_FAILED');
  });

  it('400 on an invalid JSON Pointer, naming the field', async () => {
    const res = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: 'items', operation_type: 'query' },
    });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.message).toContain('json_path');
    const tilde = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '/a~2b', operation_type: 'query' },
    });
    expectError(tilde, 400, 'VALIDATION_FAILED');
  });

  it('400 on an unknown operation type', async () => {
    const res = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '', operation_type: 'drop_table' },
    });
    expectError(res, 400, 'VALIDATION_FAILED');
  });

  it('400 on an op config key the op does not take', async () => {
    const res = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '', operation_type: 'query', config: { preview_keys: ['id'] } },
    });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.message).toContain('preview_keys');
  });

  it('400 on an unknown body field, naming it', async () => {
    const res = await t.call('PATCH', `/api/v2/adis/${adiId}`, { body: { operation_type: 'delete' } });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.message).toContain('operation_type');
  });

  it('404 on unknown ids and unknown routes', async () => {
    expectError(await t.call('GET', '/api/v2/tables/tbl_nope'), 404, 'NOT_FOUND');
    expectError(await t.call('GET', '/api/v2/aeis/aei_nope/tools'), 404, 'NOT_FOUND');
    expectError(
      await t.call('POST', '/api/v2/adis', {
        body: { table_id: 'tbl_nope', json_path: '', operation_type: 'query' },
      }),
      404,
      'NOT_FOUND',
    );
    expectError(await t.call('GET', '/api/v2/nothing-here'), 404, 'NOT_FOUND');
  });

  it('400 on a body that is not JSON', async () => {
    const res = await t.call('POST', '/api/v2/projects', { raw: '{"name": "oops",' });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.message).toMatch(/not valid JSON/);
  });

  it('413 on an oversized body, and the table is unchanged', async () => {
    const big = { items: Array.from({ length: 5000 }, (_, i) => ({ id: i, text: 'x'.repeat(20) })) };
    const res = await t.call('PUT', `/api/v2/tables/${tableId}/data`, { body: big });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    const table = await t.call('GET', `/api/v2/tables/${tableId}`);
    expect(table.body.data).toEqual({ items: [] });
  });

  it('412 when If-Match names an old version, and the data is unchanged', async () => {
    const res = await t.call('PUT', `/api/v2/tables/${tableId}/data`, {
      body: { items: [1] },
      headers: { 'if-match': '"99"' },
    });
    expectError(res, 412, 'PRECONDITION_FAILED');
    expect(res.body.error.details.current_version).toBe(1);
    const bad = await t.call('PUT', `/api/v2/tables/${tableId}/data`, {
      body: { items: [1] },
      headers: { 'if-match': 'yesterday' },
    });
    expectError(bad, 400, 'VALIDATION_FAILED');
  });

  it('400 on an input_schema override wider than the canonical schema, naming the property', async () => {
    const c = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '/items', operation_type: 'select' },
    });
    const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: {
        adi_id: c.body.id,
        input_schema: {
          type: 'object',
          properties: { sql: { type: 'string' } },
          additionalProperties: false,
        },
      },
    });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.message).toContain('sql');
  });

  it('409 on a duplicate project slug; 409 deleting a project that holds tables', async () => {
    const p = await t.call('POST', '/api/v2/projects', { body: { name: 'Sales' } });
    expectError(await t.call('POST', '/api/v2/projects', { body: { name: 'sales!' } }), 409, 'CONFLICT');
    await t.call('POST', '/api/v2/tables', { body: { name: 'leads', project_id: p.body.id } });
    expectError(await t.call('DELETE', `/api/v2/projects/${p.body.id}`), 409, 'CONFLICT');
  });

  it('400 on a bad query parameter', async () => {
    expectError(await t.call('GET', '/api/v2/projects?limit=100000'), 400, 'VALIDATION_FAILED');
  });

  it('400 naming project_id on project_id "" in a table\'s create or update, never a 500', async () => {
    const create = await t.call('POST', '/api/v2/tables', { body: { name: 'empty-ref', project_id: '' } });
    expectError(create, 400, 'VALIDATION_FAILED');
    expect(create.body.error.message).toContain('project_id');
    const patch = await t.call('PATCH', `/api/v2/tables/${tableId}`, { body: { project_id: '' } });
    expectError(patch, 400, 'VALIDATION_FAILED');
    expect(patch.body.error.message).toContain('project_id');
    expect((await t.call('GET', `/api/v2/tables/${tableId}`)).body.project_id).toBeNull();
  });

  it('a constraint the checks before a statement miss answers a 4xx naming the field', async () => {
    const db = t.app.domain.prisma;
    const refusal = async (statement: Promise<unknown>) => {
      const error = await statement.then(
        () => expect.fail('the database took it'),
        (e: Error) => e,
      );
      return mapError(error);
    };
    const me = (await db.user.findFirst({ where: { isRoot: true } }))!.id;
    // An id that names nothing (the 500 of project_id "" before).
    expect(
      await refusal(
        db.table.create({ data: { id: 'tbl_fk', userId: me, name: 'x', projectId: 'prj_none' } }),
      ),
    ).toMatchObject({ code: 'NOT_FOUND', details: { field: 'project_id' } });
    expect(
      await refusal(db.$executeRaw`UPDATE "table" SET "project_id" = 'prj_none' WHERE "id" = ${tableId}`),
    ).toMatchObject({ code: 'NOT_FOUND', details: { field: 'project_id' } });
    // A duplicate a check would race with.
    await db.project.create({ data: { id: 'prj_dup1', userId: me, name: 'Dup', slug: 'dup' } });
    const duplicate = await refusal(
      db.project.create({ data: { id: 'prj_dup2', userId: me, name: 'Dup', slug: 'dup' } }),
    );
    expect(duplicate).toMatchObject({ code: 'CONFLICT', details: { field: 'slug' } });
    expect(duplicate?.message).not.toContain('project_user_id_slug_key');
  });
});
