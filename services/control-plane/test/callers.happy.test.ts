// Pins callers and personal MCP keys as their user and a gateway see them: a key is answered once
// (create, rotate), listed without it, and stops working when deleted or rotated; each user gets
// one default profile however many first needs race for it, and a new one after deleting it; a
// caller maps to one of the user's AEIs, and falls back to the default profile when its mapping or
// its AEI goes; the internal caller lookup answers the profile's config v2 with who asked and an
// ETag naming the profile; every remap and key change announces the right AEIs to the gateways;
// calls through a caller entry are audited with their caller and source, filterable by caller; and
// config v2 carries the facts source routing needs (ADI names, upstream slugs and prefixes).
import { fileURLToPath } from 'node:url';
import { PERSONAL_KEY_HEADER, isWellFormedPersonalKey } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultProfile } from '../src/exposure/callers.ts';
import { hashSecret } from '../src/domain/ids.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture } from './support/tools.ts';
import { stdioServerBody } from './support/upstream-servers.ts';

const GATEWAY = 'http://127.0.0.1:4999';
const BIN = fileURLToPath(new URL('../../../packages/bindery-mcp/bin/bindery-mcp.js', import.meta.url));

let t: TestApp;
let alice: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp({ gatewayPublicUrl: GATEWAY, upstreamStdioCommands: ['node'] });
  alice = await t.newUser('alice');
});
afterAll(() => t.close());

const as = (token = alice.token) => ({ token });

/** The gateway's caller lookup with a personal key (and a caller name, when given). */
function lookup(key: string, caller?: string, headers: Record<string, string> = {}) {
  const query = caller === undefined ? '' : `?caller=${encodeURIComponent(caller)}`;
  return t.call('GET', `/internal/callers/config${query}`, {
    token: INTERNAL_TOKEN,
    headers: { [PERSONAL_KEY_HEADER]: key, ...headers },
  });
}

async function newKey(name = 'laptop', token = alice.token) {
  const res = await t.call('POST', '/api/v2/mcp-keys', { token, body: { name } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; name: string; key: string; key_prefix: string };
}

async function newAei(name: string, token = alice.token) {
  const res = await t.call('POST', '/api/v2/aeis', { token, body: { name } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; name: string; api_key: string };
}

async function mapCaller(caller: string, aeiId: string, token = alice.token) {
  const res = await t.call('PUT', `/api/v2/callers/${caller}`, { token, body: { aei_id: aeiId } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** The AEI ids the listener heard from the admin call `act` makes. */
async function announced(act: () => Promise<unknown>): Promise<string[][]> {
  const from = t.configChanges.length;
  await act();
  return t.configChanges.slice(from);
}

const sorted = (ids: string[]) => [...ids].sort();

describe('personal MCP keys', () => {
  it('creates a key answered once, in the documented shape, stored as its SHA-256', async () => {
    const res = await t.call('POST', '/api/v2/mcp-keys', { ...as(), body: { name: 'laptop' } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      ['created_at', 'id', 'key', 'key_prefix', 'last_used_at', 'name'].sort(),
    );
    expect(res.body).toMatchObject({ name: 'laptop', last_used_at: null });
    expect(isWellFormedPersonalKey(res.body.key)).toBe(true);
    expect(res.body.key).toMatch(/^bnd_pk_[A-Za-z0-9_-]{32}$/);
    expect(res.body.key.startsWith(res.body.key_prefix)).toBe(true);
    const row = await t.database.prisma.mcpKey.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.keyHash).toBe(hashSecret(res.body.key));
    expect(JSON.stringify(row)).not.toContain(res.body.key);
  });

  it('lists the caller’s keys with exactly the documented fields, never a key or its hash', async () => {
    const key = await newKey('desktop');
    const res = await t.call('GET', '/api/v2/mcp-keys', as());
    expect(res.status).toBe(200);
    expect(res.body.next_cursor).toBeNull();
    const listed = res.body.items.find((k: { id: string }) => k.id === key.id);
    expect(listed).toEqual({
      id: key.id,
      name: 'desktop',
      key_prefix: key.key_prefix,
      created_at: expect.any(String),
      last_used_at: null,
    });
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(key.key);
    expect(text).not.toContain(hashSecret(key.key));
    const page = await t.call('GET', '/api/v2/mcp-keys?limit=1', as());
    expect(page.body.items).toHaveLength(1);
    expect(page.body.next_cursor).not.toBeNull();
  });

  it('records when a gateway last looked a key up, at most once a minute', async () => {
    const key = await newKey('used');
    expect((await lookup(key.key)).status).toBe(200);
    const first = await t.database.prisma.mcpKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(first.lastUsedAt).not.toBeNull();
    expect((await lookup(key.key)).status).toBe(200);
    const second = await t.database.prisma.mcpKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(second.lastUsedAt).toEqual(first.lastUsedAt);
    const listed = (await t.call('GET', '/api/v2/mcp-keys?limit=200', as())).body.items.find(
      (k: { id: string }) => k.id === key.id,
    );
    expect(listed.last_used_at).toBe(first.lastUsedAt?.toISOString());
  });

  it('rotates a key: same id and name, a new key once, and the old one stops working', async () => {
    const key = await newKey('rotating');
    expect((await lookup(key.key)).status).toBe(200);
    const res = await t.call('POST', `/api/v2/mcp-keys/${key.id}/rotate`, as());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: key.id, name: 'rotating', last_used_at: null });
    expect(isWellFormedPersonalKey(res.body.key)).toBe(true);
    expect(res.body.key).not.toBe(key.key);
    expect(res.body.key.startsWith(res.body.key_prefix)).toBe(true);
    const old = await lookup(key.key);
    expect(old.status).toBe(404);
    expect(old.body.error.details).toEqual({ kind: 'unknown' });
    expect((await lookup(res.body.key)).status).toBe(200);
  });

  it('deletes a key: it stops working at once and leaves the list', async () => {
    const key = await newKey('gone');
    expect((await lookup(key.key)).status).toBe(200);
    const res = await t.call('DELETE', `/api/v2/mcp-keys/${key.id}`, as());
    expect(res.status).toBe(204);
    const after = await lookup(key.key);
    expect(after.status).toBe(404);
    expect(after.body.error).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'unknown' } });
    const listed = await t.call('GET', '/api/v2/mcp-keys?limit=200', as());
    expect(listed.body.items.map((k: { id: string }) => k.id)).not.toContain(key.id);
  });
});

describe('the default profile', () => {
  it('is made at the first need, once, and marked in the AEI body', async () => {
    const carol = await t.newUser('carol');
    expect((await t.call('GET', '/api/v2/aeis', as(carol.token))).body.items).toEqual([]);
    const first = await t.call('GET', '/api/v2/callers', as(carol.token));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      default_profile: { aei_id: expect.stringMatching(/^aei_/), aei_name: 'Default profile' },
      callers: [],
    });
    const again = await t.call('GET', '/api/v2/callers', as(carol.token));
    expect(again.body.default_profile).toEqual(first.body.default_profile);
    const id = first.body.default_profile.aei_id;
    const aei = await t.call('GET', `/api/v2/aeis/${id}`, as(carol.token));
    expect(aei.body).toMatchObject({
      name: 'Default profile',
      status: 'enabled',
      exposure_mode: 'direct',
      default_profile: true,
    });
    const other = await newAei('not the default', carol.token);
    const list = await t.call('GET', '/api/v2/aeis', as(carol.token));
    expect(
      list.body.items.map((a: { id: string; default_profile: boolean }) => [a.id, a.default_profile]),
    ).toEqual([
      [id, true],
      [other.id, false],
    ]);
    // No binding, and its api_key was never shown: its own entry serves nothing until rotated.
    const bindings = await t.call('GET', `/api/v2/aeis/${id}/bindings`, as(carol.token));
    expect(bindings.body.items).toEqual([]);
  });

  it('ends with one default when many first needs race (domain and HTTP)', async () => {
    const dave = await t.newUser('dave');
    const made = await Promise.all(
      Array.from({ length: 8 }, () => defaultProfile(t.database.prisma, dave.id)),
    );
    expect(new Set(made.map((a) => a.id)).size).toBe(1);
    const rows = await t.database.prisma.aei.findMany({ where: { userId: dave.id } });
    expect(rows.map((r) => r.id)).toEqual([made[0]!.id]);

    const erin = await t.newUser('erin');
    const key = await newKey('racing', erin.token);
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => t.call('GET', '/api/v2/callers', as(erin.token))),
      ...Array.from({ length: 4 }, () => lookup(key.key)),
    ]);
    for (const res of answers) expect(res.status).toBe(200);
    const ids = new Set(answers.map((res) => res.body.default_profile?.aei_id ?? res.body.config.aei.id));
    expect(ids.size).toBe(1);
    expect(await t.database.prisma.aei.count({ where: { userId: erin.id } })).toBe(1);
  });

  it('goes with its user, with the user’s keys and mappings', async () => {
    const ivan = await t.newUser('ivan');
    const key = await newKey('ivan', ivan.token);
    const aei = await newAei('mapped', ivan.token);
    await mapCaller('vscode', aei.id, ivan.token);
    expect((await lookup(key.key)).status).toBe(200);
    const res = await t.call('DELETE', `/api/v2/users/${ivan.id}?cascade=true`);
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expect(await t.database.prisma.mcpKey.count({ where: { userId: ivan.id } })).toBe(0);
    expect(await t.database.prisma.callerProfile.count({ where: { userId: ivan.id } })).toBe(0);
    expect(await t.database.prisma.aei.count({ where: { userId: ivan.id } })).toBe(0);
    expect((await lookup(key.key)).status).toBe(404);
  });

  it('may be deleted; the next need makes a new one', async () => {
    const frank = await t.newUser('frank');
    const first = (await t.call('GET', '/api/v2/callers', as(frank.token))).body.default_profile;
    expect((await t.call('DELETE', `/api/v2/aeis/${first.aei_id}`, as(frank.token))).status).toBe(204);
    const user = await t.database.prisma.user.findUniqueOrThrow({ where: { id: frank.id } });
    expect(user.defaultAeiId).toBeNull();
    const second = (await t.call('GET', '/api/v2/callers', as(frank.token))).body.default_profile;
    expect(second.aei_id).not.toBe(first.aei_id);
    expect(second.aei_name).toBe('Default profile');
  });
});

describe('the caller map', () => {
  it('maps a caller to an AEI, lists it, resolves it, and unmaps it back to the default', async () => {
    const crm = await newAei('CRM');
    const put = await t.call('PUT', '/api/v2/callers/vscode', { ...as(), body: { aei_id: crm.id } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      caller: 'vscode',
      aei_id: crm.id,
      aei_name: 'CRM',
      updated_at: expect.any(String),
    });
    const list = await t.call('GET', '/api/v2/callers', as());
    expect(list.body.callers).toEqual([put.body]);
    const mapped = await t.call('GET', '/api/v2/callers/vscode', as());
    expect(mapped.status).toBe(200);
    expect(mapped.body).toMatchObject({ caller: 'vscode', aei_id: crm.id, aei_name: 'CRM', via: 'map' });
    const unmapped = await t.call('GET', '/api/v2/callers/claude', as());
    expect(unmapped.body).toMatchObject({
      caller: 'claude',
      aei_id: list.body.default_profile.aei_id,
      aei_name: 'Default profile',
      via: 'default',
    });
    expect(unmapped.body.stdio_configs.note).toContain('PUT /api/v2/callers/claude');

    expect((await t.call('DELETE', '/api/v2/callers/vscode', as())).status).toBe(204);
    const after = await t.call('GET', '/api/v2/callers/vscode', as());
    expect(after.body).toMatchObject({ via: 'default', aei_id: list.body.default_profile.aei_id });
    expect((await t.call('GET', '/api/v2/callers', as())).body.callers).toEqual([]);
  });

  it('answers the stdio entry’s configs for a caller, with the gateway URL and no key', async () => {
    const res = await t.call('GET', '/api/v2/callers/cursor', as());
    const server = {
      command: 'node',
      args: [BIN, 'cursor'],
      env: { BINDERY_URL: GATEWAY, BINDERY_KEY: '<your personal MCP key: POST /api/v2/mcp-keys>' },
    };
    expect(res.body.stdio_configs).toEqual({
      caller: 'cursor',
      note: expect.stringContaining('default profile'),
      claude_desktop: {
        file: 'claude_desktop_config.json',
        config: { mcpServers: { 'bindery-cursor': server } },
      },
      vscode: {
        file: '.vscode/mcp.json',
        config: { servers: { 'bindery-cursor': { type: 'stdio', ...server } } },
      },
      cursor: { file: '.cursor/mcp.json', config: { mcpServers: { 'bindery-cursor': server } } },
    });
  });

  it('answers stdio configs with an AEI’s key: its name as caller until one is mapped to it', async () => {
    const created = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: 'Support Desk' } });
    expect(created.status).toBe(201);
    expect(created.body.default_profile).toBe(false);
    expect(created.body.stdio_configs).toMatchObject({
      caller: 'support-desk',
      note: expect.stringContaining('PUT /api/v2/callers/support-desk'),
      vscode: {
        config: {
          servers: {
            'bindery-support-desk': { type: 'stdio', command: 'node', args: [BIN, 'support-desk'] },
          },
        },
      },
    });
    expect(JSON.stringify(created.body.stdio_configs)).not.toContain(created.body.api_key);
    await mapCaller('claude', created.body.id);
    const rotated = await t.call('POST', `/api/v2/aeis/${created.body.id}/rotate-key`, as());
    expect(rotated.status).toBe(200);
    expect(rotated.body.stdio_configs).toMatchObject({
      caller: 'claude',
      note: expect.stringContaining('is mapped to this exposure'),
    });
    expect(JSON.stringify(rotated.body.stdio_configs)).not.toContain(rotated.body.api_key);
    await t.call('DELETE', '/api/v2/callers/claude', as());
  });

  it('replaces a mapping; deleting the mapped AEI falls back to the default profile', async () => {
    const one = await newAei('one');
    const two = await newAei('two');
    await mapCaller('zed', one.id);
    const moved = await mapCaller('zed', two.id);
    expect(moved).toMatchObject({ caller: 'zed', aei_id: two.id, aei_name: 'two' });
    expect((await t.call('DELETE', `/api/v2/aeis/${two.id}`, as())).status).toBe(204);
    const res = await t.call('GET', '/api/v2/callers/zed', as());
    expect(res.body).toMatchObject({ via: 'default', aei_name: 'Default profile' });
    const list = await t.call('GET', '/api/v2/callers', as());
    expect(list.body.callers.map((c: { caller: string }) => c.caller)).not.toContain('zed');
  });
});

describe('the internal caller lookup', () => {
  let key: string;
  let crm: { id: string };
  let keyId: string;

  beforeAll(async () => {
    const made = await newKey('gateway');
    key = made.key;
    keyId = made.id;
    crm = await newAei('lookup CRM');
    await mapCaller('vscode', crm.id);
  });

  it('answers the mapped profile’s config v2, who asked, and an ETag naming the profile', async () => {
    const res = await lookup(key, 'vscode');
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe('aei');
    expect(res.body.config.aei).toMatchObject({ id: crm.id, user_id: alice.id, status: 'enabled' });
    expect(res.body.caller).toEqual({ name: 'vscode', via: 'map', key_id: keyId, user_id: alice.id });
    expect(res.headers.get('etag')).toBe(`"${crm.id}.${res.body.config.aei.config_version}.map"`);
  });

  it('answers the default profile, named null, without a caller, and for an unmapped one', async () => {
    const profile = (await t.call('GET', '/api/v2/callers', as())).body.default_profile;
    const none = await lookup(key);
    expect(none.status).toBe(200);
    expect(none.body.config.aei.id).toBe(profile.aei_id);
    expect(none.body.caller).toEqual({ name: null, via: 'default', key_id: keyId, user_id: alice.id });
    const other = await lookup(key, 'some-editor');
    expect(other.body.config.aei.id).toBe(profile.aei_id);
    expect(other.body.caller).toMatchObject({ name: 'some-editor', via: 'default' });
  });

  it('answers 304 with no body while the ETag is current; a remap or a change moves it', async () => {
    const first = await lookup(key, 'vscode');
    const etag = first.headers.get('etag')!;
    const same = await lookup(key, 'vscode', { 'if-none-match': etag });
    expect(same.status).toBe(304);
    expect(same.body).toBeUndefined();
    expect(same.headers.get('etag')).toBe(etag);

    const other = await newAei('lookup other');
    await mapCaller('vscode', other.id);
    const remapped = await lookup(key, 'vscode', { 'if-none-match': etag });
    expect(remapped.status).toBe(200);
    expect(remapped.body.config.aei.id).toBe(other.id);
    const newEtag = remapped.headers.get('etag')!;
    expect(newEtag).not.toBe(etag);
    expect(newEtag.startsWith(`"${other.id}.`)).toBe(true);

    await t.call('PATCH', `/api/v2/aeis/${other.id}`, { ...as(), body: { name: 'renamed' } });
    const changed = await lookup(key, 'vscode', { 'if-none-match': newEtag });
    expect(changed.status).toBe(200);
    expect(changed.body.config.aei.name).toBe('renamed');
    await mapCaller('vscode', crm.id);
  });

  it('serves the profile’s tools with their ADI names', async () => {
    const f = await buildFixture(
      t,
      { customers: [{ id: 1 }] },
      { ask: { json_path: '/customers', operation_type: 'query' } },
    );
    const made = await newKey('fixture', f.token);
    await mapCaller('vscode', f.aeiId, f.token);
    const res = await lookup(made.key, 'vscode');
    expect(res.status).toBe(200);
    const adi = await t.call('GET', `/api/v2/adis/${f.tools.ask!.adiId}`, { token: f.token });
    expect(res.body.config.bindings).toEqual([
      expect.objectContaining({ tool_name: 'ask', adi_name: adi.body.name }),
    ]);
  });
});

describe('gateways are told', () => {
  it('a mapping change announces the profile the caller had and the one it has now', async () => {
    const gina = await t.newUser('gina');
    const profile = (await t.call('GET', '/api/v2/callers', as(gina.token))).body.default_profile.aei_id;
    const a = await newAei('a', gina.token);
    const b = await newAei('b', gina.token);
    expect(await announced(() => mapCaller('vscode', a.id, gina.token))).toEqual([[profile, a.id]]);
    expect(await announced(() => mapCaller('vscode', b.id, gina.token))).toEqual([[a.id, b.id]]);
    expect(await announced(() => t.call('DELETE', '/api/v2/callers/vscode', as(gina.token)))).toEqual([
      [b.id, profile],
    ]);
    // Reading the map or a resolution changes nothing a gateway holds.
    expect(
      await announced(async () => {
        await t.call('GET', '/api/v2/callers', as(gina.token));
        await t.call('GET', '/api/v2/callers/vscode', as(gina.token));
      }),
    ).toEqual([]);
  });

  it('deleting or rotating a key announces every AEI of its user', async () => {
    const hank = await t.newUser('hank');
    const a = await newAei('a', hank.token);
    const b = await newAei('b', hank.token);
    const profile = (await t.call('GET', '/api/v2/callers', as(hank.token))).body.default_profile.aei_id;
    const all = sorted([a.id, b.id, profile]);
    const key = await newKey('k', hank.token);
    const rotated = await announced(() =>
      t.call('POST', `/api/v2/mcp-keys/${key.id}/rotate`, as(hank.token)),
    );
    expect(rotated.map(sorted)).toEqual([all]);
    const deleted = await announced(() => t.call('DELETE', `/api/v2/mcp-keys/${key.id}`, as(hank.token)));
    expect(deleted.map(sorted)).toEqual([all]);
    // Creating a key drops nothing: no gateway holds anything for it yet.
    expect(await announced(() => newKey('new', hank.token))).toEqual([]);
  });
});

describe('audit of calls through a caller entry', () => {
  it('records the caller and the source fields, and filters by caller', async () => {
    const f = await buildFixture(
      t,
      { customers: [{ id: 1 }, { id: 2 }] },
      { ask: { json_path: '/customers', operation_type: 'query' } },
    );
    const tool = f.tools.ask!;
    const execute = (extra: Record<string, unknown>, requestId: string) =>
      t.call('POST', `/internal/adi/${tool.adiId}/execute`, {
        token: INTERNAL_TOKEN,
        body: {
          aei_id: f.aeiId,
          binding_id: tool.bindingId,
          arguments: { query: 'length(@)' },
          request_id: requestId,
          ...extra,
        },
      });
    const viaCaller = await execute(
      { caller: 'vscode', source_hint: 'native', source_used: 'native' },
      'req-caller',
    );
    expect(viaCaller.status).toBe(200);
    expect(viaCaller.body.isError).toBeUndefined();
    expect((await execute({}, 'req-key')).status).toBe(200);

    const all = await t.call('GET', '/api/v2/audit', { token: f.token });
    const byRequest = Object.fromEntries(
      all.body.items.map((e: { request_id: string }) => [e.request_id, e]),
    );
    expect(byRequest['req-caller']).toMatchObject({
      caller: 'vscode',
      source_hint: 'native',
      source_used: 'native',
      status: 'ok',
    });
    expect(byRequest['req-key']).toMatchObject({ caller: null, source_hint: null, source_used: null });

    const filtered = await t.call('GET', '/api/v2/audit?caller=vscode', { token: f.token });
    expect(filtered.status).toBe(200);
    expect(filtered.body.items.map((e: { request_id: string }) => e.request_id)).toEqual(['req-caller']);
    const none = await t.call('GET', '/api/v2/audit?caller=claude', { token: f.token });
    expect(none.body.items).toEqual([]);
    // Another user's rows never show, whatever the filter.
    const theirs = await t.call('GET', '/api/v2/audit?caller=vscode', as());
    expect(theirs.body.items.map((e: { request_id: string }) => e.request_id)).not.toContain('req-caller');
  });
});

describe('source routing facts in config v2', () => {
  it('an upstream tool carries its server’s slug, and the attachment’s prefix when attached', async () => {
    const server = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: stdioServerBody('Source Tools'),
    });
    expect(server.status, JSON.stringify(server.body)).toBe(201);
    const profile = await newAei('sources');
    const attach = await t.call('POST', `/api/v2/aeis/${profile.id}/bindings`, {
      ...as(),
      body: { upstream_server_id: server.body.id, prefix: 'st' },
    });
    expect(attach.status, JSON.stringify(attach.body)).toBe(201);
    const direct = await newAei('direct sources');
    const adis = await t.call(
      'GET',
      `/api/v2/adis?kind=mcp&upstream_server_id=${server.body.id}&limit=100`,
      as(),
    );
    const echo = adis.body.items.find((a: { name: string }) => a.name === 'echo');
    const bound = await t.call('POST', `/api/v2/aeis/${direct.id}/bindings`, {
      ...as(),
      body: { adi_id: echo.id },
    });
    expect(bound.status, JSON.stringify(bound.body)).toBe(201);

    const key = await newKey('sources');
    await mapCaller('attached', profile.id);
    await mapCaller('direct', direct.id);
    const attached = (await lookup(key.key, 'attached')).body.config.bindings;
    const stEcho = attached.find((b: { tool_name: string }) => b.tool_name === 'st_echo');
    expect(stEcho).toMatchObject({
      adi_name: 'echo',
      adi_ref: {
        kind: 'mcp',
        adi_id: echo.id,
        upstream_server_id: server.body.id,
        tool: 'echo',
        upstream_slug: 'source_tools',
        prefix: 'st',
      },
    });
    const [plain] = (await lookup(key.key, 'direct')).body.config.bindings;
    expect(plain).toMatchObject({ adi_name: 'echo', adi_ref: { upstream_slug: 'source_tools' } });
    expect(plain.adi_ref.prefix).toBeUndefined();

    // A resource read through a caller entry is audited with its caller too.
    const read = await t.call('POST', `/internal/aei/${profile.id}/upstream-request`, {
      token: INTERNAL_TOKEN,
      body: {
        upstream_server_id: server.body.id,
        request_id: 'req-caller-read',
        caller: 'attached',
        read_resource: { uri: 'test://greeting' },
      },
    });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.result).toBeDefined();
    const audit = await t.call('GET', '/api/v2/audit?caller=attached', as());
    expect(audit.body.items).toEqual([
      expect.objectContaining({
        action: 'upstream.resource.read',
        request_id: 'req-caller-read',
        caller: 'attached',
      }),
    ]);
  });
});
