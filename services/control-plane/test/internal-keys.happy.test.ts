// Pins the gateways' one-round-trip key lookup, GET /internal/keys/{api_key}/config: an AEI key
// answers its config v2 with an ETag (If-None-Match gives 304 with no body), a legacy key its v1
// config on either flavour, an unknown key 404 marked `kind: unknown`, and the v1 flavour never
// reveals an AEI; only the internal token opens it; request logs mask the key; the older routes
// still answer. Keys of both kinds have the shape gateways check before any lookup.
import { isWellFormedApiKey, redactApiKeyInUrl } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;
let legacyKey: string;
let legacyId: string;

const lookup = (key: string, query = '', headers: Record<string, string> = {}) =>
  t.call('GET', `/internal/keys/${key}/config${query}`, { token: INTERNAL_TOKEN, headers });

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { customers: [{ id: 1 }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
  const legacy = await t.call('POST', '/api/v1/mcp', {
    token: f.token,
    body: { table_id: f.tableId, json_pointer: '/customers' },
  });
  expect(legacy.status).toBe(201);
  legacyKey = legacy.body.api_key;
  legacyId = legacy.body.id;
});
afterAll(() => t.close());

describe('an AEI key', () => {
  it('answers kind aei with config v2 and its config_version as ETag (default flavour v2)', async () => {
    for (const query of ['', '?flavor=v2']) {
      const res = await lookup(f.apiKey, query);
      expect(res.status).toBe(200);
      expect(res.body.kind).toBe('aei');
      expect(res.body.config.aei).toMatchObject({ id: f.aeiId, status: 'enabled' });
      expect(res.body.config.bindings.map((b: { tool_name: string }) => b.tool_name)).toEqual(['ask']);
      expect(res.headers.get('etag')).toBe(`"${res.body.config.aei.config_version}"`);
    }
  });

  it('answers 304 with no body while the ETag is current, and the new config once it moved', async () => {
    const first = await lookup(f.apiKey);
    const etag = first.headers.get('etag')!;
    const same = await lookup(f.apiKey, '', { 'if-none-match': etag });
    expect(same.status).toBe(304);
    expect(same.body).toBeUndefined();
    expect(same.headers.get('content-length') ?? '0').toBe('0');
    expect(same.headers.get('etag')).toBe(etag);

    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { name: 'renamed' } });
    const moved = await lookup(f.apiKey, '', { 'if-none-match': etag });
    expect(moved.status).toBe(200);
    expect(moved.body.config.aei.name).toBe('renamed');
    expect(moved.headers.get('etag')).not.toBe(etag);
  });

  it('is unknown on the v1 flavour: v1 URLs serve legacy instances only', async () => {
    const res = await lookup(f.apiKey, '?flavor=v1');
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'unknown' } });
  });
});

describe('a legacy key', () => {
  it('answers kind legacy with the v1 config on both flavours', async () => {
    for (const query of ['?flavor=v1', '?flavor=v2']) {
      const res = await lookup(legacyKey, query);
      expect(res.status).toBe(200);
      expect(res.body.kind).toBe('legacy');
      expect(res.body.config.instance).toMatchObject({ id: legacyId, json_path: '/customers' });
      expect(res.body.config.tools.map((x: { name: string }) => x.name)).toContain('query_data');
      expect(res.headers.get('etag')).toBeNull();
    }
  });
});

describe('an unknown key', () => {
  it('answers 404 with kind unknown on both flavours, never the key itself', async () => {
    for (const query of ['', '?flavor=v1']) {
      const res = await lookup('bnd_key_nobody-has-this-one', query);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'unknown' } });
      expect(JSON.stringify(res.body)).not.toContain('nobody-has-this-one');
    }
  });

  it('refuses an unknown flavour', async () => {
    const res = await lookup(f.apiKey, '?flavor=v3');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
  });
});

describe('access', () => {
  it('opens only with the internal token; the older routes still answer', async () => {
    for (const token of [null, f.token, f.apiKey]) {
      const res = await t.call('GET', `/internal/keys/${f.apiKey}/config`, { token });
      expect(res.status).toBe(401);
    }
    const old = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, { token: INTERNAL_TOKEN });
    expect(old.status).toBe(200);
    const oldLegacy = await t.call('GET', `/internal/mcp-instance/${legacyKey}`, { token: INTERNAL_TOKEN });
    expect(oldLegacy.status).toBe(200);
  });

  it('is logged with the key cut to its display prefix', () => {
    expect(redactApiKeyInUrl(`/internal/keys/${f.apiKey}/config?flavor=v1`)).toBe(
      `/internal/keys/${f.apiKey.slice(0, 12)}…/config?flavor=v1`,
    );
  });
});

describe('issued keys', () => {
  it('have the shape gateways check before any lookup, for AEIs, rotations and legacy instances', async () => {
    const rotated = await t.call('POST', `/api/v2/aeis/${f.aeiId}/rotate-key`, { token: f.token });
    expect(rotated.status, JSON.stringify(rotated.body)).toBeLessThan(300);
    for (const key of [f.apiKey, rotated.body.api_key, legacyKey]) {
      expect(isWellFormedApiKey(key), key.slice(0, 12)).toBe(true);
    }
  });
});
