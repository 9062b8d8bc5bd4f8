// Pins the legacy migration end to end (SDK Client -> gateway -> control plane): 100 v1 instances
// migrated in one bulk call all keep their old api_key on the v1 URL and on the v2 URL, listing the
// same tools through MCP as before; calls through either URL run the new bindings and land in the
// AEI's audit trail; the v1 URL serves the AEI itself (its mode, its changes); a v1 session opened
// before the migration keeps working across it; after a rollback the key is the instance's again.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { INTERNAL_TOKEN, OPS_TOKEN, startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let token: string;
let tableId: string;
const instances: { id: string; api_key: string }[] = [];
/** tools/list of each instance's v1 URL before the migration, by instance id. */
const before = new Map<string, Json>();
/** A session on the first instance's v1 URL, opened before the migration. */
let early: Client;

const INSTANCES = 100;

const v1 = (key: string) => `/api/v1/mcp/server/${key}`;
const v2 = (key: string) => `/api/v2/mcp/server/${key}`;

async function listOnce(path: string): Promise<Json> {
  const client = await stack.connect(path);
  try {
    return (await client.listTools()).tools;
  } finally {
    await client.close();
  }
}

/** Runs `work` on every item, `width` at a time. */
async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

async function keyLookup(key: string, flavor: 'v1' | 'v2'): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${stack.controlPlaneUrl}/internal/keys/${key}/config?flavor=${flavor}`, {
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
  });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  stack = await startStack();
  const user = await stack.admin('POST', '/api/v2/users', { name: 'legacy-e2e' });
  token = user.token;
  const table = await stack.admin(
    'POST',
    '/api/v2/tables',
    {
      name: 'crm',
      data: {
        customers: [
          { id: 1, name: 'Ada' },
          { id: 2, name: 'Grace' },
        ],
      },
    },
    token,
  );
  tableId = table.id;
  for (let i = 0; i < INSTANCES; i++) {
    instances.push(
      await stack.admin(
        'POST',
        '/api/v1/mcp',
        {
          table_id: tableId,
          json_pointer: '/customers',
          tools_definition: [
            { name: 'find', operation_type: 'query', description: `Find customers (instance ${i}).` },
            { name: 'peek', operation_type: 'preview' },
          ],
          preview_keys: ['name'],
        },
        token,
      ),
    );
  }
  await inBatches(instances, 4, async (instance) => {
    before.set(instance.id, await listOnce(v1(instance.api_key)));
  });
  early = await stack.connect(v1(instances[0]!.api_key));
  expect(resultJson(await early.callTool({ name: 'find', arguments: { query: '[0].name' } }))).toBe('Ada');
});
afterAll(() => stack.close());

describe('bulk migration of 100 instances', () => {
  let report: Json;

  beforeAll(async () => {
    report = await stack.admin('POST', '/api/v1/mcp/migrate', {}, token);
  });

  it('migrates all of them in one call, never showing a key', () => {
    expect(report).toMatchObject({ migrated: INSTANCES, failed: 0, already_migrated: 0 });
    const text = JSON.stringify(report);
    for (const instance of instances) expect(text).not.toContain(instance.api_key);
  });

  it('a v1 session opened before the migration keeps working at once: the gateway still holds the instance’s config, and its calls run the new bindings, audited under the AEI', async () => {
    const result = await early.callTool({ name: 'find', arguments: { query: '[1].name' } });
    expect(resultJson(result)).toBe('Grace');
    const aeiId = report.items.find((i: Json) => i.instance_id === instances[0]!.id).aei_id;
    const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${aeiId}`, undefined, token);
    expect(audit.items.map((e: Json) => e.tool_name)).toEqual(['find']);
  });

  it('every old key resolves to its AEI on both URL flavours (all 100, through the internal lookup)', async () => {
    await inBatches(instances, 8, async (instance) => {
      const item = report.items.find((i: Json) => i.instance_id === instance.id);
      for (const flavor of ['v1', 'v2'] as const) {
        const found = await keyLookup(instance.api_key, flavor);
        expect(found.status).toBe(200);
        expect(found.body).toMatchObject({
          kind: 'aei',
          config: { aei: { id: item.aei_id, legacy_instance_id: instance.id } },
        });
      }
    });
  });

  it('every old key lists the same tools through MCP on the v1 URL and the v2 URL (all 100)', async () => {
    // The gateway cached every key as a legacy instance's above; drop that, as its TTL would
    // (CONFIG_CACHE_TTL_MS), so these lists come from the AEIs' configs.
    const dropped = await fetch(`${stack.gatewayUrl}/cache/invalidate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ all: true }),
    });
    expect(dropped.status).toBe(200);
    await inBatches(instances, 4, async (instance) => {
      for (const path of [v1(instance.api_key), v2(instance.api_key)]) {
        expect(await listOnce(path), path.slice(0, 24)).toEqual(before.get(instance.id));
      }
    });
  });

  it('the v1 URL serves the AEI itself: switched to progressive mode, it lists the catalog tools', async () => {
    const instance = instances[1]!;
    const aeiId = report.items.find((i: Json) => i.instance_id === instance.id).aei_id;
    await stack.admin('PATCH', `/api/v2/aeis/${aeiId}`, { exposure_mode: 'progressive' }, token);
    await expect
      .poll(async () => (await listOnce(v1(instance.api_key))).map((t: Json) => t.name), { timeout: 5_000 })
      .toContain('initialize_session');
    await stack.admin('PATCH', `/api/v2/aeis/${aeiId}`, { exposure_mode: 'direct' }, token);
    await expect
      .poll(() => listOnce(v1(instance.api_key)), { timeout: 5_000 })
      .toEqual(before.get(instance.id));
  });

  it('calls on either URL run the new bindings and are audited under the AEI', async () => {
    for (const instance of instances.slice(1, 6)) {
      const item = report.items.find((i: Json) => i.instance_id === instance.id);
      for (const path of [v1(instance.api_key), v2(instance.api_key)]) {
        const client = await stack.connect(path);
        const result = await client.callTool({ name: 'peek', arguments: {} });
        expect(resultJson(result)).toMatchObject({ items: [{ name: 'Ada' }, { name: 'Grace' }], total: 2 });
        await client.close();
      }
      const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${item.aei_id}`, undefined, token);
      expect(audit.items).toHaveLength(2);
      expect(audit.items.every((e: Json) => e.tool_name === 'peek' && e.status === 'ok')).toBe(true);
    }
  });

  it('after a rollback the key is the instance’s again, on both URLs', async () => {
    const instance = instances[INSTANCES - 1]!;
    const rolled = await stack.admin('POST', `/api/v1/mcp/${instance.id}/rollback`, {}, token);
    expect(rolled.outcome).toBe('rolled_back');
    expect((await keyLookup(instance.api_key, 'v1')).body.kind).toBe('legacy');
    // The control plane told the gateway to drop the AEI's entry (it was cached for this key):
    // calls find the instance again rather than the deleted AEI's bindings.
    for (const path of [v1(instance.api_key), v2(instance.api_key)]) {
      const client = await stack.connect(path);
      await expect
        .poll(
          async () => (await client.callTool({ name: 'find', arguments: { query: 'length(@)' } })).content,
          {
            timeout: 5_000,
          },
        )
        .toEqual([{ type: 'text', text: '2' }]);
      expect((await client.listTools()).tools).toEqual(before.get(instance.id));
      await client.close();
    }
    const audit = await stack.admin('GET', '/api/v2/audit?limit=2', undefined, token);
    expect(audit.items.map((e: Json) => [e.action, e.aei_id])).toEqual([
      ['legacy.execute', null],
      ['legacy.execute', null],
    ]);
  });
});
