// A tool of an upstream server that requires OAuth, called through the gateway by a person who has
// not connected their account (decision 079): a client that declared URL-mode elicitation (modern,
// or a legacy session of 2025-11-25) is answered MCP's URLElicitationRequiredError (-32042)
// pointing at the console page that connects the server; any other client gets the tool error
// UPSTREAM_AUTH_REQUIRED naming the server and that page. The upstream is never reached.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modernNamedRequest } from './support/mcp-raw.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let upstream: Server;
let upstreamCalls = 0;
let path: string;
let serverId: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const mcp = new McpServer({ name: 'notes', version: '1.0.0' }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [{ name: 'note', inputSchema: { type: 'object', properties: {} } }],
      }));
      mcp.setRequestHandler(CallToolRequestSchema, () => {
        upstreamCalls += 1;
        return { content: [{ type: 'text', text: 'a note' }] };
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void mcp.close());
      void mcp
        .connect(transport)
        .then(() => transport.handleRequest(req, res, raw === '' ? undefined : JSON.parse(raw)));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  stack = await startStack({ controlPlaneEnv: { HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8' } });
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'oauth-person' })).token as string;
  const as = (method: string, to: string, body?: unknown) => stack.admin(method, to, body, token);
  // Synced while it needed nothing, then switched to OAuth: its tool stays bound, and needs the
  // person's connection from now on.
  const server = await as('POST', '/api/v2/upstream-servers', {
    name: 'Team notes',
    transport: 'http',
    url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`,
  });
  expect(server.status).toBe('ok');
  serverId = String(server.id);
  const aei = await as('POST', '/api/v2/aeis', { name: 'notes' });
  await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { upstream_server_id: serverId, prefix: '' });
  const switched = await as('PATCH', `/api/v2/upstream-servers/${serverId}`, { auth: 'oauth' });
  expect(switched.auth).toBe('oauth');
  path = `/api/v2/mcp/server/${String(aei.api_key)}`;
}, 90_000);

afterAll(async () => {
  await stack?.close();
  upstream?.close();
});

const connectPage = () => `${stack.controlPlaneUrl}/console/tools/upstreams?server=${serverId}`;

describe('a person who has not connected', () => {
  it('a modern client that takes URL-mode elicitation is pointed at the console page (-32042)', async () => {
    const answer = (await modernNamedRequest(
      stack.gatewayUrl,
      path,
      { id: 7, method: 'tools/call', params: { name: 'note', arguments: {} } },
      { elicitation: { url: {} } },
    )) as { error?: { code: number; message: string; data: { elicitations: Record<string, unknown>[] } } };
    expect(answer.error).toMatchObject({
      code: -32042,
      message: expect.stringContaining('"Team notes" requires OAuth'),
      data: { elicitations: [{ mode: 'url', url: connectPage(), elicitationId: expect.any(String) }] },
    });
  });

  it('a modern client without URL mode gets the tool error naming the page', async () => {
    const answer = (await modernNamedRequest(
      stack.gatewayUrl,
      path,
      { id: 8, method: 'tools/call', params: { name: 'note', arguments: {} } },
      { elicitation: { form: {} } },
    )) as { result?: { isError: boolean; content: { text: string }[] } };
    expect(answer.result?.isError).toBe(true);
    const error = JSON.parse(answer.result!.content[0]!.text).error;
    expect(error).toMatchObject({
      code: 'UPSTREAM_AUTH_REQUIRED',
      details: { upstream: 'Team notes', connect_url: connectPage() },
    });
  });

  it('a legacy session that declared URL-mode elicitation gets -32042 too', async () => {
    const client = new Client(
      { name: 'legacy-url', version: '1.0.0' },
      { capabilities: { elicitation: { form: {}, url: {} } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`)));
    const refused = await client.callTool({ name: 'note', arguments: {} }).then(
      () => undefined,
      (error: unknown) => error as { code?: number; data?: { elicitations?: { url: string }[] } },
    );
    await client.close();
    expect(refused?.code).toBe(-32042);
    expect(refused?.data?.elicitations?.[0]?.url).toBe(connectPage());
  });

  it('a legacy client without URL mode gets the tool error; the upstream was never called', async () => {
    const client = new Client({ name: 'legacy', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`)));
    const result = (await client.callTool({ name: 'note', arguments: {} })) as {
      isError?: boolean;
      content: { text: string }[];
    };
    await client.close();
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0]!.text).error.code).toBe('UPSTREAM_AUTH_REQUIRED');
    expect(upstreamCalls).toBe(0);
  });
});
