// Pins that admins' changes reach connected agents at once: the control plane invalidates the
// gateway (HTTP, and Redis pub/sub for other replicas), open sessions get
// notifications/tools/list_changed, and the next tools/list shows the change. A disabled binding's
// tool disappears and its call is refused; a disabled AEI refuses everything with a clear error.
// A replica that never saw a session still serves its tools/call.
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { resultJson, twoTableExposure, type Exposed } from '@bindery/test-support';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let stack: Stack;
let exposed: Exposed;

beforeAll(async () => {
  stack = await startStack({ controlPlaneEnv: { REDIS_URL } });
  exposed = await twoTableExposure(stack);
});
afterAll(() => stack.close());

/** Resolves on the client's next tools/list_changed notification (rejects after 5 s). */
function nextListChanged(client: Client): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no tools/list_changed within 5 s')), 5_000);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('changes reach connected clients', () => {
  it('renaming a binding: list_changed, then the new name', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('find_customers');
    const changed = nextListChanged(client);
    await stack.admin(
      'PATCH',
      `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.find_customers}`,
      { tool_name: 'search_customers' },
      exposed.token,
    );
    await changed;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(['search_customers', 'peek_orders']);
    const found = await client.callTool({ name: 'search_customers', arguments: { query: '[0].name' } });
    expect(resultJson(found)).toBe('Ada');
  });

  it('disabling a binding removes its tool and refuses its call', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await client.listTools();
    const changed = nextListChanged(client);
    await stack.admin(
      'PATCH',
      `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.peek_orders}`,
      { enabled: false },
      exposed.token,
    );
    await changed;
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['search_customers']);
    await expect(client.callTool({ name: 'peek_orders', arguments: {} })).rejects.toThrow(
      /unknown tool "peek_orders"/,
    );
  });

  it('another gateway replica hears the change over Redis', async () => {
    const replica = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl, REDIS_URL }),
      false,
    );
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    try {
      const client = new Client({ name: 'replica-client', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/api/v2/mcp/server/${exposed.apiKey}`)),
      );
      await client.listTools();
      const changed = nextListChanged(client);
      await stack.admin(
        'PATCH',
        `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.peek_orders}`,
        { enabled: true },
        exposed.token,
      );
      await changed;
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
        'search_customers',
        'peek_orders',
      ]);
      await client.close();
    } finally {
      await replica.close();
    }
  });

  it('a replica that never saw the session serves its tools/call statelessly', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await client.listTools();
    const replica = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl }),
      false,
    );
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    try {
      const res = await fetch(`${url}/api/v2/mcp/server/${exposed.apiKey}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': 'a-session-opened-elsewhere',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'search_customers', arguments: { query: 'length(@)' } },
        }),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('"id":7');
      expect(text).toContain('"text":"2"');
    } finally {
      await replica.close();
    }
  });

  it('disabling the AEI refuses everything with a clear error', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await client.listTools();
    // The invalidation follows the commit asynchronously; its list_changed says it has landed.
    const changed = nextListChanged(client);
    await stack.admin('PATCH', `/api/v2/aeis/${exposed.aeiId}`, { status: 'disabled' }, exposed.token);
    await changed;
    await expect(client.listTools()).rejects.toThrow(/disabled/);
    await expect(client.callTool({ name: 'search_customers', arguments: { query: '@' } })).rejects.toThrow(
      /disabled/,
    );
    const back = nextListChanged(client);
    await stack.admin('PATCH', `/api/v2/aeis/${exposed.aeiId}`, { status: 'enabled' }, exposed.token);
    await back;
    expect((await client.listTools()).tools.length).toBe(2);
  });
});
