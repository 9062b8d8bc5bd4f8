// Pins how the root user manages users: lists them page by page with what each owns; disabling a
// user turns its tokens away with a 401 naming it, serves its exposures (and legacy instances) to
// gateways as disabled, refuses their tool calls, and tells the gateways at once; enabling brings
// it all back; a delete is refused with the counts while the user owns anything, unless
// ?cascade=true; the root user is never disabled or deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let rootId: string;

beforeAll(async () => {
  t = await startTestApp();
  rootId = (await t.call('GET', '/api/v2/me')).body.id;
});
afterAll(() => t.close());

const keyConfig = (key: string, headers: Record<string, string> = {}) =>
  t.call('GET', `/internal/keys/${key}/config`, { token: INTERNAL_TOKEN, headers });

describe('listing users', () => {
  it('lists every user oldest first, page by page, root included', async () => {
    const made = [await t.newUser('ann'), await t.newUser('ben'), await t.newUser('cy')];
    const first = await t.call('GET', '/api/v2/users?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.items[0]).toMatchObject({ id: rootId, is_root: true, status: 'enabled' });
    expect(first.body.items[1]).toMatchObject({
      id: made[0]!.id,
      name: 'ann',
      is_root: false,
      status: 'enabled',
      disabled_at: null,
    });
    const rest = await t.call('GET', `/api/v2/users?cursor=${first.body.next_cursor}`);
    expect(rest.body.items.map((u: { name: string }) => u.name)).toEqual(['ben', 'cy']);
    expect(rest.body.next_cursor).toBeNull();
  });

  it('shows one user with counts of what it owns', async () => {
    const user = await t.newUser('owner');
    const project = await t.call('POST', '/api/v2/projects', { token: user.token, body: { name: 'P' } });
    await t.call('POST', '/api/v2/tables', {
      token: user.token,
      body: { name: 't', project_id: project.body.id, data: {} },
    });
    const res = await t.call('GET', `/api/v2/users/${user.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: user.id,
      name: 'owner',
      owns: { projects: 1, tables: 1, adis: 0, aeis: 0, legacy_instances: 0 },
    });
  });

  it('answers 404 for an unknown user on every user route', async () => {
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { status: 'disabled' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await t.call(method, '/api/v2/users/usr_nobody', { body });
      expect(res.status, method).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });
});

describe('disabling a user', () => {
  let f: Fixture;
  let userId: string;
  let legacyKey: string;

  beforeAll(async () => {
    f = await buildFixture(
      t,
      { rows: [{ id: 1 }] },
      { peek: { json_path: '/rows', operation_type: 'get_all' } },
    );
    userId = (await t.call('GET', '/api/v2/me', { token: f.token })).body.id;
    const legacy = await t.call('POST', '/api/v1/mcp', {
      token: f.token,
      body: { table_id: f.tableId, json_pointer: '/rows' },
    });
    legacyKey = legacy.body.api_key;
  });

  it('refuses its tokens with a 401 naming the user, and its exposures stop serving', async () => {
    const before = await keyConfig(f.apiKey);
    expect(before.body.config.aei.status).toBe('enabled');
    const etag = before.headers.get('etag');
    t.configChanges.length = 0;

    const res = await t.call('PATCH', `/api/v2/users/${userId}`, { body: { status: 'disabled' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: userId, status: 'disabled' });
    expect(Date.parse(res.body.disabled_at)).toBeGreaterThan(Date.now() - 60_000);
    // The gateways are told at once.
    expect(t.configChanges).toEqual([[f.aeiId]]);

    const me = await t.call('GET', '/api/v2/me', { token: f.token });
    expect(me.status).toBe(401);
    expect(me.body.error.message).toBe(
      `user "executor-user" (${userId}) is disabled; the root admin can enable it again`,
    );

    // The config lookup answers as for a disabled AEI, with a new ETag: a gateway revalidating
    // its cached copy gets the change, not a 304.
    const stale = await keyConfig(f.apiKey, { 'if-none-match': etag! });
    expect(stale.status).toBe(200);
    expect(stale.body.config.aei.status).toBe('disabled');
    expect(stale.body.config.bindings).toEqual([]);
    expect(stale.headers.get('etag')).not.toBe(etag);
    const legacy = await keyConfig(legacyKey);
    expect(legacy.body.config.instance.status).toBe('disabled');

    // A gateway that still holds the old config is refused by the executor.
    const call = toolAnswer(await execute(t, f, 'peek'));
    expect(call.isError).toBe(true);
    expect(call.value.error).toMatchObject({ code: 'FORBIDDEN', message: 'exposure "agent" is disabled' });
  });

  it('disabling twice keeps the first time and tells no one again', async () => {
    const first = await t.call('GET', `/api/v2/users/${userId}`);
    t.configChanges.length = 0;
    const again = await t.call('PATCH', `/api/v2/users/${userId}`, { body: { status: 'disabled' } });
    expect(again.body.disabled_at).toBe(first.body.disabled_at);
    expect(t.configChanges).toEqual([]);
  });

  it('enabling brings the tokens and exposures back', async () => {
    t.configChanges.length = 0;
    const res = await t.call('PATCH', `/api/v2/users/${userId}`, { body: { status: 'enabled' } });
    expect(res.body).toMatchObject({ status: 'enabled', disabled_at: null });
    expect(t.configChanges).toEqual([[f.aeiId]]);
    expect((await t.call('GET', '/api/v2/me', { token: f.token })).status).toBe(200);
    const config = await keyConfig(f.apiKey);
    expect(config.body.config.aei.status).toBe('enabled');
    expect(config.body.config.bindings).toHaveLength(1);
    expect((await keyConfig(legacyKey)).body.config.instance.status).toBe('enabled');
    expect(toolAnswer(await execute(t, f, 'peek')).value).toEqual([{ id: 1 }]);
  });

  it('renames a user without touching its exposures', async () => {
    t.configChanges.length = 0;
    const res = await t.call('PATCH', `/api/v2/users/${userId}`, { body: { name: 'renamed' } });
    expect(res.body).toMatchObject({ name: 'renamed', status: 'enabled' });
    expect(t.configChanges).toEqual([]);
  });
});

describe('deleting a user', () => {
  it('refuses while the user owns data, saying what it owns, and changes nothing', async () => {
    const f = await buildFixture(
      t,
      { rows: [] },
      { peek: { json_path: '/rows', operation_type: 'get_all' } },
    );
    const userId = (await t.call('GET', '/api/v2/me', { token: f.token })).body.id;
    await t.call('POST', '/api/v2/projects', { token: f.token, body: { name: 'P' } });
    await t.call('POST', '/api/v2/tables', { token: f.token, body: { name: 'second' } });
    await t.call('POST', '/api/v1/mcp', { token: f.token, body: { table_id: f.tableId, json_pointer: '' } });

    const res = await t.call('DELETE', `/api/v2/users/${userId}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(res.body.error.details.owns).toEqual({
      projects: 1,
      tables: 2,
      adis: 1,
      aeis: 1,
      legacy_instances: 1,
    });
    expect(res.body.error.message).toBe(
      `user "executor-user" (${userId}) owns 1 project, 2 tables, 1 ADI, 1 AEI and 1 legacy instance; ` +
        'delete those first or pass ?cascade=true',
    );
    expect((await t.call('GET', '/api/v2/me', { token: f.token })).status).toBe(200);
    expect((await keyConfig(f.apiKey)).status).toBe(200);
  });

  it('with ?cascade=true deletes the user and all it owns, tells the gateways, keeps the audit trail', async () => {
    const f = await buildFixture(
      t,
      { rows: [] },
      { peek: { json_path: '/rows', operation_type: 'get_all' } },
    );
    const userId = (await t.call('GET', '/api/v2/me', { token: f.token })).body.id;
    expect(toolAnswer(await execute(t, f, 'peek')).isError).toBe(false);
    const audited = () => t.database.prisma.auditEvent.count({ where: { userId } });
    expect(await audited()).toBe(1);
    t.configChanges.length = 0;

    const res = await t.call('DELETE', `/api/v2/users/${userId}?cascade=true`);
    expect(res.status).toBe(204);
    expect(t.configChanges).toEqual([[f.aeiId]]);
    const me = await t.call('GET', '/api/v2/me', { token: f.token });
    expect(me.status).toBe(401);
    expect(me.body.error.message).toBe('unknown admin token');
    expect((await t.call('GET', `/api/v2/users/${userId}`)).status).toBe(404);
    expect((await keyConfig(f.apiKey)).status).toBe(404);
    const left = await Promise.all([
      t.database.prisma.table.count({ where: { userId } }),
      t.database.prisma.adi.count({ where: { userId } }),
      t.database.prisma.aei.count({ where: { userId } }),
      t.database.prisma.adminToken.count({ where: { userId } }),
    ]);
    expect(left).toEqual([0, 0, 0, 0]);
    expect(await audited()).toBe(1);
  });

  it('deletes a user that owns nothing without cascade', async () => {
    const user = await t.newUser('empty');
    expect((await t.call('DELETE', `/api/v2/users/${user.id}`)).status).toBe(204);
    expect((await t.call('GET', '/api/v2/me', { token: user.token })).status).toBe(401);
  });
});

describe('the root user', () => {
  it('can be neither disabled nor deleted', async () => {
    const disable = await t.call('PATCH', `/api/v2/users/${rootId}`, { body: { status: 'disabled' } });
    expect(disable.status).toBe(403);
    expect(disable.body.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'the root user cannot be disabled',
    });
    const remove = await t.call('DELETE', `/api/v2/users/${rootId}?cascade=true`);
    expect(remove.status).toBe(403);
    expect(remove.body.error.message).toBe('the root user cannot be deleted');
    const me = await t.call('GET', '/api/v2/me');
    expect(me.body).toMatchObject({ id: rootId, status: 'enabled' });
  });
});
