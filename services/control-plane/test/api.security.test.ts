// Pins the admin API's security: every documented route refuses a missing or unknown token, users
// never see or bind each other's resources, only root creates users, and api keys are shown once
// and stored only as SHA-256 hashes; a request with two Host headers, none, or an absolute URL,
// `*` or an authority as its target is refused with 400 before any route.
import { createHash } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { documentedRoutes } from './support/openapi-routes.ts';
import { rawRequest, type RawResponse } from './support/raw-request.ts';

let t: TestApp;
let alice: { id: string; token: string };
let bob: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.newUser('alice');
  bob = await t.newUser('bob');
});
afterAll(() => t.close());

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Admin routes that take no token (each one's own limits say how it is kept safe). */
const TOKENLESS = new Set(['POST /api/v2/sign-in', 'GET /api/v2/sign-in/options']);

describe('auth matrix', () => {
  it('every documented admin route answers 401 without a token and with an unknown one', async () => {
    const documented = (await documentedRoutes(t.baseUrl)).map((r) => [r.method, r.path] as const);
    // The routes without a token: sign-in, which answers one (decision 072), and the ways to sign
    // in the sign-in screen shows (decision 073), which says nothing of anyone.
    const tokenless = documented.filter(([method, path]) => TOKENLESS.has(`${method} ${path}`));
    expect(tokenless).toEqual([
      ['GET', '/api/v2/sign-in/options'],
      ['POST', '/api/v2/sign-in'],
    ]);
    const routes = documented.filter(([method, path]) => !TOKENLESS.has(`${method} ${path}`));
    // 5 resources with CRUD, bindings, users, legacy: the matrix must not silently shrink.
    expect(routes.length).toBeGreaterThanOrEqual(30);
    for (const [method, path] of routes) {
      const url = path.replace(/\{[^}]+\}/g, 'x_1');
      const body = ['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined;
      for (const token of [null, 'bnd_admin_not-a-real-token']) {
        const res = await t.call(method, url, { token, body });
        expect(res.status, `${method} ${path} with token ${token}`).toBe(401);
        expect(res.body.error.code).toBe('UNAUTHORIZED');
      }
    }
  });

  it('a malformed Authorization header is 401, not 500', async () => {
    const res = await t.call('GET', '/api/v2/projects', {
      token: null,
      headers: { authorization: 'Basic abc' },
    });
    expect(res.status).toBe(401);
  });

  it('health and docs need no token', async () => {
    expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${t.baseUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${t.baseUrl}/openapi.json`)).status).toBe(200);
  });
});

describe('users', () => {
  it('only the root token creates users', async () => {
    const res = await t.call('POST', '/api/v2/users', { token: alice.token, body: { name: 'mallory' } });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });

  it('a new user token works and identifies its user', async () => {
    const me = await t.call('GET', '/api/v2/me', { token: alice.token });
    expect(me.body).toMatchObject({ id: alice.id, name: 'alice', is_root: false });
  });
});

describe('isolation between users', () => {
  let aliceTable: string;
  let aliceAdi: string;
  let aliceAei: string;

  beforeAll(async () => {
    aliceTable = (
      await t.call('POST', '/api/v2/tables', { token: alice.token, body: { name: 'secret', data: {} } })
    ).body.id;
    aliceAdi = (
      await t.call('POST', '/api/v2/adis', {
        token: alice.token,
        body: { table_id: aliceTable, json_path: '', operation_type: 'get_all' },
      })
    ).body.id;
    aliceAei = (await t.call('POST', '/api/v2/aeis', { token: alice.token, body: { name: 'a' } })).body.id;
  });

  it("bob cannot bind alice's ADI to his AEI", async () => {
    const bobAei = (await t.call('POST', '/api/v2/aeis', { token: bob.token, body: { name: 'b' } })).body.id;
    const res = await t.call('POST', `/api/v2/aeis/${bobAei}/bindings`, {
      token: bob.token,
      body: { adi_id: aliceAdi },
    });
    expect([403, 404]).toContain(res.status);
    expect(res.body.error.code).toBe(res.status === 403 ? 'FORBIDDEN' : 'NOT_FOUND');
    const list = await t.call('GET', `/api/v2/aeis/${bobAei}/bindings`, { token: bob.token });
    expect(list.body.items).toEqual([]);
  });

  it("bob cannot see, change or delete alice's resources, nor bind to her AEI", async () => {
    for (const path of [
      `/api/v2/tables/${aliceTable}`,
      `/api/v2/adis/${aliceAdi}`,
      `/api/v2/aeis/${aliceAei}`,
    ]) {
      expect((await t.call('GET', path, { token: bob.token })).status).toBe(404);
      expect((await t.call('DELETE', path, { token: bob.token })).status).toBe(404);
    }
    expect(
      (await t.call('PUT', `/api/v2/tables/${aliceTable}/data`, { token: bob.token, body: [] })).status,
    ).toBe(404);
    expect(
      (await t.call('PATCH', `/api/v2/adis/${aliceAdi}`, { token: bob.token, body: { name: 'mine' } }))
        .status,
    ).toBe(404);
    const bobAdi = await t.call('POST', '/api/v2/adis', {
      token: bob.token,
      body: { table_id: aliceTable, json_path: '', operation_type: 'get_all' },
    });
    expect(bobAdi.status).toBe(404);
    const bind = await t.call('POST', `/api/v2/aeis/${aliceAei}/bindings`, {
      token: bob.token,
      body: { adi_id: aliceAdi },
    });
    expect(bind.status).toBe(404);
    // Alice's things are untouched.
    expect((await t.call('GET', `/api/v2/adis/${aliceAdi}`, { token: alice.token })).status).toBe(200);
  });

  it("lists show only the caller's own resources", async () => {
    for (const path of [
      '/api/v2/tables',
      '/api/v2/adis',
      '/api/v2/aeis',
      '/api/v2/projects',
      '/api/v1/mcp',
    ]) {
      const res = await t.call('GET', path, { token: bob.token });
      expect(res.status).toBe(200);
      for (const item of res.body.items) expect([aliceTable, aliceAdi, aliceAei]).not.toContain(item.id);
    }
    const tables = await t.call('GET', '/api/v2/tables', { token: alice.token });
    expect(tables.body.items.map((x: { id: string }) => x.id)).toEqual([aliceTable]);
  });
});

describe('api keys', () => {
  it('an AEI api_key appears in exactly one answer and is stored only as its SHA-256', async () => {
    const created = await t.call('POST', '/api/v2/aeis', { token: alice.token, body: { name: 'keyed' } });
    const key: string = created.body.api_key;
    const answers = [
      await t.call('GET', `/api/v2/aeis/${created.body.id}`, { token: alice.token }),
      await t.call('GET', '/api/v2/aeis', { token: alice.token }),
      await t.call('PATCH', `/api/v2/aeis/${created.body.id}`, {
        token: alice.token,
        body: { name: 'renamed' },
      }),
    ];
    for (const a of answers) expect(JSON.stringify(a.body)).not.toContain(key);

    const rows = await t.database.prisma.$queryRawUnsafe<Record<string, unknown>[]>(
      'SELECT * FROM aei WHERE id = $1',
      created.body.id,
    );
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows[0])).not.toContain(key);
    expect(rows[0]?.api_key_hash).toBe(sha256(key));
    expect(rows[0]?.api_key_prefix).toBe(key.slice(0, 12));
  });

  it('a legacy instance api_key likewise', async () => {
    const created = await t.call('POST', '/api/v1/mcp', {
      token: alice.token,
      body: {
        table_id: (await t.call('POST', '/api/v2/tables', { token: alice.token, body: { name: 'l' } })).body
          .id,
        json_pointer: '',
      },
    });
    expect(created.status).toBe(201);
    const key: string = created.body.api_key;
    expect(created.body.tools_definition.map((d: { name: string }) => d.name)).toContain('query_data');
    const got = await t.call('GET', `/api/v1/mcp/${created.body.id}`, { token: alice.token });
    expect(JSON.stringify(got.body)).not.toContain(key);
    const rows = await t.database.prisma.$queryRawUnsafe<Record<string, unknown>[]>(
      'SELECT * FROM mcp_instance WHERE id = $1',
      created.body.id,
    );
    expect(JSON.stringify(rows[0])).not.toContain(key);
    expect(rows[0]?.api_key_hash).toBe(sha256(key));
  });

  it('admin tokens are stored only hashed too', async () => {
    const rows =
      await t.database.prisma.$queryRawUnsafe<Record<string, unknown>[]>('SELECT * FROM admin_token');
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(alice.token);
    expect(dump).toContain(sha256(alice.token));
  });

  it('a rotated AEI key replaces the stored hash', async () => {
    const created = await t.call('POST', '/api/v2/aeis', { token: alice.token, body: { name: 'rot' } });
    const rotated = await t.call('POST', `/api/v2/aeis/${created.body.id}/rotate-key`, {
      token: alice.token,
    });
    const rows = await t.database.prisma.$queryRawUnsafe<{ api_key_hash: string }[]>(
      'SELECT api_key_hash FROM aei WHERE id = $1',
      created.body.id,
    );
    expect(rows[0]?.api_key_hash).toBe(sha256(rotated.body.api_key));
    expect(rows[0]?.api_key_hash).not.toBe(sha256(created.body.api_key));
  });
});

describe('requests whose framing leaves the host or path in doubt', () => {
  const host = () => new URL(t.baseUrl).host;
  const auth = () => ['authorization', `Bearer ${alice.token}`];

  function expectRefused(res: RawResponse, message: RegExp): void {
    expect(res.status, res.text).toBe(400);
    const body = JSON.parse(res.text);
    expect(body.error.code).toBe('VALIDATION_FAILED');
    expect(body.error.message).toMatch(message);
    expect(typeof body.error.request_id).toBe('string');
  }

  it('two Host headers: 400, on an admin route and on /healthz', async () => {
    // One Host: served (the control for what follows).
    const one = await rawRequest(t.baseUrl, {
      method: 'GET',
      path: '/api/v2/me',
      headers: ['host', host(), ...auth()],
    });
    expect(one.status).toBe(200);
    for (const path of ['/api/v2/me', '/healthz']) {
      const two = await rawRequest(t.baseUrl, {
        method: 'GET',
        path,
        headers: ['host', host(), 'Host', 'evil.example', ...auth()],
      });
      expectRefused(two, /more than one Host header/);
    }
  });

  it('an absolute URL as request target: 400, though its path names a route', async () => {
    for (const path of [
      'http://evil.example/api/v2/me',
      `http://${host()}/healthz`,
      'https://evil.example/openapi.json',
    ]) {
      expectRefused(await rawRequest(t.baseUrl, { method: 'GET', path, headers: auth() }), /absolute URL/);
    }
    const write = await rawRequest(t.baseUrl, {
      method: 'POST',
      path: 'http://evil.example/api/v2/projects',
      headers: [...auth(), 'content-type', 'application/json'],
      body: JSON.stringify({ name: 'through a proxy' }),
    });
    expectRefused(write, /absolute URL/);
    const projects = await t.call('GET', '/api/v2/projects', { token: alice.token });
    expect(JSON.stringify(projects.body)).not.toContain('through a proxy');
  });

  it('HTTP/1.1 without Host, and OPTIONS *: 400 in the one error body', async () => {
    expectRefused(
      await rawRequest(t.baseUrl, { method: 'GET', path: '/healthz', setHost: false, headers: [] }),
      /no Host header/,
    );
    expectRefused(await rawRequest(t.baseUrl, { method: 'OPTIONS', path: '*' }), /not a path/);
  });

  it('CONNECT: 400, not a closed connection', async () => {
    const { port } = new URL(t.baseUrl);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'CONNECT', path: `127.0.0.1:${port}` });
      // node:http hands any answer to CONNECT to this event, with the socket.
      req.on('connect', (res: IncomingMessage, socket: Socket) => {
        socket.destroy();
        resolve(res.statusCode);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(400);
  });
});
