// Playground keys (POST /api/v2/aeis/{id}/playground-keys): the answer's shape and URLs, the
// key stored only hashed and shown in no GET answer, at most 10 per AEI (an 11th removes the
// oldest, expired ones go when a new one is made), another user's AEI is 404, the gateways' key
// lookup answers a live key exactly as the AEI's own key (config, ETag, 304) marked `playground`,
// an expired key is unknown (also when revalidated with If-None-Match), and the keys go with
// their AEI. Rotating the AEI's api_key leaves them working; a disabled AEI answers as disabled.
import {
  MAX_PLAYGROUND_KEYS,
  PLAYGROUND_KEY_TTL_SECONDS,
  isWellFormedPlaygroundKey,
} from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, type Fixture } from './support/tools.ts';

const GATEWAY = 'http://127.0.0.1:4999';

let t: TestApp;
let f: Fixture;

const lookup = (key: string, query = '', headers: Record<string, string> = {}) =>
  t.call('GET', `/internal/keys/${key}/config${query}`, { token: INTERNAL_TOKEN, headers });
const create = (aeiId: string, token = f.token) =>
  t.call('POST', `/api/v2/aeis/${aeiId}/playground-keys`, { token });
const rowsOf = (aeiId: string) =>
  t.database.prisma.aeiPlaygroundKey.findMany({ where: { aeiId }, orderBy: { id: 'asc' } });

function expectUnknown(res: { status: number; body: { error?: unknown } }): void {
  expect(res.status).toBe(404);
  expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'unknown' } });
}

beforeAll(async () => {
  t = await startTestApp({ gatewayPublicUrl: GATEWAY });
  f = await buildFixture(
    t,
    { customers: [{ id: 1 }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
});
afterAll(() => t.close());

describe('creating a playground key', () => {
  it('answers 201 with the key, its AEI, its expiry in an hour and the gateway URLs', async () => {
    const before = Date.now();
    const res = await create(f.aeiId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['aei_id', 'api_key', 'expires_at', 'mcp_url', 'rest_url']);
    expect(isWellFormedPlaygroundKey(res.body.api_key)).toBe(true);
    expect(res.body.api_key).toMatch(/^bnd_pg_[A-Za-z0-9_-]{32}$/);
    expect(res.body.aei_id).toBe(f.aeiId);
    const expires = Date.parse(res.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + PLAYGROUND_KEY_TTL_SECONDS * 1000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + PLAYGROUND_KEY_TTL_SECONDS * 1000 + 1000);
    expect(res.body.mcp_url).toBe(`${GATEWAY}/api/v2/mcp/server`);
    expect(res.body.rest_url).toBe(`${GATEWAY}/api/v2/rest`);
    // The same endpoint the AEI's own connection info gives for a Bearer header.
    const rotated = await t.call('POST', `/api/v2/aeis/${f.aeiId}/rotate-key`, { token: f.token });
    expect(rotated.body.mcp_url_header).toBe(res.body.mcp_url);
    f.apiKey = rotated.body.api_key;
  });

  it('stores only the hash of the key', async () => {
    const res = await create(f.aeiId);
    const rows = await rowsOf(f.aeiId);
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain(res.body.api_key);
    expect(JSON.stringify(rows)).not.toContain(res.body.api_key.slice(7));
  });

  it('is 404 for another user’s AEI and for no AEI, 401 without a token', async () => {
    const other = await t.newUser('someone-else');
    const theirs = await create(f.aeiId, other.token);
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe('NOT_FOUND');
    expect(JSON.stringify(theirs.body)).not.toContain('api_key');
    expect((await create('aei_doesnotexist', f.token)).status).toBe(404);
    expect((await t.call('POST', `/api/v2/aeis/${f.aeiId}/playground-keys`, { token: null })).status).toBe(
      401,
    );
  });

  it(`keeps the newest ${MAX_PLAYGROUND_KEYS} of an AEI: an 11th removes the oldest`, async () => {
    const aei = await t.call('POST', '/api/v2/aeis', { token: f.token, body: { name: 'capped' } });
    const keys: string[] = [];
    for (let i = 0; i < MAX_PLAYGROUND_KEYS + 2; i++) {
      const res = await create(aei.body.id);
      expect(res.status).toBe(201);
      keys.push(res.body.api_key);
    }
    expect(await rowsOf(aei.body.id)).toHaveLength(MAX_PLAYGROUND_KEYS);
    expectUnknown(await lookup(keys[0]!));
    expectUnknown(await lookup(keys[1]!));
    for (const key of keys.slice(2)) expect((await lookup(key)).status).toBe(200);
  });

  it('deletes the AEI’s expired keys when a new one is made', async () => {
    const aei = await t.call('POST', '/api/v2/aeis', { token: f.token, body: { name: 'sweeping' } });
    await create(aei.body.id);
    await create(aei.body.id);
    await t.database.prisma.aeiPlaygroundKey.updateMany({
      where: { aeiId: aei.body.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const fresh = await create(aei.body.id);
    const rows = await rowsOf(aei.body.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.expiresAt.toISOString()).toBe(fresh.body.expires_at);
  });
});

describe('the gateways’ key lookup', () => {
  it('answers a live key with the AEI’s own config and ETag, marked playground', async () => {
    const key = await create(f.aeiId);
    const own = await lookup(f.apiKey);
    const res = await lookup(key.body.api_key);
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe('aei');
    expect(res.body.config).toEqual(own.body.config);
    expect(res.headers.get('etag')).toBe(own.headers.get('etag'));
    expect(res.body.playground).toEqual({ expires_at: key.body.expires_at });
    expect(own.body.playground).toBeUndefined();
    // Revalidation works as for the AEI's key: 304 while current, the new config once it moved.
    const etag = res.headers.get('etag')!;
    const same = await lookup(key.body.api_key, '', { 'if-none-match': etag });
    expect(same.status).toBe(304);
    expect(same.body).toBeUndefined();
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { name: 'renamed' } });
    const moved = await lookup(key.body.api_key, '', { 'if-none-match': etag });
    expect(moved.status).toBe(200);
    expect(moved.body.config.aei.name).toBe('renamed');
    expect(moved.headers.get('etag')).toBe((await lookup(f.apiKey)).headers.get('etag'));
  });

  it('is unknown on the v1 flavour, and for a key of the right shape nobody holds', async () => {
    const key = await create(f.aeiId);
    expectUnknown(await lookup(key.body.api_key, '?flavor=v1'));
    expectUnknown(await lookup(`bnd_pg_${'A'.repeat(32)}`));
    expectUnknown(await lookup('bnd_pg_short'));
  });

  it('answers an expired key as unknown, also when revalidated with If-None-Match', async () => {
    const key = await create(f.aeiId);
    const live = await lookup(key.body.api_key);
    const etag = live.headers.get('etag')!;
    expect(live.status).toBe(200);
    const ids = (await rowsOf(f.aeiId)).map((r) => r.id);
    // The newest row is this key's (ids sort by creation time).
    await t.database.prisma.aeiPlaygroundKey.update({
      where: { id: ids[ids.length - 1]! },
      data: { expiresAt: new Date(Date.now() - 1) },
    });
    expectUnknown(await lookup(key.body.api_key));
    for (const ifNoneMatch of [etag, '*', `W/${etag}`]) {
      const res = await lookup(key.body.api_key, '', { 'if-none-match': ifNoneMatch });
      expectUnknown(res);
      expect(res.headers.get('etag')).toBeNull();
    }
  });

  it('keeps working after the AEI’s api_key is rotated; a disabled AEI answers as disabled', async () => {
    const key = await create(f.aeiId);
    const rotated = await t.call('POST', `/api/v2/aeis/${f.aeiId}/rotate-key`, { token: f.token });
    f.apiKey = rotated.body.api_key;
    expect((await lookup(key.body.api_key)).status).toBe(200);
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'disabled' } });
    const own = await lookup(f.apiKey);
    const res = await lookup(key.body.api_key);
    expect(res.status).toBe(200);
    expect(res.body.config).toEqual(own.body.config);
    expect(res.body.config.aei.status).toBe('disabled');
    expect(res.body.config.bindings).toEqual([]);
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'enabled' } });
  });
});

describe('the key elsewhere', () => {
  it('appears in no GET answer', async () => {
    const key = (await create(f.aeiId)).body.api_key as string;
    const random = key.slice('bnd_pg_'.length);
    for (const path of [
      '/api/v2/aeis',
      `/api/v2/aeis/${f.aeiId}`,
      `/api/v2/aeis/${f.aeiId}/tools`,
      `/api/v2/aeis/${f.aeiId}/bindings`,
      '/api/v2/audit',
      '/api/v2/callers',
      '/api/v2/mcp-keys',
      '/api/v2/export',
    ]) {
      const res = await t.call('GET', path, { token: f.token });
      expect(res.status, path).toBeLessThan(500);
      expect(JSON.stringify(res.body), path).not.toContain(random);
    }
  });

  it('goes with its AEI', async () => {
    const aei = await t.call('POST', '/api/v2/aeis', { token: f.token, body: { name: 'short-lived' } });
    const key = await create(aei.body.id);
    expect((await lookup(key.body.api_key)).status).toBe(200);
    expect(await rowsOf(aei.body.id)).toHaveLength(1);
    expect((await t.call('DELETE', `/api/v2/aeis/${aei.body.id}`, { token: f.token })).status).toBe(204);
    expect(await rowsOf(aei.body.id)).toHaveLength(0);
    expectUnknown(await lookup(key.body.api_key));
  });
});
