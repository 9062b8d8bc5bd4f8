// Upstream servers that require OAuth (decision 079), what goes wrong before a person connects:
// settings refused with a clear 400, a server that answers 401 with a Bearer challenge switched to
// OAuth by its first sync, a call of a person who has not connected answered UPSTREAM_AUTH_REQUIRED
// naming the console page (and, for a client that takes URL-mode elicitation, MCP's -32042 pointing
// there), and callbacks the control plane did not start refused. The whole flow with a real
// authorization server is the console's browser test (upstream-oauth.browser.test.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { httpUpstream, type HttpUpstream } from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };
let plain: HttpUpstream;
let guarded: Server;
let guardedUrl: string;
let challenges = 0;

beforeAll(async () => {
  t = await startTestApp({ allowedNetworks: ['127.0.0.1/32'] });
  user = await t.newUser('upstream-oauth');
  plain = await httpUpstream();
  // A server that wants a token for everything, as RFC 9728 servers say it.
  guarded = createServer((req, res) => {
    req.resume();
    challenges += 1;
    const base = `http://127.0.0.1:${(guarded.address() as AddressInfo).port}`;
    res
      .writeHead(401, {
        'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="files:read"`,
      })
      .end();
  });
  await new Promise<void>((resolve) => guarded.listen(0, '127.0.0.1', resolve));
  guardedUrl = `http://127.0.0.1:${(guarded.address() as AddressInfo).port}/mcp`;
}, 60_000);

afterAll(async () => {
  await plain?.close();
  guarded?.close();
  await t?.close();
});

const as = () => ({ token: user.token });
const create = (body: Record<string, unknown>) =>
  t.call('POST', '/api/v2/upstream-servers', { ...as(), body });

describe('settings', () => {
  it('refuses a client secret given in the clear, and one without its client id', async () => {
    const clear = await create({
      name: 'clear',
      transport: 'http',
      url: guardedUrl,
      auth: 'oauth',
      oauth: { client_id: 'bindery', client_secret: 'hunter2-not-a-reference' },
    });
    expect(clear.status).toBe(400);
    expect(clear.body.error.message).toContain('secret reference');
    expect(JSON.stringify(clear.body)).not.toContain('hunter2');
    const alone = await create({
      name: 'alone',
      transport: 'http',
      url: guardedUrl,
      auth: 'oauth',
      oauth: { client_secret: '{{secret.upstream_client}}' },
    });
    expect(alone.status).toBe(400);
    expect(alone.body.error.message).toContain('client_id');
  });

  it('refuses OAuth settings without auth "oauth", and an Authorization header beside OAuth', async () => {
    const without = await create({ name: 'x', transport: 'http', url: guardedUrl, oauth: { scope: 'a' } });
    expect(without.status).toBe(400);
    expect(without.body.error.details.field).toBe('oauth');
    const header = await create({
      name: 'y',
      transport: 'http',
      url: guardedUrl,
      auth: 'oauth',
      headers: { Authorization: 'Bearer {{secret.nope}}' },
    });
    expect(header.status).toBe(400);
    expect(header.body.error.message).toContain('Authorization');
  });
});

describe('a server that answers 401 with a Bearer challenge', () => {
  it('is switched to OAuth by its first sync; its owner is told to connect', async () => {
    const before = challenges;
    const created = await create({ name: 'Guarded files', transport: 'http', url: guardedUrl });
    expect(created.status).toBe(201);
    expect(challenges).toBeGreaterThan(before);
    expect(created.body.auth).toBe('oauth');
    expect(created.body.status).toBe('needs_connection');
    expect(created.body.connection).toMatchObject({ status: 'not_connected', issuer: null, scope: null });
    expect(created.body.last_error).toContain('requires OAuth');
    expect(created.body.tools).toEqual([]);
    // Its sync now says what to do, without reaching the server.
    const seen = challenges;
    const sync = await t.call('POST', `/api/v2/upstream-servers/${created.body.id}/sync`, as());
    expect(sync.status).toBe(403);
    expect(sync.body.error.code).toBe('UPSTREAM_AUTH_REQUIRED');
    expect(sync.body.error.details.connect_url).toBe(
      `${t.baseUrl}/console/tools/upstreams?server=${created.body.id}`,
    );
    expect(challenges).toBe(seen);
    const after = await t.call('GET', `/api/v2/upstream-servers/${created.body.id}`, as());
    expect(after.body.status).toBe('needs_connection');
    expect(after.body.last_error).toContain('connect it in the console');
  });

  it('one with an Authorization header of its own is left as it is (the header may be wrong)', async () => {
    const secret = await t.call('POST', '/api/v2/secrets', {
      ...as(),
      body: { name: 'guarded_token', value: 'tok-guarded-123' },
    });
    expect(secret.status).toBe(201);
    const created = await create({
      name: 'Guarded with header',
      transport: 'http',
      url: guardedUrl,
      headers: { Authorization: 'Bearer {{secret.guarded_token}}' },
    });
    expect(created.status).toBe(201);
    expect(created.body.auth).toBe('none');
    expect(JSON.stringify(created.body)).not.toContain('tok-guarded-123');
  });
});

describe('calls of a person who has not connected', () => {
  let call: (input?: Record<string, unknown>) => Promise<{
    status: number;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: any;
  }>;
  let serverId: string;

  beforeAll(async () => {
    // Synced without OAuth, then switched to it: its tools stay, their calls need a connection.
    const created = await create({ name: 'Notes', transport: 'http', url: plain.url });
    expect(created.status).toBe(201);
    expect(created.body.tool_count).toBeGreaterThan(0);
    serverId = created.body.id;
    const echo = created.body.tools.find((tool: { upstream_name: string }) => tool.upstream_name === 'echo');
    const aei = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: 'notes aei' } });
    const bound = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
      ...as(),
      body: [{ adi_id: echo.adi_id }],
    });
    expect(bound.status).toBe(201);
    const binding = bound.body.items[0];
    const patched = await t.call('PATCH', `/api/v2/upstream-servers/${serverId}`, {
      ...as(),
      body: { auth: 'oauth', oauth: { scope: 'notes:read' } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.auth).toBe('oauth');
    expect(patched.body.oauth).toEqual({ scope: 'notes:read' });
    call = (input) =>
      t.call('POST', `/internal/adi/${binding.adi_id}/execute`, {
        token: INTERNAL_TOKEN,
        body: {
          aei_id: aei.body.id,
          binding_id: binding.id,
          arguments: { text: 'hi' },
          ...(input && { input }),
        },
      });
  });

  it('answer UPSTREAM_AUTH_REQUIRED naming the server and the console page', async () => {
    const answer = await call();
    expect(answer.status).toBe(200);
    expect(answer.body.isError).toBe(true);
    const error = JSON.parse(answer.body.content[0].text).error;
    expect(error.code).toBe('UPSTREAM_AUTH_REQUIRED');
    expect(error.message).toContain('"Notes"');
    expect(error.message).toContain('connect it in the console');
    expect(error.details).toMatchObject({
      upstream: 'Notes',
      server_id: serverId,
      connect_url: `${t.baseUrl}/console/tools/upstreams?server=${serverId}`,
    });
    expect(answer.body.protocol_error).toBeUndefined();
  });

  it('a client that takes URL-mode elicitation gets MCP’s URLElicitationRequiredError pointing there', async () => {
    const answer = await call({ capabilities: { elicitation: true, elicitation_url: true } });
    expect(answer.body.isError).toBe(true);
    expect(answer.body.protocol_error).toMatchObject({
      code: -32042,
      data: {
        elicitations: [
          {
            mode: 'url',
            url: `${t.baseUrl}/console/tools/upstreams?server=${serverId}`,
            elicitationId: expect.any(String),
          },
        ],
      },
    });
    // Form-mode elicitation only: the tool error alone.
    const form = await call({ capabilities: { elicitation: true } });
    expect(form.body.protocol_error).toBeUndefined();
  });

  it('are audited with their code; the connection stays not_connected', async () => {
    const audit = await t.call('GET', '/api/v2/audit?limit=5', as());
    expect(
      audit.body.items.some(
        (row: { error_code: string | null }) => row.error_code === 'UPSTREAM_AUTH_REQUIRED',
      ),
    ).toBe(true);
    const server = await t.call('GET', `/api/v2/upstream-servers/${serverId}`, as());
    expect(server.body.connection.status).toBe('not_connected');
  });

  it('disconnecting a connection that does not exist is no error; connecting a server without OAuth is 409', async () => {
    const gone = await t.call('DELETE', `/api/v2/upstream-servers/${serverId}/oauth/connection`, as());
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ revoked: false });
    const created = await create({ name: 'Plain', transport: 'http', url: plain.url });
    const refused = await t.call('POST', `/api/v2/upstream-servers/${created.body.id}/oauth/connect`, as());
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain('does not require OAuth');
    // Another person's server is not found, connected or not.
    const other = await t.newUser('someone-else');
    const theirs = await t.call('POST', `/api/v2/upstream-servers/${serverId}/oauth/connect`, {
      token: other.token,
    });
    expect(theirs.status).toBe(404);
  });
});

describe('the callback', () => {
  it('refuses a state it did not hand out, and one missing, back on the console with the reason', async () => {
    for (const query of ['?code=abc&state=made-up-state', '?code=abc']) {
      const answer = await t.call('GET', `/api/v2/upstream-oauth/callback${query}`, {
        token: null,
        manualRedirects: true,
      });
      expect(answer.status).toBe(303);
      const location = answer.headers.get('location')!;
      expect(location.startsWith('/console/tools/upstreams?oauth_error=')).toBe(true);
      // A reason the console words itself (a link cannot make it say anything else).
      expect(new URL(location, t.baseUrl).searchParams.get('oauth_error')).toBe('expired');
      expect(answer.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('serves Bindery’s client metadata document', async () => {
    const answer = await t.call('GET', '/api/v2/upstream-oauth/client', { token: null });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      client_id: `${t.baseUrl}/api/v2/upstream-oauth/client`,
      client_name: 'Bindery',
      redirect_uris: [`${t.baseUrl}/api/v2/upstream-oauth/callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
    });
  });
});
