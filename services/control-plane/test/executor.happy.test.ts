// Pins the ADI executor as a gateway sees it: every prebuilt operation runs through
// POST /internal/adi/{id}/execute on its own context, writes land in the table and bump its
// version, override defaults apply, config v2 and the legacy config have their documented shapes,
// and each execution is in the owner's audit list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;
const DATA = {
  customers: [
    { id: 1, name: 'Ada', tier: 'gold' },
    { id: 2, name: 'Grace', tier: 'silver' },
    { id: 3, name: 'Linus', tier: 'gold' },
  ],
  archive: [],
  settings: { theme: 'dark', locale: 'en' },
};

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(t, DATA, {
    all: { json_path: '/customers', operation_type: 'get_all' },
    schema: { json_path: '/customers', operation_type: 'get_schema' },
    peek: { json_path: '/customers', operation_type: 'preview', config: { preview_keys: ['id', 'name'] } },
    pick: { json_path: '/customers', operation_type: 'select', config: { id_field: 'id' } },
    ask: { json_path: '/customers', operation_type: 'query' },
    add: { json_path: '/customers', operation_type: 'create' },
    edit: { json_path: '/settings', operation_type: 'update' },
    drop: { json_path: '/customers', operation_type: 'delete' },
    shift: { json_path: '', operation_type: 'move' },
    dup: { json_path: '', operation_type: 'copy' },
  });
});
afterAll(() => t.close());

describe('reads', () => {
  it('get_all answers the context only', async () => {
    expect(toolAnswer(await execute(t, f, 'all'))).toEqual({ isError: false, value: DATA.customers });
  });

  it('get_schema infers the items', async () => {
    const { value } = toolAnswer(await execute(t, f, 'schema'));
    expect(value.type).toBe('array');
    expect(value.items.required).toEqual(['id', 'name', 'tier']);
    expect(value.items.properties.id.type).toBe('integer');
  });

  it('preview projects to preview_keys and pages', async () => {
    const { value } = toolAnswer(await execute(t, f, 'peek', { offset: 1, limit: 1 }));
    expect(value).toEqual({ items: [{ id: 2, name: 'Grace' }], total: 3, offset: 1, limit: 1 });
  });

  it('select finds items by id_field', async () => {
    const { value } = toolAnswer(await execute(t, f, 'pick', { keys: [3, 9] }));
    expect(value).toEqual({ items: [DATA.customers[2]], missing: [9] });
  });

  it('query runs JMESPath on the context', async () => {
    const { value } = toolAnswer(await execute(t, f, 'ask', { query: "[?tier=='gold'].name" }));
    expect(value).toEqual(['Ada', 'Linus']);
  });
});

describe('writes', () => {
  it('create appends, stores, and bumps the version', async () => {
    const before = await tableState(t, f);
    const { value } = toolAnswer(
      await execute(t, f, 'add', { value: { id: 4, name: 'Barbara', tier: 'gold' } }),
    );
    expect(value).toMatchObject({ pointer: '/3', value: { id: 4 }, table_version: before.version + 1 });
    const after = await tableState(t, f);
    expect(after.version).toBe(before.version + 1);
    expect(after.data.customers).toHaveLength(4);
    expect(after.data.settings).toEqual(DATA.settings);
  });

  it('update merges into the context', async () => {
    toolAnswer(await execute(t, f, 'edit', { path: '', value: { locale: 'fr' }, merge: true }));
    expect((await tableState(t, f)).data.settings).toEqual({ theme: 'dark', locale: 'fr' });
  });

  it('move and copy work across the context', async () => {
    const moved = toolAnswer(await execute(t, f, 'shift', { from: '/customers/0', to: '/archive/-' }));
    expect(moved.value).toMatchObject({ from: '/customers/0', to: '/archive/0' });
    toolAnswer(await execute(t, f, 'dup', { from: '/settings', to: '/settings_backup' }));
    const { data } = await tableState(t, f);
    expect(data.archive).toEqual([DATA.customers[0]]);
    expect(data.customers[0].name).toBe('Grace');
    expect(data.settings_backup).toEqual(data.settings);
  });

  it('delete removes and answers the removed value', async () => {
    const { value } = toolAnswer(await execute(t, f, 'drop', { path: '/0' }));
    expect(value).toMatchObject({ pointer: '/0', value: { name: 'Grace' } });
    expect((await tableState(t, f)).data.customers.map((c: { name: string }) => c.name)).toEqual([
      'Linus',
      'Barbara',
    ]);
  });

  it('expected_version: the current one writes, a stale one is CONFLICT and writes nothing', async () => {
    const { version } = await tableState(t, f);
    const stale = toolAnswer(await execute(t, f, 'add', { value: { id: 5 }, expected_version: version - 1 }));
    expect(stale.isError).toBe(true);
    expect(stale.value.error).toMatchObject({ code: 'CONFLICT', details: { current_version: version } });
    expect((await tableState(t, f)).version).toBe(version);
    const fresh = toolAnswer(await execute(t, f, 'add', { value: { id: 5 }, expected_version: version }));
    expect(fresh.value.table_version).toBe(version + 1);
  });
});

describe('binding overrides at execution', () => {
  it('an override default reaches the operation', async () => {
    const res = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.peek!.bindingId}`, {
      token: f.token,
      body: {
        input_schema: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: 2, default: 2 } },
          additionalProperties: false,
        },
      },
    });
    expect(res.status).toBe(200);
    const { value } = toolAnswer(await execute(t, f, 'peek'));
    expect(value.limit).toBe(2);
    expect(value.items).toHaveLength(2);
    const wide = toolAnswer(await execute(t, f, 'peek', { limit: 50 }));
    expect(wide.isError).toBe(true);
    expect(wide.value.error.code).toBe('VALIDATION_FAILED');
    const hidden = toolAnswer(await execute(t, f, 'peek', { offset: 1 }));
    expect(hidden.value.error.code).toBe('VALIDATION_FAILED');
  });
});

describe('config v2', () => {
  it('has the documented shape and an ETag; If-None-Match gives 304', async () => {
    const res = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, { token: INTERNAL_TOKEN });
    expect(res.status).toBe(200);
    expect(res.body.aei).toMatchObject({ id: f.aeiId, status: 'enabled', exposure_mode: 'direct' });
    expect(res.headers.get('etag')).toBe(`"${res.body.aei.config_version}"`);
    const ask = res.body.bindings.find((b: { tool_name: string }) => b.tool_name === 'ask');
    expect(ask).toMatchObject({
      binding_id: f.tools.ask!.bindingId,
      enabled: true,
      // A query may answer any JSON: its structured content carries it under `result`.
      output_schema: expect.objectContaining({ required: ['result'] }),
      app: 'default',
      category: 'crm',
      adi_ref: {
        adi_id: f.tools.ask!.adiId,
        operation_type: 'query',
        table_id: f.tableId,
        json_path: '/customers',
      },
    });
    expect(ask.input_schema.required).toEqual(['query']);
    const again = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, {
      token: INTERNAL_TOKEN,
      headers: { 'if-none-match': res.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
    expect(again.headers.get('content-length') ?? '0').toBe('0');
  });

  it('leaves out disabled bindings and empties a disabled AEI; a change moves the ETag', async () => {
    const before = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, { token: INTERNAL_TOKEN });
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.all!.bindingId}`, {
      token: f.token,
      body: { enabled: false },
    });
    const after = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, {
      token: INTERNAL_TOKEN,
      headers: { 'if-none-match': before.headers.get('etag')! },
    });
    expect(after.status).toBe(200);
    expect(after.body.aei.config_version).toBeGreaterThan(before.body.aei.config_version);
    expect(after.body.bindings.map((b: { tool_name: string }) => b.tool_name)).not.toContain('all');
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'disabled' } });
    const off = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, { token: INTERNAL_TOKEN });
    expect(off.body.aei.status).toBe('disabled');
    expect(off.body.bindings).toEqual([]);
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'enabled' } });
  });

  it('answers 404 for an unknown key', async () => {
    const res = await t.call('GET', '/internal/aei/mcp/bnd_key_nope/config', { token: INTERNAL_TOKEN });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
  });
});

describe('legacy v1', () => {
  it('serves the v1 config and runs v1 tools by name', async () => {
    const created = await t.call('POST', '/api/v1/mcp', {
      token: f.token,
      body: { table_id: f.tableId, json_pointer: '/customers', preview_keys: ['name'] },
    });
    const config = await t.call('GET', `/internal/mcp-instance/${created.body.api_key}`, {
      token: INTERNAL_TOKEN,
    });
    expect(config.status).toBe(200);
    expect(config.body.instance).toMatchObject({
      id: created.body.id,
      json_path: '/customers',
      status: 'enabled',
    });
    expect(config.body.tools.map((x: { name: string }) => x.name)).toContain('preview_data');
    const res = await t.call('POST', `/internal/mcp-instance/${created.body.id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { tool_name: 'preview_data', arguments: { limit: 1 } },
    });
    const { value } = toolAnswer(res);
    expect(value.items).toEqual([{ name: 'Linus' }]);
    const unknown = toolAnswer(
      await t.call('POST', `/internal/mcp-instance/${created.body.id}/execute`, {
        token: INTERNAL_TOKEN,
        body: { tool_name: 'nope' },
      }),
    );
    expect(unknown.value.error.code).toBe('NOT_FOUND');
  });
});

describe('audit', () => {
  it('lists executions newest first with op, status, digest and request id', async () => {
    toolAnswer(await execute(t, f, 'ask', { query: 'length(@)' }));
    const res = await t.call('GET', `/api/v2/audit?aei_id=${f.aeiId}&limit=5`, { token: f.token });
    expect(res.status).toBe(200);
    const [latest] = res.body.items;
    expect(latest).toMatchObject({
      action: 'tool.execute',
      aei_id: f.aeiId,
      binding_id: f.tools.ask!.bindingId,
      adi_id: f.tools.ask!.adiId,
      tool_name: 'ask',
      operation: 'query',
      status: 'ok',
      error_code: null,
      request_id: 'req-ask',
    });
    expect(latest.args_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(latest.duration_ms).toBeGreaterThanOrEqual(0);
    expect(res.body.next_cursor).toBe(res.body.items[4].id);
    const errors = await t.call('GET', '/api/v2/audit?status=error', { token: f.token });
    expect(errors.body.items.length).toBeGreaterThan(0);
    for (const e of errors.body.items) expect(e.error_code).toBeTruthy();
  });
});
