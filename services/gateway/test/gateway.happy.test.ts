// Pins what an MCP client gets from the gateway end to end (SDK Client -> gateway -> control plane
// -> PostgreSQL): one AEI with tools on two tables lists and calls both; the bearer-header entry
// works; ping and logging/setLevel are answered; a legacy v1 instance works on its v1 URL and on
// the v2 URL; tools/list comes from the cache, not from a control-plane fetch per request.
import type { LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
});
afterAll(() => stack.close());

describe('direct AEI over MCP', () => {
  it('lists the tools of both tables and calls both', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['find_customers', 'peek_orders']);
    expect(tools[0]!.inputSchema.required).toEqual(['query']);
    expect(tools[1]!.description).toContain('"orders"');

    const found = await client.callTool({ name: 'find_customers', arguments: { query: '[].name' } });
    expect(found.isError).toBeFalsy();
    expect(resultJson(found)).toEqual(['Ada', 'Grace']);
    const peeked = await client.callTool({ name: 'peek_orders', arguments: { limit: 1 } });
    expect(resultJson(peeked)).toEqual({ items: [{ id: 'o1' }], total: 2, offset: 0, limit: 1 });
  });

  it('accepts the api_key as a bearer header on /api/v2/mcp/server', async () => {
    const client = await stack.connect('/api/v2/mcp/server', {
      headers: { authorization: `Bearer ${exposed.apiKey}` },
    });
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(2);
  });

  it('answers ping and sends tool logs at the level the client set', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    expect(await client.ping()).toEqual({});
    const logs: LoggingMessageNotification['params'][] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
    expect(logs.map((l) => [l.level, (l.data as { tool?: string; event?: string }).event])).toEqual([
      ['debug', 'started'],
      ['debug', 'finished'],
    ]);
    logs.length = 0;
    await client.setLoggingLevel('error');
    await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
    expect(logs).toEqual([]);
  });

  it('returns tool failures as isError results with the error code', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    const bad = await client.callTool({ name: 'find_customers', arguments: { query: '[?' } });
    expect(bad.isError).toBe(true);
    expect(resultJson(bad).error.code).toBe('INVALID_QUERY');
  });

  it('names close matches for an unknown tool', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await expect(client.callTool({ name: 'find_customer', arguments: {} })).rejects.toThrow(
      /unknown tool "find_customer"; did you mean "find_customers"/,
    );
  });

  it('serves tools/list from the cache: no control-plane fetch per request', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await client.listTools();
    const fetches = async () =>
      (await stack.gateway.gateway.metrics.configFetches.get()).values.reduce((sum, v) => sum + v.value, 0);
    const before = await fetches();
    for (let i = 0; i < 20; i++) await client.listTools();
    await client.callTool({ name: 'find_customers', arguments: { query: '@' } });
    expect(await fetches()).toBe(before);
  });
});

describe('fast path', () => {
  it('answers tools/call on a held session with plain JSON, and streams when it has log lines to send', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const post = (id: number, method: string, params: unknown) =>
      fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${exposed.apiKey}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
    const plain = await post(1, 'tools/call', { name: 'find_customers', arguments: { query: '[0].name' } });
    expect(plain.headers.get('content-type')).toBe('application/json');
    const body = (await plain.json()) as { id: number; result: { content: { text: string }[] } };
    expect(body.id).toBe(1);
    expect(JSON.parse(body.result.content[0]!.text)).toBe('Ada');

    // A refusal is a warning, the level a session starts at: the line comes first, in an event stream.
    const unknown = await post(2, 'tools/call', { name: 'find_customer', arguments: {} });
    expect(unknown.headers.get('content-type')).toBe('text/event-stream');
    const [warning, error] = (await unknown.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Json);
    expect(warning).toMatchObject({
      method: 'notifications/message',
      params: { level: 'warning', data: { tool: 'find_customer', event: 'refused' } },
    });
    expect(error.error.code).toBe(-32602);
    expect(error.error.message).toContain('did you mean "find_customers"');

    await client.setLoggingLevel('debug');
    const streamed = await post(3, 'tools/call', {
      name: 'find_customers',
      arguments: { query: '[0].name' },
    });
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    const events = await streamed.text();
    expect(events).toContain('notifications/message');
    expect(events).toContain('"id":3');
  });
});

describe('legacy v1 instance', () => {
  it('works on its v1 URL and, by fallback, on the v2 URL', async () => {
    const instance = await stack.admin(
      'POST',
      '/api/v1/mcp',
      { table_id: exposed.tables.customers, json_pointer: '/list' },
      exposed.token,
    );
    for (const path of [`/api/v1/mcp/server/${instance.api_key}`, `/api/v2/mcp/server/${instance.api_key}`]) {
      const client = await stack.connect(path);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('query_data');
      const result = await client.callTool({ name: 'query_data', arguments: { query: '[0].name' } });
      expect(resultJson(result)).toBe('Ada');
    }
  });

  it('does not serve an AEI key on the v1 URL', async () => {
    const res = await fetch(`${stack.gatewayUrl}/api/v1/mcp/server/${exposed.apiKey}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
  });
});
