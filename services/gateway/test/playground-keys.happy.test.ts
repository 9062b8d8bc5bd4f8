// Playground keys through the real gateway: a key made with the admin API
// (POST /api/v2/aeis/{id}/playground-keys) serves the AEI on its answer's mcp_url with the SDK's
// Client (Bearer header), from a browser origin too, and on its rest_url; every call it makes is
// audited with the caller "@console" (tool calls and resource reads), the AEI's own key's are not;
// v1 URLs never serve it. CORS: a preflight from an allowed origin is answered with that origin
// and the allowed headers (MCP endpoints and REST entry, not ops routes), a disallowed origin gets
// no CORS headers and its actual request is still refused. The gateway's cache stops serving a
// playground key at its expiry, without asking the control plane and never stale.
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../src/http/cors.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHash } from '../src/control-plane/exposure-cache.ts';
import { resultJson, twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { postInitialize } from './support/fixtures.ts';
import { standaloneCache } from './support/cache.ts';
import { startStack, type Stack } from './support/stack.ts';

/** A page's origin the gateway allows (on an allowed host, any port), as a console would have. */
const CONSOLE_ORIGIN = 'http://127.0.0.1:4321';
const EVIL_ORIGIN = 'http://evil.test';

let stack: Stack;
let user: Exposed;

/** A new playground key of the user's AEI, as the admin API answers it. */
async function playgroundKey(): Promise<{
  api_key: string;
  aei_id: string;
  expires_at: string;
  mcp_url: string;
  rest_url: string;
}> {
  return stack.admin('POST', `/api/v2/aeis/${user.aeiId}/playground-keys`, undefined, user.token);
}

/** An SDK client on `url` with `headers`; `seen` collects every answer's headers. */
async function connect(url: string, headers: Record<string, string>, seen: Headers[] = []): Promise<Client> {
  const client = new Client({ name: 'playground-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      seen.push(res.headers);
      return res;
    },
  });
  await client.connect(transport);
  return client;
}

const preflight = (path: string, origin: string, method = 'POST') =>
  fetch(`${stack.gatewayUrl}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type,mcp-session-id,mcp-protocol-version',
    },
  });

beforeAll(async () => {
  stack = await startStack();
  user = await twoTableExposure(stack);
});
afterAll(() => stack?.close());

describe('a playground key over MCP', () => {
  it('serves the AEI on mcp_url with a Bearer header, every call audited as caller @console', async () => {
    const key = await playgroundKey();
    expect(key.mcp_url).toBe(`${stack.gatewayUrl}/api/v2/mcp/server`);
    expect(key.rest_url).toBe(`${stack.gatewayUrl}/api/v2/rest`);
    const own = await connect(`${stack.gatewayUrl}/api/v2/mcp/server`, {
      authorization: `Bearer ${user.apiKey}`,
    });
    const client = await connect(key.mcp_url, { authorization: `Bearer ${key.api_key}` });
    try {
      expect((await client.listTools()).tools).toEqual((await own.listTools()).tools);
      const result = await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
      expect(result.isError).toBeFalsy();
      expect(resultJson(result)).toBe(2);
      const [resource] = (await client.listResources()).resources;
      expect((await client.readResource({ uri: resource!.uri })).contents).toHaveLength(1);
      // The AEI's own key is audited without a caller, as before.
      await own.callTool({ name: 'peek_orders', arguments: {} });
    } finally {
      await client.close();
      await own.close();
    }
    const audit = await stack.admin('GET', '/api/v2/audit?caller=%40console', undefined, user.token);
    expect(audit.items.every((row: Json) => row.caller === '@console')).toBe(true);
    const call = audit.items.find(
      (row: Json) => row.tool_name === 'find_customers' && row.action !== 'resource.read',
    );
    expect(call).toMatchObject({
      caller: '@console',
      status: 'ok',
      aei_id: user.aeiId,
      source_used: 'native',
    });
    expect(audit.items.find((row: Json) => row.action === 'resource.read')).toMatchObject({
      caller: '@console',
    });
    const all = await stack.admin('GET', `/api/v2/audit?aei_id=${user.aeiId}`, undefined, user.token);
    const ownCall = all.items.find((row: Json) => row.tool_name === 'peek_orders');
    expect(ownCall).toMatchObject({ caller: null });
  });

  it('serves a browser of an allowed origin, its answers carrying CORS headers', async () => {
    const key = await playgroundKey();
    const seen: Headers[] = [];
    const client = await connect(
      key.mcp_url,
      { authorization: `Bearer ${key.api_key}`, origin: CONSOLE_ORIGIN },
      seen,
    );
    try {
      // On a session the gateway holds: a browser's call takes the framework's path, not the fast lane.
      const result = await client.callTool({ name: 'peek_orders', arguments: {} });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const headers of seen) {
      expect(headers.get('access-control-allow-origin')).toBe(CONSOLE_ORIGIN);
      expect(headers.get('access-control-expose-headers')?.split(/,\s*/)).toEqual(CORS_EXPOSED_HEADERS);
    }
  });

  it('is refused on v1 URLs and in a URL’s path, and is unknown once its AEI is gone', async () => {
    const aei = await stack.admin('POST', '/api/v2/aeis', { name: 'brief' }, user.token);
    const key = await stack.admin('POST', `/api/v2/aeis/${aei.id}/playground-keys`, undefined, user.token);
    const post = (url: string) => postInitialize(url, { authorization: `Bearer ${key.api_key}` }, 't');
    expect((await post(key.mcp_url)).status).toBe(200);
    expect((await post(`${stack.gatewayUrl}/api/v1/mcp/server/${key.api_key}`)).status).toBe(401);
    // In the path it is refused too: it goes in the Authorization header only.
    const inPath = await fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${key.api_key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(inPath.status).toBe(401);
    expect(((await inPath.json()) as Json).error.message).toContain('never in the URL');
    await stack.admin('DELETE', `/api/v2/aeis/${aei.id}`, undefined, user.token);
    const gone = await post(key.mcp_url);
    expect(gone.status).toBe(401);
    expect(((await gone.json()) as Json).error.message).toContain('unknown api_key');
  });
});

describe('a playground key on the REST entry', () => {
  it('lists the tools and calls one, audited as caller @console', async () => {
    const key = await playgroundKey();
    const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
    const tools = await fetch(`${key.rest_url}/tools`, { headers });
    expect(tools.status).toBe(200);
    const listed = (await tools.json()) as Json;
    expect(listed.profile).toMatchObject({ aei_id: user.aeiId, caller: '@console', via: 'playground' });
    expect(listed.tools.map((t: Json) => t.name)).toContain('find_customers');
    const calls = await fetch(`${key.rest_url}/tool-calls`, {
      method: 'POST',
      headers: { ...headers, origin: CONSOLE_ORIGIN },
      body: JSON.stringify({ id: 'c1', tool_name: 'find_customers', arguments: { query: '[0].name' } }),
    });
    expect(calls.status).toBe(200);
    expect(calls.headers.get('access-control-allow-origin')).toBe(CONSOLE_ORIGIN);
    const [answer] = (await calls.json()) as Json[];
    expect(answer).toMatchObject({ id: 'c1', ok: true, result: 'Ada' });
    const audit = await stack.admin('GET', '/api/v2/audit?caller=%40console', undefined, user.token);
    const row = audit.items.find((r: Json) => r.request_id?.startsWith('rest:'));
    expect(row).toMatchObject({ caller: '@console', tool_name: 'find_customers', status: 'ok' });
  });
});

describe('CORS', () => {
  it('answers a preflight from an allowed origin with that origin and the allowed headers', async () => {
    for (const path of [
      '/api/v2/mcp/server',
      `/api/v2/mcp/server/${user.apiKey}`,
      '/api/v2/rest/tool-calls',
    ]) {
      const res = await preflight(path, CONSOLE_ORIGIN);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(CONSOLE_ORIGIN);
      expect(res.headers.get('access-control-allow-headers')?.split(/,\s*/)).toEqual(CORS_ALLOWED_HEADERS);
      expect(res.headers.get('access-control-allow-methods')?.split(/,\s*/)).toEqual([
        'GET',
        'POST',
        'DELETE',
      ]);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('vary')).toMatch(/origin/i);
    }
    for (const header of [
      'authorization',
      'content-type',
      'accept',
      'mcp-session-id',
      'mcp-protocol-version',
      'last-event-id',
      'x-bindery-caller',
    ]) {
      expect(CORS_ALLOWED_HEADERS).toContain(header);
    }
  });

  it('gives a disallowed origin no CORS headers, and the guard still refuses its request', async () => {
    const res = await preflight('/api/v2/mcp/server', EVIL_ORIGIN);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.status).toBe(405);
    const key = await playgroundKey();
    const actual = await fetch(key.mcp_url, {
      method: 'POST',
      headers: {
        origin: EVIL_ORIGIN,
        authorization: `Bearer ${key.api_key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(actual.status).toBe(403);
    expect(actual.headers.get('access-control-allow-origin')).toBeNull();
    const rest = await fetch(`${key.rest_url}/tools`, {
      headers: { origin: EVIL_ORIGIN, authorization: `Bearer ${key.api_key}` },
    });
    expect(rest.status).toBe(403);
    expect(rest.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('covers the MCP endpoints and the REST entry only, not the ops routes', async () => {
    const res = await preflight('/healthz', CONSOLE_ORIGIN, 'GET');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const health = await fetch(`${stack.gatewayUrl}/healthz`, { headers: { origin: CONSOLE_ORIGIN } });
    expect(health.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('the gateway’s cache', () => {
  it('stops serving a playground key at its expiry, without asking again and never stale', async () => {
    const key = await playgroundKey();
    let now = Date.now();
    const { cache, client, total } = standaloneCache(stack, { ttlMs: 24 * 3600 * 1000, now: () => now });
    const fetches = () => total('configFetches');
    try {
      const live = await cache.resolve(key.api_key);
      expect(live.exposure).toMatchObject({
        kind: 'aei',
        config: { aei: { id: user.aeiId } },
        playground: { expiresAt: Date.parse(key.expires_at) },
      });
      const hash = keyHash(key.api_key);
      expect(cache.peek(hash)).toBe(live.exposure);
      const asked = await fetches();
      now = Date.parse(key.expires_at);
      expect(cache.peek(hash)).toBeUndefined();
      expect((await cache.resolve(key.api_key)).exposure).toEqual({ kind: 'unknown' });
      expect(await fetches()).toBe(asked);
    } finally {
      await client.close();
    }
  });
});
