// Pins the legacy migration: a v1 instance becomes one ADI per v1 tool, one AEI holding the same
// api_key (never shown) and inheriting bindings, with the same tool names, descriptions, schemas
// and preview keys; the key then resolves to that AEI on both URL flavours, v1 tool calls run the
// new bindings and are audited under the AEI, the instance shows `migrated`; a second run has
// nothing to do; a dry run writes nothing; a bulk call migrates 100 instances whose keys all keep
// working; a rollback gives the key back to the instance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type CallResult, type TestApp } from './support/app.ts';

let t: TestApp;
let user: { id: string; token: string };
let tableId: string;

const DATA = {
  customers: [
    { id: 1, name: 'Ada', tier: 'gold' },
    { id: 2, name: 'Grace', tier: 'silver' },
  ],
};

const lookup = (key: string, flavor: 'v1' | 'v2') =>
  t.call('GET', `/internal/keys/${key}/config?flavor=${flavor}`, { token: INTERNAL_TOKEN });

const legacyCall = (instanceId: string, tool: string, args: Record<string, unknown> = {}) =>
  t.call('POST', `/internal/mcp-instance/${instanceId}/execute`, {
    token: INTERNAL_TOKEN,
    body: { tool_name: tool, arguments: args, request_id: `legacy-${tool}` },
  });

const answer = (res: CallResult) => {
  expect(res.status).toBe(200);
  return { isError: res.body.isError === true, value: JSON.parse(res.body.content[0].text) };
};

async function newInstance(body: Record<string, unknown> = {}) {
  const res = await t.call('POST', '/api/v1/mcp', {
    token: user.token,
    body: { table_id: tableId, json_pointer: '/customers', ...body },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; api_key: string; api_key_prefix: string };
}

/** The tools a key serves, as a gateway lists them, whatever kind of exposure holds the key. */
async function servedTools(key: string, flavor: 'v1' | 'v2') {
  const res = await lookup(key, flavor);
  expect(res.status, `${flavor} lookup`).toBe(200);
  if (res.body.kind === 'legacy') {
    return res.body.config.tools.map((x: { name: string; description: string; input_schema: unknown }) => ({
      name: x.name,
      description: x.description,
      inputSchema: x.input_schema,
    }));
  }
  return res.body.config.bindings.map(
    (b: { tool_name: string; tool_description: string; input_schema: unknown }) => ({
      name: b.tool_name,
      description: b.tool_description,
      inputSchema: b.input_schema,
    }),
  );
}

beforeAll(async () => {
  t = await startTestApp();
  user = await t.newUser('legacy-owner');
  const table = await t.call('POST', '/api/v2/tables', {
    token: user.token,
    body: { name: 'crm', data: DATA },
  });
  tableId = table.body.id;
});
afterAll(() => t.close());

describe('one instance', () => {
  let instance: { id: string; api_key: string; api_key_prefix: string };
  let before: unknown[];
  let migration: CallResult;

  beforeAll(async () => {
    instance = await newInstance({
      tools_definition: [
        { name: 'find_customers', operation_type: 'query', description: 'Find customers with JMESPath.' },
        { name: 'peek', operation_type: 'preview' },
        { name: 'add_customer', operation_type: 'create' },
      ],
      // v1 took a key twice; the ADI takes it once, with the same previews.
      preview_keys: ['id', 'name', 'id'],
    });
    before = await servedTools(instance.api_key, 'v1');
    migration = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
  });

  it('answers what it created, without the key', () => {
    expect(migration.status).toBe(200);
    expect(migration.body).toMatchObject({
      instance_id: instance.id,
      outcome: 'migrated',
      api_key_prefix: instance.api_key_prefix,
    });
    expect(migration.body.tools.map((x: { tool_name: string }) => x.tool_name)).toEqual([
      'find_customers',
      'peek',
      'add_customer',
    ]);
    expect(migration.body.tools[1].config).toEqual({ preview_keys: ['id', 'name'] });
    expect(JSON.stringify(migration.body)).not.toContain(instance.api_key);
  });

  it('creates ADIs, an AEI with the same key prefix and inheriting bindings of the same user', async () => {
    const aei = await t.call('GET', `/api/v2/aeis/${migration.body.aei_id}`, { token: user.token });
    expect(aei.body).toMatchObject({ status: 'enabled', api_key_prefix: instance.api_key_prefix });
    const bindings = await t.call('GET', `/api/v2/aeis/${aei.body.id}/bindings`, { token: user.token });
    expect(bindings.body.items.map((b: { tool_name: string }) => b.tool_name)).toEqual([
      'find_customers',
      'peek',
      'add_customer',
    ]);
    expect(bindings.body.items.every((b: { tool_name_inherited: boolean }) => b.tool_name_inherited)).toBe(
      true,
    );
    const adi = await t.call('GET', `/api/v2/adis/${migration.body.tools[1].adi_id}`, { token: user.token });
    expect(adi.body).toMatchObject({
      kind: 'context',
      table_id: tableId,
      json_path: '/customers',
      operation_type: 'preview',
      name: 'peek',
      config: { preview_keys: ['id', 'name'] },
    });
  });

  it('serves the same tools with the old key on both URL flavours, as the AEI', async () => {
    for (const flavor of ['v1', 'v2'] as const) {
      const res = await lookup(instance.api_key, flavor);
      expect(res.body.kind).toBe('aei');
      expect(res.body.config.aei).toMatchObject({
        id: migration.body.aei_id,
        legacy_instance_id: instance.id,
      });
      expect(await servedTools(instance.api_key, flavor)).toEqual(before);
    }
  });

  it('shows the instance as migrated in the v1 API, linked to its AEI', async () => {
    const res = await t.call('GET', `/api/v1/mcp/${instance.id}`, { token: user.token });
    expect(res.body).toMatchObject({
      status: 'migrated',
      migrated_to_aei_id: migration.body.aei_id,
      api_key_prefix: instance.api_key_prefix,
    });
    expect(typeof res.body.migrated_at).toBe('string');
  });

  it('runs v1 calls through the new bindings, audited under the AEI', async () => {
    const found = answer(await legacyCall(instance.id, 'find_customers', { query: "[?tier=='gold'].name" }));
    expect(found).toEqual({ isError: false, value: ['Ada'] });
    const peek = answer(await legacyCall(instance.id, 'peek'));
    expect(peek.value.items).toEqual([
      { id: 1, name: 'Ada' },
      { id: 2, name: 'Grace' },
    ]);
    const audit = await t.call('GET', `/api/v2/audit?aei_id=${migration.body.aei_id}`, { token: user.token });
    expect(audit.body.items.map((e: { tool_name: string }) => e.tool_name)).toEqual([
      'peek',
      'find_customers',
    ]);
    expect(audit.body.items[0]).toMatchObject({
      action: 'tool.execute',
      status: 'ok',
      binding_id: migration.body.tools[1].binding_id,
    });
  });

  it('has nothing to do a second time', async () => {
    const again = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      outcome: 'already_migrated',
      aei_id: migration.body.aei_id,
      tools: [],
    });
    const aeis = await t.call('GET', '/api/v2/aeis?limit=200', { token: user.token });
    expect(aeis.body.items.filter((a: { id: string }) => a.id === migration.body.aei_id)).toHaveLength(1);
  });
});

describe('an instance without tools_definition', () => {
  it('becomes one ADI per prebuilt operation under the v1 names and default descriptions', async () => {
    const instance = await newInstance();
    const before = await servedTools(instance.api_key, 'v1');
    const res = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
    expect(res.body.tools).toHaveLength(10);
    expect(res.body.tools.every((x: { description: null }) => x.description === null)).toBe(true);
    expect(await servedTools(instance.api_key, 'v2')).toEqual(before);
    expect(await servedTools(instance.api_key, 'v1')).toEqual(before);
  });
});

describe('a disabled instance', () => {
  it('becomes a disabled AEI', async () => {
    const instance = await newInstance();
    await t.database.prisma.mcpInstance.update({ where: { id: instance.id }, data: { status: 'disabled' } });
    const res = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
    const aei = await t.call('GET', `/api/v2/aeis/${res.body.aei_id}`, { token: user.token });
    expect(aei.body.status).toBe('disabled');
    expect((await lookup(instance.api_key, 'v1')).body.config.aei.status).toBe('disabled');
  });
});

describe('dry run', () => {
  it('reports the plan and writes nothing', async () => {
    const instance = await newInstance({ preview_keys: ['id'] });
    const aeisBefore = await t.database.prisma.aei.count();
    const adisBefore = await t.database.prisma.adi.count();
    const res = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate?dry_run=true`, {
      token: user.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'would_migrate', aei_id: null });
    expect(
      res.body.tools.find((x: { operation_type: string }) => x.operation_type === 'preview'),
    ).toMatchObject({
      tool_name: 'preview_data',
      config: { preview_keys: ['id'] },
      adi_id: null,
      binding_id: null,
    });
    expect(await t.database.prisma.aei.count()).toBe(aeisBefore);
    expect(await t.database.prisma.adi.count()).toBe(adisBefore);
    expect((await lookup(instance.api_key, 'v1')).body.kind).toBe('legacy');
    const shown = await t.call('GET', `/api/v1/mcp/${instance.id}`, { token: user.token });
    expect(shown.body.status).toBe('enabled');
  });
});

describe('rollback', () => {
  it('gives the key back to the instance and removes what the migration made', async () => {
    const instance = await newInstance();
    const migrated = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
    const aeiId = migrated.body.aei_id as string;
    // One of its ADIs is bound elsewhere meanwhile: the rollback keeps that one.
    const other = await t.call('POST', '/api/v2/aeis', { token: user.token, body: { name: 'other' } });
    const keptAdi = migrated.body.tools[0].adi_id as string;
    await t.call('POST', `/api/v2/aeis/${other.body.id}/bindings`, {
      token: user.token,
      body: { adi_id: keptAdi },
    });

    const dry = await t.call('POST', `/api/v1/mcp/${instance.id}/rollback?dry_run=true`, {
      token: user.token,
    });
    expect(dry.body).toMatchObject({ outcome: 'would_roll_back', aei_id: aeiId, kept_adi_ids: [keptAdi] });
    expect(dry.body.deleted_adi_ids).toHaveLength(9);
    expect((await lookup(instance.api_key, 'v1')).body.kind).toBe('aei');

    const changesBefore = t.configChanges.length;
    const res = await t.call('POST', `/api/v1/mcp/${instance.id}/rollback`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'rolled_back', aei_id: aeiId, kept_adi_ids: [keptAdi] });
    expect(t.configChanges.slice(changesBefore)).toContainEqual([aeiId]);

    for (const flavor of ['v1', 'v2'] as const) {
      const found = await lookup(instance.api_key, flavor);
      expect(found.body).toMatchObject({ kind: 'legacy', config: { instance: { id: instance.id } } });
    }
    expect((await t.call('GET', `/api/v2/aeis/${aeiId}`, { token: user.token })).status).toBe(404);
    expect((await t.call('GET', `/api/v2/adis/${keptAdi}`, { token: user.token })).status).toBe(200);
    expect(
      (await t.call('GET', `/api/v2/adis/${dry.body.deleted_adi_ids[0]}`, { token: user.token })).status,
    ).toBe(404);
    const shown = await t.call('GET', `/api/v1/mcp/${instance.id}`, { token: user.token });
    expect(shown.body).toMatchObject({ status: 'enabled', migrated_to_aei_id: null, migrated_at: null });
    expect(answer(await legacyCall(instance.id, 'get_all_data')).value).toEqual(DATA.customers);
    // Audited as the instance's call again, under no AEI.
    const audit = await t.call('GET', '/api/v2/audit?limit=1', { token: user.token });
    expect(
      audit.body.items.map((e: { action: string; aei_id: string | null }) => [e.action, e.aei_id]),
    ).toEqual([['legacy.execute', null]]);

    const again = await t.call('POST', `/api/v1/mcp/${instance.id}/rollback`, { token: user.token });
    expect(again.body.outcome).toBe('not_migrated');
    // And it can be migrated again.
    const remigrated = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
    expect(remigrated.body.outcome).toBe('migrated');
    expect((await lookup(instance.api_key, 'v1')).body.kind).toBe('aei');
  });
});

describe('deleting a migrated instance', () => {
  it('retires its v1 URL; the AEI keeps the key on v2', async () => {
    const instance = await newInstance();
    const migrated = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: user.token });
    const version = (await lookup(instance.api_key, 'v2')).body.config.aei.config_version as number;
    const del = await t.call('DELETE', `/api/v1/mcp/${instance.id}`, { token: user.token });
    expect(del.status).toBe(204);
    expect((await lookup(instance.api_key, 'v1')).status).toBe(404);
    const v2 = await lookup(instance.api_key, 'v2');
    expect(v2.body.config.aei).toMatchObject({
      id: migrated.body.aei_id,
      legacy_instance_id: null,
      config_version: version + 1,
    });
  });
});

describe('bulk', () => {
  // Heavy (100 instances through every step): a generous timeout, so a loaded host does not fail it.
  it('migrates 100 instances in one call; every old key serves the same tools on both flavours', async () => {
    const bulkUser = await t.newUser('bulk-owner');
    const table = await t.call('POST', '/api/v2/tables', {
      token: bulkUser.token,
      body: { name: 'bulk', data: DATA },
    });
    const instances: { id: string; api_key: string }[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await t.call('POST', '/api/v1/mcp', {
        token: bulkUser.token,
        body: {
          table_id: table.body.id,
          json_pointer: '/customers',
          tools_definition: [
            { name: `query_${i}`, operation_type: 'query', description: `Query number ${i}.` },
            { name: 'peek', operation_type: 'preview' },
          ],
          preview_keys: ['name'],
        },
      });
      instances.push(res.body);
    }
    const before = new Map<string, unknown>();
    for (const instance of instances) before.set(instance.id, await servedTools(instance.api_key, 'v1'));

    const dry = await t.call('POST', '/api/v1/mcp/migrate?dry_run=true', { token: bulkUser.token });
    expect(dry.body).toMatchObject({ dry_run: true, would_migrate: 100, migrated: 0, failed: 0 });

    const res = await t.call('POST', '/api/v1/mcp/migrate', { token: bulkUser.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ dry_run: false, migrated: 100, already_migrated: 0, failed: 0 });
    for (const instance of instances) {
      for (const flavor of ['v1', 'v2'] as const) {
        const found = await lookup(instance.api_key, flavor);
        expect(found.body.kind, `${instance.id} on ${flavor}`).toBe('aei');
        expect(await servedTools(instance.api_key, flavor)).toEqual(before.get(instance.id));
      }
    }
    const again = await t.call('POST', '/api/v1/mcp/migrate', {
      token: bulkUser.token,
      body: { ids: instances.map((i) => i.id) },
    });
    expect(again.body).toMatchObject({ migrated: 0, already_migrated: 100, failed: 0 });
  }, 120_000);
});
