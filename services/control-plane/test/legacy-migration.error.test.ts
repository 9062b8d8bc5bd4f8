// Pins how the legacy migration fails: one instance's migration is all or nothing (a failure half
// way, forced by a database trigger, leaves no AEI, ADI or binding and the key with its instance),
// a bulk call reports failures per instance and migrates the rest, other users' instances are
// NOT_FOUND, a rollback after the AEI was deleted is CONFLICT, and bad requests are 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
let tableId: string;

const lookup = (key: string, flavor: 'v1' | 'v2') =>
  t.call('GET', `/internal/keys/${key}/config?flavor=${flavor}`, { token: INTERNAL_TOKEN });

async function newInstance(tools?: { name: string; operation_type: string }[]) {
  const res = await t.call('POST', '/api/v1/mcp', {
    token: alice.token,
    body: { table_id: tableId, json_pointer: '/items', ...(tools && { tools_definition: tools }) },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; api_key: string; api_key_prefix: string };
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.newUser('alice');
  bob = await t.newUser('bob');
  const table = await t.call('POST', '/api/v2/tables', {
    token: alice.token,
    body: { name: 'stock', data: { items: [1, 2] } },
  });
  tableId = table.body.id;
  // A real failure half way through a migration: the database refuses the binding of one tool
  // name, after the instance, the AEI and the ADIs were written in the same transaction.
  await t.database.prisma.$executeRawUnsafe(`
    CREATE FUNCTION refuse_explode() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.tool_name = 'explode' THEN RAISE EXCEPTION 'refused by the test'; END IF;
      RETURN NEW;
    END $$`);
  await t.database.prisma.$executeRawUnsafe(
    `CREATE TRIGGER refuse_explode BEFORE INSERT ON aei_binding FOR EACH ROW EXECUTE FUNCTION refuse_explode()`,
  );
});
afterAll(() => t.close());

describe('all or nothing per instance', () => {
  it('a migration failing half way leaves nothing behind, and the key with its instance', async () => {
    const bad = await newInstance([
      { name: 'fine', operation_type: 'get_all' },
      { name: 'explode', operation_type: 'query' },
    ]);
    const counts = async () => ({
      aeis: await t.database.prisma.aei.count(),
      adis: await t.database.prisma.adi.count(),
      bindings: await t.database.prisma.aeiBinding.count(),
    });
    const before = await counts();
    const res = await t.call('POST', `/api/v1/mcp/${bad.id}/migrate`, { token: alice.token });
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain('refused by the test');
    expect(await counts()).toEqual(before);
    for (const flavor of ['v1', 'v2'] as const) {
      const found = await lookup(bad.api_key, flavor);
      expect(found.body).toMatchObject({ kind: 'legacy', config: { instance: { id: bad.id } } });
    }
    const shown = await t.call('GET', `/api/v1/mcp/${bad.id}`, { token: alice.token });
    expect(shown.body).toMatchObject({ status: 'enabled', migrated_to_aei_id: null, migrated_at: null });
  });

  it('a bulk call reports the failed instance and migrates the others', async () => {
    const first = await newInstance();
    const bad = await newInstance([{ name: 'explode', operation_type: 'query' }]);
    const last = await newInstance();
    const res = await t.call('POST', '/api/v1/mcp/migrate', {
      token: alice.token,
      body: { ids: [first.id, bad.id, last.id] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ migrated: 2, failed: 1 });
    expect(res.body.items.map((i: { outcome: string }) => i.outcome)).toEqual([
      'migrated',
      'failed',
      'migrated',
    ]);
    expect(res.body.items[1]).toMatchObject({
      instance_id: bad.id,
      aei_id: null,
      error: { code: 'INTERNAL' },
    });
    expect(JSON.stringify(res.body)).not.toContain('refused by the test');
    expect((await lookup(bad.api_key, 'v1')).body.kind).toBe('legacy');
    expect((await lookup(first.api_key, 'v1')).body.kind).toBe('aei');
    expect((await lookup(last.api_key, 'v1')).body.kind).toBe('aei');
  });
});

describe('ownership', () => {
  it("another user's instance is NOT_FOUND, alone or in a bulk call, and stays as it was", async () => {
    const instance = await newInstance();
    const single = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: bob.token });
    expect(single.status).toBe(404);
    expect(single.body.error.code).toBe('NOT_FOUND');
    const rollback = await t.call('POST', `/api/v1/mcp/${instance.id}/rollback`, { token: bob.token });
    expect(rollback.status).toBe(404);
    const bulk = await t.call('POST', '/api/v1/mcp/migrate', {
      token: bob.token,
      body: { ids: [instance.id, 'mcp_nothing'] },
    });
    expect(bulk.body).toMatchObject({ migrated: 0, failed: 2 });
    expect(bulk.body.items[0].error.code).toBe('NOT_FOUND');
    // Bob's "all of mine" is none of Alice's.
    const all = await t.call('POST', '/api/v1/mcp/migrate', { token: bob.token });
    expect(all.body).toMatchObject({ migrated: 0, failed: 0, items: [] });
    expect((await lookup(instance.api_key, 'v1')).body.kind).toBe('legacy');
  });
});

describe('rollback', () => {
  it('is CONFLICT once the AEI was deleted: its key went with it', async () => {
    const instance = await newInstance();
    const migrated = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: alice.token });
    await t.call('DELETE', `/api/v2/aeis/${migrated.body.aei_id}`, { token: alice.token });
    const res = await t.call('POST', `/api/v1/mcp/${instance.id}/rollback`, { token: alice.token });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toContain('deleted');
    const shown = await t.call('GET', `/api/v1/mcp/${instance.id}`, { token: alice.token });
    expect(shown.body).toMatchObject({ status: 'migrated', migrated_to_aei_id: null });
    for (const flavor of ['v1', 'v2'] as const)
      expect((await lookup(instance.api_key, flavor)).status).toBe(404);
    const again = await t.call('POST', `/api/v1/mcp/${instance.id}/migrate`, { token: alice.token });
    expect(again.body.outcome).toBe('already_migrated');
  });
});

describe('bad requests', () => {
  it('are 400 naming the fault', async () => {
    const cases: [string, string, unknown, string][] = [
      ['/api/v1/mcp/migrate', '', { ids: [] }, 'body/ids'],
      ['/api/v1/mcp/migrate', '', { id: ['x'] }, 'body'],
      ['/api/v1/mcp/migrate', '?dry_run=maybe', {}, 'querystring/dry_run'],
      ['/api/v1/mcp/x_1/migrate', '?force=true', undefined, 'querystring'],
    ];
    for (const [path, query, body, where] of cases) {
      const res = await t.call('POST', `${path}${query}`, { token: alice.token, body });
      expect(res.status, `${path}${query}`).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.message.startsWith(where), res.body.error.message).toBe(true);
    }
  });
});
