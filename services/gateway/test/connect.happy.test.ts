// Pins, end to end, that what the control plane answers a new api_key with really connects: the
// SDK Client reaches the tools at `mcp_url` as given and at `mcp_url_header` with the key as a
// bearer header, also after a rotation (when the old URL and the sessions opened with it stop
// working as soon as the rotation is answered); and that when the root
// user disables the exposure's owner its sessions are refused at once, serve again once the user is
// enabled, and end for good when the user is deleted.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let created: Json;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
  // A second exposure with the same tools, made for this suite: its create answer is under test.
  created = await stack.admin('POST', '/api/v2/aeis', { name: 'Ready agent' }, exposed.token);
  const adis = await stack.admin('GET', '/api/v2/adis', undefined, exposed.token);
  await stack.admin(
    'POST',
    `/api/v2/aeis/${created.id}/bindings`,
    adis.items.map((adi: { id: string }) => ({ adi_id: adi.id })),
    exposed.token,
  );
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await stack.close();
});

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'bindery-connect-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

function nextListChanged(client: Client): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no tools/list_changed within 5 s')), 5_000);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const initialize = (path: string) =>
  rawPost(
    stack.gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  );

describe('the URLs a new api_key is answered with', () => {
  it('name this gateway', () => {
    expect(created.mcp_url).toBe(`${stack.gatewayUrl}/api/v2/mcp/server/${created.api_key}`);
    expect(created.mcp_url_header).toBe(`${stack.gatewayUrl}/api/v2/mcp/server`);
    expect(created.client_configs.vscode.config.servers['ready-agent'].url).toBe(created.mcp_url);
  });

  it('connect as given: the key in the path, or as a bearer header', async () => {
    const byPath = await connect(created.mcp_url);
    expect((await byPath.listTools()).tools).toHaveLength(2);
    const byHeader = await connect(created.mcp_url_header, { authorization: `Bearer ${created.api_key}` });
    expect((await byHeader.listTools()).tools).toHaveLength(2);
  });

  it('after a rotation, the new URL connects; the old one and its open sessions are refused at once', async () => {
    const before = await connect(created.mcp_url);
    expect((await before.listTools()).tools).toHaveLength(2);
    const rotated = await stack.admin(
      'POST',
      `/api/v2/aeis/${created.id}/rotate-key`,
      undefined,
      exposed.token,
    );
    expect(rotated.mcp_url).not.toBe(created.mcp_url);
    // No waiting: the rotation is answered once the gateway has dropped the old key.
    await expect(before.listTools()).rejects.toThrow(/401|api_key|not valid|unknown/i);
    const client = await connect(rotated.mcp_url);
    expect((await client.listTools()).tools).toHaveLength(2);
    const old = await initialize(new URL(created.mcp_url).pathname);
    expect(old.status).toBe(401);
    created = rotated;
  });
});

describe('a disabled owner', () => {
  let userId: string;

  beforeAll(async () => {
    userId = (await stack.admin('GET', '/api/v2/me', undefined, exposed.token)).id;
  });

  it('has its exposures refused at once, and served again once enabled', async () => {
    const client = await connect(`${stack.gatewayUrl}/api/v2/mcp/server/${exposed.apiKey}`);
    await client.listTools();
    // The invalidation follows the commit asynchronously; its list_changed says it has landed.
    const changed = nextListChanged(client);
    await stack.admin('PATCH', `/api/v2/users/${userId}`, { status: 'disabled' });
    await changed;
    await expect(client.callTool({ name: 'find_customers', arguments: { query: '@' } })).rejects.toThrow(
      /disabled/,
    );
    for (const key of [exposed.apiKey, created.api_key]) {
      const res = await initialize(`/api/v2/mcp/server/${key}`);
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text).error.data.code).toBe('FORBIDDEN');
    }

    const back = nextListChanged(client);
    await stack.admin('PATCH', `/api/v2/users/${userId}`, { status: 'enabled' });
    await back;
    const found = await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
    expect(found.isError).toBeFalsy();
    expect((await initialize(`/api/v2/mcp/server/${created.api_key}`)).status).toBe(200);
  });

  it('deleted with everything it owns: its keys are unknown', async () => {
    const client = await connect(created.mcp_url);
    await client.listTools();
    const dropped = nextListChanged(client);
    await stack.admin('DELETE', `/api/v2/users/${userId}?cascade=true`);
    await dropped;
    for (const key of [exposed.apiKey, created.api_key]) {
      // The gateway was told to drop them; a lookup now finds nothing.
      const res = await initialize(`/api/v2/mcp/server/${key}`);
      expect(res.status).toBe(401);
    }
  });
});
