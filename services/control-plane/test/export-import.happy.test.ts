// Pins export and import: the export is one versioned document of the caller's projects, tables
// with data, ADIs, AEIs (no keys, no hashes), bindings and prompts; importing it into a fresh installation
// (a second control plane on its own database) gives every AEI the same tools/list and config
// (new ids, new keys shown once), with the data behind the tools; exporting again gives the same
// document; a dry run writes nothing; importing where the names are taken renames by the rule;
// every ADI travels with its kind, and a document from before tool kinds (no kind) imports its
// ADIs as context ADIs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type CallResult, type TestApp } from './support/app.ts';

// Answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let source: TestApp;
let target: TestApp;
let owner: { id: string; token: string };
/** The source's AEIs: id -> api_key. */
const sourceKeys = new Map<string, string>();

function ok(res: CallResult, what: string): Json {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function build(t: TestApp, token: string): Promise<void> {
  const post = async (path: string, body: unknown) => ok(await t.call('POST', path, { token, body }), path);
  const crm = await post('/api/v2/projects', {
    name: 'CRM',
    slug: 'crm',
    description: 'Customers and orders',
  });
  const ops = await post('/api/v2/projects', { name: 'Ops' });
  const customers = await post('/api/v2/tables', {
    name: 'customers',
    project_id: crm.id,
    data: {
      list: [
        { id: 1, name: 'Ada', tier: 'gold' },
        { id: 2, name: 'Grace', tier: 'silver' },
      ],
    },
  });
  const stock = await post('/api/v2/tables', {
    name: 'stock',
    project_id: ops.id,
    data: [{ sku: 'a', n: 3 }],
  });
  const notes = await post('/api/v2/tables', { name: 'notes', data: { text: 'hello', tags: ['x'] } });
  // Rules travel with their table (the re-export below finds them again).
  const rules = {
    protect: [{ path: '/tags', deny: ['delete'] }],
    schema: { type: 'object', required: ['text'] },
  };
  ok(await t.call('PUT', `/api/v2/tables/${notes.id}/rules`, { token, body: rules }), 'rules');
  const empty = await post('/api/v2/tables', { name: 'nothing', data: null });
  const query = await post('/api/v2/adis', {
    table_id: customers.id,
    json_path: '/list',
    operation_type: 'query',
    description: 'Query customers.',
    category: 'people',
  });
  const preview = await post('/api/v2/adis', {
    table_id: customers.id,
    json_path: '/list',
    operation_type: 'preview',
    config: { preview_keys: ['id', 'name'] },
  });
  const select = await post('/api/v2/adis', {
    table_id: customers.id,
    json_path: '/list',
    operation_type: 'select',
    name: 'pick_customers',
    config: { id_field: 'id' },
  });
  const create = await post('/api/v2/adis', {
    table_id: customers.id,
    json_path: '/list',
    operation_type: 'create',
    config: { item_schema: { type: 'object', required: ['id'] } },
  });
  const stockAll = await post('/api/v2/adis', {
    table_id: stock.id,
    json_path: '',
    operation_type: 'get_all',
  });
  const notesSchema = await post('/api/v2/adis', {
    table_id: notes.id,
    json_path: '',
    operation_type: 'get_schema',
  });
  await post('/api/v2/adis', { table_id: empty.id, json_path: '', operation_type: 'get_all' });
  const direct = await post('/api/v2/aeis', { name: 'agent' });
  const progressive = await post('/api/v2/aeis', {
    name: 'catalog',
    exposure_mode: 'progressive',
    catalog_search: true,
  });
  const off = await post('/api/v2/aeis', { name: 'off', status: 'disabled' });
  for (const aei of [direct, progressive, off]) sourceKeys.set(aei.id, aei.api_key);
  await post(`/api/v2/aeis/${direct.id}/bindings`, [
    { adi_id: query.id, tool_name: 'find_customers' },
    { adi_id: preview.id, tool_description: 'Peek at customers.' },
    {
      adi_id: select.id,
      input_schema: {
        type: 'object',
        properties: { keys: { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 5 } },
        required: ['keys'],
        additionalProperties: false,
      },
    },
    { adi_id: create.id, enabled: false },
    { adi_id: stockAll.id, tool_name: 'stock' },
    { adi_id: notesSchema.id },
  ]);
  await post(`/api/v2/aeis/${progressive.id}/bindings`, [{ adi_id: query.id }, { adi_id: stockAll.id }]);
  await post(`/api/v2/aeis/${off.id}/bindings`, [{ adi_id: notesSchema.id }]);
  await post(`/api/v2/aeis/${direct.id}/prompts`, {
    name: 'review',
    title: 'Review a customer',
    arguments: [{ name: 'customer', required: true, choices: ['Ada', 'Grace'] }],
    messages: [{ role: 'user', text: 'Review {{customer}}.' }],
  });
  // Legacy instances: a migrated one travels as its AEI, the other is counted as skipped.
  const migrated = await post('/api/v1/mcp', { table_id: notes.id, json_pointer: '/tags' });
  await post(`/api/v1/mcp/${migrated.id}/migrate`, undefined);
  const aeis = ok(await t.call('GET', '/api/v2/aeis', { token }), 'aeis').items as Json[];
  const fromV1 = aeis.find((a) => a.name.includes(migrated.id));
  sourceKeys.set(fromV1.id, migrated.api_key);
  await post('/api/v1/mcp', { table_id: stock.id, json_pointer: '' });
}

/** Config v2 of a key without what differs between installations (ids, versions, the v1 link). */
async function portableConfig(t: TestApp, key: string): Promise<Json> {
  const res = ok(
    await t.call('GET', `/internal/keys/${key}/config`, { token: INTERNAL_TOKEN }),
    'key lookup',
  );
  expect(res.kind).toBe('aei');
  const { aei, bindings, prompts } = res.config;
  return {
    prompts,
    aei: {
      name: aei.name,
      status: aei.status,
      exposure_mode: aei.exposure_mode,
      catalog_search: aei.catalog_search,
    },
    bindings: bindings.map((b: Json) => ({
      tool_name: b.tool_name,
      tool_description: b.tool_description,
      input_schema: b.input_schema,
      output_schema: b.output_schema,
      enabled: b.enabled,
      app: b.app,
      app_name: b.app_name,
      category: b.category,
      operation_type: b.adi_ref.operation_type,
      json_path: b.adi_ref.json_path,
      adi_config: b.adi_ref.adi_config,
    })),
  };
}

let exported: Json;
let exportResponse: CallResult;

beforeAll(async () => {
  source = await startTestApp();
  target = await startTestApp();
  owner = await source.newUser('exporter');
  await build(source, owner.token);
  exportResponse = await source.call('GET', '/api/v2/export', { token: owner.token });
  exported = exportResponse.body;
});
afterAll(async () => {
  await source.close();
  await target.close();
});

describe('export', () => {
  it('is one versioned document of everything the caller has, as an attachment', () => {
    expect(exportResponse.status).toBe(200);
    expect(exportResponse.headers.get('content-disposition')).toMatch(
      /^attachment; filename="bindery-export-/,
    );
    expect(exported).toMatchObject({ format: 'bindery-export', version: 1 });
    expect(exported.projects.map((p: Json) => p.slug)).toEqual(['crm', 'ops']);
    expect(exported.tables.map((t: Json) => t.name)).toEqual(['customers', 'stock', 'notes', 'nothing']);
    expect(exported.tables[0].data.list[0]).toEqual({ id: 1, name: 'Ada', tier: 'gold' });
    expect(exported.tables[3].data).toBeNull();
    expect(exported.adis).toHaveLength(7 + 10);
    expect(exported.adis.map((a: Json) => a.kind)).toEqual(Array(17).fill('context'));
    expect(exported.aeis.map((a: Json) => a.name).slice(0, 3)).toEqual(['agent', 'catalog', 'off']);
    expect(exported.bindings).toHaveLength(6 + 2 + 1 + 10);
    expect(exported.bindings[0]).toEqual({
      aei_id: exported.aeis[0].id,
      adi_id: exported.adis[0].id,
      tool_name: 'find_customers',
      tool_description: null,
      input_schema: null,
      enabled: true,
    });
    expect(exported.bindings[1].tool_name).toBeNull();
    expect(exported.skipped).toEqual({ legacy_instances: 1 });
  });

  it('carries no api key, no key hash and no key prefix', async () => {
    const text = JSON.stringify(exported);
    const aeis = ok(await source.call('GET', '/api/v2/aeis', { token: owner.token }), 'aeis').items;
    for (const aei of aeis) expect(text).not.toContain(aei.api_key_prefix);
    for (const key of sourceKeys.values()) expect(text).not.toContain(key);
    const hashes = await source.database.prisma.aei.findMany({ select: { apiKeyHash: true } });
    for (const { apiKeyHash } of hashes) expect(text).not.toContain(apiKeyHash);
    expect(text).not.toMatch(/api_key|key_hash/);
  });
});

describe('import into a fresh installation', () => {
  let importer: { id: string; token: string };
  let imported: CallResult;

  beforeAll(async () => {
    importer = await target.newUser('importer');
  });

  it('a dry run reports what it would create and writes nothing', async () => {
    const before = await target.database.prisma.table.count();
    const res = await target.call('POST', '/api/v2/import?dry_run=true', {
      token: importer.token,
      body: exported,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      dry_run: true,
      created: { projects: 2, tables: 4, adis: 17, aeis: 4, bindings: 19, prompts: 1 },
      id_map: {},
      clashes: [],
    });
    expect(res.body.aeis.every((a: Json) => a.id === null && a.api_key === undefined)).toBe(true);
    expect(await target.database.prisma.table.count()).toBe(before);
    for (const list of ['projects', 'tables', 'adis', 'aeis']) {
      const page = await target.call('GET', `/api/v2/${list}`, { token: importer.token });
      expect(page.body.items, list).toEqual([]);
    }
  });

  it('creates everything with new ids and answers each AEI’s new key once', async () => {
    imported = await target.call('POST', '/api/v2/import', { token: importer.token, body: exported });
    expect(imported.status).toBe(201);
    expect(imported.body).toMatchObject({ dry_run: false, clashes: [] });
    expect(imported.body.aeis).toHaveLength(4);
    for (const aei of imported.body.aeis) {
      expect(aei.api_key).toMatch(/^bnd_key_/);
      expect(aei.api_key.startsWith(aei.api_key_prefix)).toBe(true);
      expect(aei.id).toBe(imported.body.id_map[aei.source_id]);
      expect(aei.id).not.toBe(aei.source_id);
    }
    const shown = await target.call('GET', `/api/v2/aeis/${imported.body.aeis[0].id}`, {
      token: importer.token,
    });
    expect(JSON.stringify(shown.body)).not.toContain(imported.body.aeis[0].api_key);
  });

  it('gives every AEI the same tools/list and the same config (apart from ids)', async () => {
    for (const aei of imported.body.aeis) {
      const oldKey = sourceKeys.get(aei.source_id)!;
      expect(await portableConfig(target, aei.api_key), aei.name).toEqual(
        await portableConfig(source, oldKey),
      );
      const before = await source.call('GET', `/api/v2/aeis/${aei.source_id}/tools`, { token: owner.token });
      const after = await target.call('GET', `/api/v2/aeis/${aei.id}/tools`, { token: importer.token });
      expect(after.body, aei.name).toEqual(before.body);
    }
    const direct = await target.call('GET', `/api/v2/aeis/${imported.body.aeis[0].id}/tools`, {
      token: importer.token,
    });
    expect(direct.body.tools.map((t: Json) => t.name)).toEqual([
      'find_customers',
      expect.stringMatching(/^preview_/),
      'pick_customers',
      'stock',
      expect.stringMatching(/^get_schema_/),
    ]);
  });

  it('the tools read the imported data', async () => {
    const aei = imported.body.aeis[0];
    const config = await target.call('GET', `/internal/keys/${aei.api_key}/config`, {
      token: INTERNAL_TOKEN,
    });
    const binding = config.body.config.bindings[0];
    const res = await target.call('POST', `/internal/adi/${binding.adi_ref.adi_id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: aei.id, binding_id: binding.binding_id, arguments: { query: "[?tier=='gold'].name" } },
    });
    expect(JSON.parse(res.body.content[0].text)).toEqual(['Ada']);
  });

  it('exporting again gives the same document, ids apart', async () => {
    const again = ok(await target.call('GET', '/api/v2/export', { token: importer.token }), 'export');
    const back = new Map(
      Object.entries(imported.body.id_map as Record<string, string>).map(([a, b]) => [b, a]),
    );
    const text = JSON.stringify({ ...again, exported_at: null }).replace(
      /"((?:prj|tbl|adi|aei)_[0-9a-z]{26})"/g,
      (whole, id: string) => (back.has(id) ? `"${back.get(id)}"` : whole),
    );
    expect(exported.tables.find((t: { name: string }) => t.name === 'notes').rules).toMatchObject({
      protect: [{ path: '/tags', deny: ['delete'] }],
    });
    const { skipped, ...original } = exported;
    expect(skipped).toEqual({ legacy_instances: 1 });
    expect(JSON.parse(text)).toEqual({ ...original, exported_at: null });
  });
});

describe('a document written before tool kinds', () => {
  it('imports its ADIs (which name no kind) as context ADIs with the same tools', async () => {
    const older = structuredClone(exported);
    for (const adi of older.adis) delete adi.kind;
    const reader = await target.newUser('older-document');
    const res = await target.call('POST', '/api/v2/import', { token: reader.token, body: older });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const adis = ok(await target.call('GET', '/api/v2/adis?limit=200', { token: reader.token }), 'adis');
    expect(adis.items.map((a: Json) => a.kind)).toEqual(Array(17).fill('context'));
    const copy = res.body.aeis[0];
    const tools = await target.call('GET', `/api/v2/aeis/${copy.id}/tools`, { token: reader.token });
    const original = await source.call('GET', `/api/v2/aeis/${copy.source_id}/tools`, { token: owner.token });
    expect(tools.body).toEqual(original.body);
  });
});

describe('import where the names are taken', () => {
  it('imports clashing projects, loose tables and AEIs as "name (2)", keeping tool names', async () => {
    const res = await source.call('POST', '/api/v2/import', { token: owner.token, body: exported });
    expect(res.status).toBe(201);
    const clashes = res.body.clashes.map((c: Json) => [c.kind, c.name, c.imported_name, c.imported_slug]);
    expect(clashes).toEqual([
      ['project', 'CRM', 'CRM (2)', 'crm-2'],
      ['project', 'Ops', 'Ops (2)', 'ops-2'],
      ['table', 'notes', 'notes (2)', undefined],
      ['table', 'nothing', 'nothing (2)', undefined],
      ['aei', 'agent', 'agent (2)', undefined],
      ['aei', 'catalog', 'catalog (2)', undefined],
      ['aei', 'off', 'off (2)', undefined],
      ['aei', exported.aeis[3].name, `${exported.aeis[3].name} (2)`, undefined],
    ]);
    // Tables inside the imported projects do not clash: those projects are new.
    const tables = ok(await source.call('GET', '/api/v2/tables?limit=200', { token: owner.token }), 'tables');
    expect(tables.items.filter((t: Json) => t.name === 'customers')).toHaveLength(2);
    const copy = res.body.aeis[0];
    expect(copy.name).toBe('agent (2)');
    const tools = await source.call('GET', `/api/v2/aeis/${copy.id}/tools`, { token: owner.token });
    const original = await source.call('GET', `/api/v2/aeis/${copy.source_id}/tools`, { token: owner.token });
    expect(tools.body.tools.map((t: Json) => t.name)).toEqual(original.body.tools.map((t: Json) => t.name));

    // A third import takes the next free number.
    const third = await source.call('POST', '/api/v2/import?dry_run=true', {
      token: owner.token,
      body: exported,
    });
    expect(third.body.clashes[0]).toMatchObject({ imported_name: 'CRM (3)', imported_slug: 'crm-3' });
  });
});
