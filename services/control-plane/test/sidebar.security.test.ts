// Pins the sidebar's isolation by walking its route table (every route the app registers under
// /api/v2/sidebar): an api key, a personal MCP key, an exposure's OAuth access token (signed by
// this control plane's own signing key) and another person's sidebar token are refused on every
// route; a sidebar token opens its own session only, never the admin API, and never the person's
// routes (opening sessions, approving, rejecting). It also pins that 32 concurrent proposals and
// tool writes on one table lose no update and that every stale proposal is refused.
import { SignJWT, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSigningKeys } from '../src/oauth/signing-keys.ts';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;
const routes: { method: string; url: string }[] = [];

beforeAll(async () => {
  t = await startTestApp({
    onRoute: (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        if (route.url.startsWith('/api/v2/sidebar') && method !== 'HEAD')
          routes.push({ method, url: route.url });
      }
    },
  });
  f = await buildFixture(
    t,
    { items: [] as number[] },
    { add: { json_path: '/items', operation_type: 'create' } },
  );
});
afterAll(() => t.close());

async function session(token: string) {
  const res = await t.call('POST', '/api/v2/sidebar/sessions', { token, body: {} });
  expect(res.status).toBe(201);
  return res.body as { id: string; token: string };
}

async function command(sessionId: string, line: string, token: string) {
  const res = await t.call('POST', `/api/v2/sidebar/sessions/${sessionId}/commands`, {
    token,
    body: { command: line },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** An access token as the authorization server issues for an exposure, signed with its key. */
async function exposureAccessToken(): Promise<string> {
  const keyring = t.app.domain.keyring;
  if (!keyring) throw new Error('the test app has no keyring');
  const keys = await loadSigningKeys(t.app.domain.prisma, keyring, 86_400_000);
  const jwk = keys.privateKeys[0]!;
  return new SignJWT({ scope: 'mcp', client_id: 'test-client' })
    .setProtectedHeader({ alg: 'ES256', kid: jwk.kid!, typ: 'at+jwt' })
    .setIssuer(t.baseUrl)
    .setSubject(f.userId)
    .setAudience(`http://127.0.0.1:1/api/v2/mcp/aei/${f.aeiId}`)
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(await importJWK(jwk, 'ES256'));
}

/** A body each route would accept from its rightful caller (so only the credential is wrong). */
function bodyFor(route: { method: string; url: string }): unknown {
  if (route.url.endsWith('/commands')) return { command: 'ls' };
  if (route.method === 'PATCH') return { status: 'ended' };
  return route.method === 'POST' ? {} : undefined;
}

describe('sidebar routes', () => {
  it("refuse every credential but the person's own admin token and their own session's token", async () => {
    expect(routes.length).toBeGreaterThanOrEqual(9);
    const own = await session(f.token);
    await command(own.id, 'use crm /items', f.token);
    const proposal = (await command(own.id, 'add / 1', f.token)).proposal;
    const other = await t.newUser('sidebar-other');
    const othersSession = await session(other.token);
    const personalKey = (
      await t.call('POST', '/api/v2/mcp-keys', { token: f.token, body: { name: 'laptop' } })
    ).body.key;
    expect(personalKey).toMatch(/^bnd_/);
    const strangers: Record<string, string> = {
      'an api key': f.apiKey,
      'a personal key': personalKey,
      "an exposure's OAuth token": await exposureAccessToken(),
      "another person's sidebar token": othersSession.token,
    };
    const url = (template: string) =>
      template.replace(':id', template.includes('/proposals/') ? proposal.id : own.id);
    for (const route of routes) {
      for (const [what, token] of Object.entries(strangers)) {
        const res = await t.call(route.method, url(route.url), { token, body: bodyFor(route) });
        // Another person's sidebar token is a valid credential for its own session only.
        const refused = what.startsWith('another') ? [401, 403, 404] : [401];
        expect(refused, `${route.method} ${route.url} with ${what}: ${res.status}`).toContain(res.status);
      }
    }
    // Nothing any of them sent changed the session or its proposal.
    const proposals = await t.call('GET', `/api/v2/sidebar/sessions/${own.id}/proposals`, { token: f.token });
    expect(proposals.body.items.map((p: { status: string }) => p.status)).toEqual(['pending']);
    expect((await t.call('GET', `/api/v2/sidebar/sessions/${own.id}`, { token: f.token })).body.status).toBe(
      'active',
    );
  });

  it("let a session's token drive its own session only, and none of the person's routes", async () => {
    const own = await session(f.token);
    const agent = own.token;
    await command(own.id, 'use crm /items', agent);
    const proposal = (await command(own.id, 'add / 2', agent)).proposal;
    expect(proposal.proposed_by).toBe('agent');
    for (const [method, path] of [
      ['POST', `/api/v2/sidebar/proposals/${proposal.id}/approve`],
      ['POST', `/api/v2/sidebar/proposals/${proposal.id}/reject`],
      ['POST', '/api/v2/sidebar/sessions'],
      ['GET', '/api/v2/sidebar/sessions'],
      ['PATCH', `/api/v2/sidebar/sessions/${own.id}`],
    ] as const) {
      const res = await t.call(method, path, {
        token: agent,
        body: method === 'GET' ? undefined : { status: 'ended' },
      });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    // The admin API does not know a sidebar token.
    for (const path of [
      '/api/v2/tables',
      '/api/v2/users/me',
      `/api/v2/tables/${f.tableId}/rules`,
      '/api/v2/audit',
    ]) {
      expect((await t.call('GET', path, { token: agent })).status, path).toBe(401);
    }
    // Paused by the person: the agent's commands are refused until resumed; ended: its token is dead.
    await t.call('PATCH', `/api/v2/sidebar/sessions/${own.id}`, {
      token: f.token,
      body: { status: 'paused' },
    });
    const paused = await t.call('POST', `/api/v2/sidebar/sessions/${own.id}/commands`, {
      token: agent,
      body: { command: 'ls' },
    });
    expect(paused.status).toBe(403);
    expect(paused.body.error.details.status).toBe('paused');
    await t.call('PATCH', `/api/v2/sidebar/sessions/${own.id}`, {
      token: f.token,
      body: { status: 'ended' },
    });
    const ended = await t.call('GET', `/api/v2/sidebar/sessions/${own.id}`, { token: agent });
    expect(ended.status).toBe(401);
    const list = await t.call('GET', `/api/v2/sidebar/sessions/${own.id}/proposals`, { token: f.token });
    expect(list.body.items[0].status).toBe('withdrawn');
  });
});

describe('event streams', () => {
  it("are counted per side: an agent holding its streams cannot keep the person's out; an ended session's stream ends", async () => {
    const own = await session(f.token);
    const open = (token: string, signal: AbortSignal) =>
      fetch(`${t.baseUrl}/api/v2/sidebar/sessions/${own.id}/events`, {
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
        signal,
      });
    const stop = new AbortController();
    try {
      for (let i = 0; i < 4; i++) expect((await open(own.token, stop.signal)).status).toBe(200);
      expect((await open(own.token, stop.signal)).status).toBe(429);
      const person = await open(f.token, stop.signal);
      expect(person.status).toBe(200);
      // Ending the session ends the streams, after a last event that says so.
      await t.call('PATCH', `/api/v2/sidebar/sessions/${own.id}`, {
        token: f.token,
        body: { status: 'ended' },
      });
      const text = await person.text();
      expect(text).toContain('"status":"ended"');
    } finally {
      stop.abort();
    }
  });
});

describe('32 concurrent proposals and tool writes on one table', () => {
  it('lose no update, and every proposal computed on an older version is refused as stale', async () => {
    const own = await session(f.token);
    await command(own.id, 'use crm /items', f.token);
    const proposals: { id: string; base_version: number }[] = [];
    for (let i = 0; i < 32; i++)
      proposals.push((await command(own.id, `add / ${1000 + i}`, f.token)).proposal);
    const before = (await t.call('GET', `/api/v2/tables/${f.tableId}`, { token: f.token })).body;
    const [approvals, writes] = await Promise.all([
      Promise.all(
        proposals.map((p) =>
          t.call('POST', `/api/v2/sidebar/proposals/${p.id}/approve`, { token: f.token, body: {} }),
        ),
      ),
      Promise.all(
        Array.from({ length: 32 }, (_, i) => execute(t, f, 'add', { value: 2000 + i }).then(toolAnswer)),
      ),
    ]);
    expect(writes.filter((w) => w.isError)).toEqual([]);
    const applied = approvals.filter((a) => a.status === 200);
    const stale = approvals.filter((a) => a.status === 409);
    expect(applied.length + stale.length).toBe(32);
    // All were computed on one version: at most one can apply, and only if it came first.
    expect(applied.length).toBeLessThanOrEqual(1);
    for (const s of stale) expect(s.body.error.details.status).toBe('stale');
    const after = (await t.call('GET', `/api/v2/tables/${f.tableId}`, { token: f.token })).body;
    expect(after.version).toBe(before.version + 32 + applied.length);
    for (let i = 0; i < 32; i++) expect(after.data.items).toContain(2000 + i);
    const added = after.data.items.filter((x: number) => x >= 1000 && x < 1032);
    expect(added).toHaveLength(applied.length);
    // Each stale one was offered again on a newer version.
    for (const s of stale) expect(s.body.error.details.proposal.base_version).toBeGreaterThan(before.version);
  });
});
