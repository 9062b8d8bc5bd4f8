// Pins what the tool-kind seam shows a user of the admin API: an ADI body without `kind` is a
// context ADI (as before kinds), `kind: "context"` says the same; every ADI answers its kind, its
// output schema and its MCP annotations with a title; the tool preview lists the annotations
// clients will see (reads read-only, create not destructive, update/delete idempotent, nothing
// open-world); `?kind=` lists the ADIs of one kind only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type CallResult, type TestApp } from './support/app.ts';

let t: TestApp;
let user: { id: string; token: string };
let tableId: string;

beforeAll(async () => {
  t = await startTestApp();
  user = await t.newUser('kinds');
  const table = await t.call('POST', '/api/v2/tables', {
    token: user.token,
    body: { name: 'CRM', data: { customers: [{ id: 'c1', name: 'Ada' }] } },
  });
  tableId = table.body.id;
});
afterAll(() => t.close());

function ok(res: CallResult, what: string) {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const adi = async (body: Record<string, unknown>, token = user.token) =>
  ok(await t.call('POST', '/api/v2/adis', { token, body: { table_id: tableId, ...body } }), 'adi');

describe('ADI kinds', () => {
  it('an ADI without a kind is a context ADI, described as before plus its annotations', async () => {
    const created = await adi({ json_path: '', operation_type: 'query' });
    expect(created).toMatchObject({
      kind: 'context',
      table_id: tableId,
      json_path: '',
      operation_type: 'query',
      name: expect.stringMatching(/^query_[a-z2-7]{6}$/),
      output_schema: expect.objectContaining({ required: ['result'] }),
      annotations: { title: 'Query CRM', readOnlyHint: true, openWorldHint: false },
      status: 'ok',
    });
    expect(created.input_schema.required).toEqual(['query']);
    const got = ok(await t.call('GET', `/api/v2/adis/${created.id}`, { token: user.token }), 'get');
    expect(got).toEqual(created);
  });

  it('kind "context" given explicitly is the same kind', async () => {
    const created = await adi({ kind: 'context', json_path: '/customers', operation_type: 'preview' });
    expect(created).toMatchObject({
      kind: 'context',
      operation_type: 'preview',
      annotations: { title: 'Preview CRM /customers', readOnlyHint: true },
    });
  });

  it('the tool preview shows each tool’s title and annotations, as tools/list will', async () => {
    const aei = ok(
      await t.call('POST', '/api/v2/aeis', { token: user.token, body: { name: 'hints' } }),
      'aei',
    );
    const ops = ['select', 'create', 'update', 'delete', 'move'];
    for (const op of ops) {
      const created = await adi({ json_path: '/customers', operation_type: op, name: `${op}_customers` });
      ok(
        await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, {
          token: user.token,
          body: { adi_id: created.id },
        }),
        'bind',
      );
    }
    const preview = ok(await t.call('GET', `/api/v2/aeis/${aei.id}/tools`, { token: user.token }), 'tools');
    const byName = Object.fromEntries(
      preview.tools.map((tool: { name: string; title: string; annotations: unknown }) => [
        tool.name,
        { title: tool.title, annotations: tool.annotations },
      ]),
    );
    expect(byName).toEqual({
      select_customers: {
        title: 'Select from CRM /customers',
        annotations: { title: 'Select from CRM /customers', readOnlyHint: true, openWorldHint: false },
      },
      create_customers: {
        title: 'Add to CRM /customers',
        annotations: {
          title: 'Add to CRM /customers',
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: false,
          openWorldHint: false,
        },
      },
      update_customers: {
        title: 'Update CRM /customers',
        annotations: {
          title: 'Update CRM /customers',
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
      delete_customers: {
        title: 'Delete from CRM /customers',
        annotations: {
          title: 'Delete from CRM /customers',
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
      move_customers: {
        title: 'Move within CRM /customers',
        annotations: {
          title: 'Move within CRM /customers',
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: false,
          openWorldHint: false,
        },
      },
    });
  });

  it('?kind= lists the ADIs of that kind only', async () => {
    // No other kind can be created through the API yet: one is written as a newer server would.
    const other = await t.newUser('filter');
    const table = ok(
      await t.call('POST', '/api/v2/tables', { token: other.token, body: { name: 'notes', data: [] } }),
      'table',
    );
    const context = await adi({ table_id: table.id, json_path: '', operation_type: 'get_all' }, other.token);
    await t.database.prisma.adi.create({
      data: {
        id: 'adi_http_from_a_newer_server',
        userId: other.id,
        kind: 'http',
        name: 'call_api',
        config: {},
      },
    });
    const list = async (query: string) =>
      ok(await t.call('GET', `/api/v2/adis${query}`, { token: other.token }), query).items.map(
        (a: { id: string }) => a.id,
      );
    expect(await list('?kind=context')).toEqual([context.id]);
    expect(await list(`?kind=context&table_id=${table.id}`)).toEqual([context.id]);
    expect(await list('?kind=custom')).toEqual([]);
  });
});
