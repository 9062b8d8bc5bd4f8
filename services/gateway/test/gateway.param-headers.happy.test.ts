// Pins tool arguments mirrored into HTTP headers (MCP 2026-07-28, SEP-2243: `x-mcp-header` in a
// tool's input schema, `Mcp-Param-{Name}` on the request) through the whole path. A real v2 SDK
// server (header-params-server.mjs) is attached over HTTP; its SDK refuses a tools/call whose
// headers are missing or wrong, so every answer it gives proves the control plane sent them.
// - sync leaves out the upstream tool whose mark the spec forbids, and says why;
// - a v2 SDK client, which mirrors the marked arguments itself, calls through the gateway, and the
//   upstream sees the same headers (Base64 where the value needs it);
// - the gateway refuses a modern call whose header is missing, different, or badly encoded (400,
//   HeaderMismatch -32020), takes `7.0` for 7, and ignores a header for an argument not given;
// - a legacy session, whose era has no such headers, calls the same tool without them;
// - a custom tool's marks are checked the same way, and a custom or HTTP tool whose marks break the
//   rules is refused when saved.
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modernHttpUpstream } from '../../control-plane/test/support/upstream-servers.ts';
import { headerParamsHandler } from '../../control-plane/test/support/upstream/header-params-server.mjs';
import { modernNamedPost } from './support/mcp-raw.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let upstream: Awaited<ReturnType<typeof modernHttpUpstream>>;
let url: URL;
let warnings: string[];
let customUrl: URL;

beforeAll(async () => {
  stack = await startStack({ controlPlaneEnv: { HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8' } });
  upstream = await modernHttpUpstream(headerParamsHandler);
  const server = await stack.admin('POST', '/api/v2/upstream-servers', {
    name: 'Regions',
    transport: 'http',
    url: upstream.url,
  });
  expect(server.status).toBe('ok');
  warnings = server.warnings as string[];
  const aei = await stack.admin('POST', '/api/v2/aeis', { name: 'regions' });
  await stack.admin('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { upstream_server_id: server.id });
  url = new URL(`/api/v2/mcp/server/${String(aei.api_key)}`, stack.gatewayUrl);

  const custom = await stack.admin('POST', '/api/v2/adis', {
    kind: 'custom',
    name: 'tenant_echo',
    code: 'export default (args) => "tenant " + args.tenant',
    input_schema: {
      type: 'object',
      properties: { tenant: { type: 'string', 'x-mcp-header': 'Tenant' } },
      required: ['tenant'],
    },
  });
  const echo = await stack.admin('POST', '/api/v2/aeis', { name: 'tenants' });
  await stack.admin('POST', `/api/v2/aeis/${String(echo.id)}/bindings`, { adi_id: custom.id });
  customUrl = new URL(`/api/v2/mcp/server/${String(echo.api_key)}`, stack.gatewayUrl);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await upstream?.close();
});

async function modernClient(at: URL): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'marked-agent', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(new ModernTransport(at));
  expect(client.getProtocolEra()).toBe('modern');
  return client;
}

/** A modern tools/call of `name` with `args`, its standard headers right and `params` added. */
async function modernCall(
  at: URL,
  name: string,
  args: Record<string, unknown>,
  params: Record<string, string>,
): Promise<{
  status: number;
  body: { result?: Record<string, unknown>; error?: { code: number; message: string } };
}> {
  const answer = await modernNamedPost(
    stack.gatewayUrl,
    at.pathname,
    { id: 1, method: 'tools/call', params: { name, arguments: args } },
    {},
    params,
  );
  return { status: answer.status, body: answer.message as never };
}

const textOf = (result: Record<string, unknown> | undefined) =>
  (result?.content as { text: string }[] | undefined)?.[0]?.text;

describe('an upstream whose tools mark arguments', () => {
  it('loses at sync only the tool whose mark the spec forbids, and says why', async () => {
    expect(warnings).toContainEqual(
      'tool "bad_mark" was skipped: level: x-mcp-header may only mark a string, integer or boolean property, not one of type number',
    );
    const client = await modernClient(url);
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.map((t) => t.name).sort()).toEqual(['plain', 'route_query']);
      const route = tools.find((t) => t.name === 'route_query')!;
      // The marks are listed as the server lists them: a client of the exposure mirrors them too.
      expect((route.inputSchema.properties as Record<string, Record<string, unknown>>).region).toEqual({
        type: 'string',
        'x-mcp-header': 'Region',
      });
    } finally {
      await client.close();
    }
  });

  it('is called by a modern SDK client through the gateway, the headers reaching the server', async () => {
    const client = await modernClient(url);
    try {
      await client.listTools();
      const result = await client.callTool({
        name: 'route_query',
        arguments: { region: 'eu west ', query: 'select 1', options: { rows: 7, dry: true } },
      });
      expect(textOf(result as Record<string, unknown>)).toBe(
        'region=eu west  rows=7 dry=true query=select 1',
      );
      // What the server's handler saw: the control plane's own headers, Base64 where needed.
      expect((result.structuredContent as { headers: Record<string, string> }).headers).toEqual({
        'mcp-param-region': '=?base64?ZXUgd2VzdCA=?=',
        'mcp-param-rows': '7',
        'mcp-param-dry': 'true',
      });
    } finally {
      await client.close();
    }
  });

  it('refuses a modern call whose headers are missing, different or badly encoded', async () => {
    const upstreamCalls = () => upstream.methods().filter((m) => m === 'tools/call').length;
    const before = upstreamCalls();
    const args = { region: 'us-1', query: 'q' };
    const missing = await modernCall(url, 'route_query', args, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toEqual({
      code: -32020,
      message: 'Header mismatch: the Mcp-Param-Region header is missing (the arguments carry region)',
    });
    const different = await modernCall(url, 'route_query', args, { 'Mcp-Param-Region': 'eu-1' });
    expect(different.status).toBe(400);
    expect(different.body.error?.message).toBe(
      'Header mismatch: the Mcp-Param-Region header does not match the value of region in the arguments',
    );
    const badBase64 = await modernCall(url, 'route_query', args, { 'mcp-param-region': '=?base64?dXMtMQ?=' });
    expect(badBase64.status).toBe(400);
    expect(badBase64.body.error?.code).toBe(-32020);
    const nested = await modernCall(
      url,
      'route_query',
      { ...args, options: { rows: 3 } },
      {
        'mcp-param-region': 'us-1',
        'mcp-param-rows': '4',
      },
    );
    expect(nested.status).toBe(400);
    expect(nested.body.error?.message).toMatch(
      /Mcp-Param-Rows header does not match the value of options\.rows/,
    );
    // The server was not asked any of these.
    expect(upstreamCalls()).toBe(before);
  });

  it('takes a call whose headers say the same, an integer as a number, and no header for what is not given', async () => {
    const same = await modernCall(
      url,
      'route_query',
      { region: 'us-1', query: 'q', options: { rows: 7 } },
      {
        'MCP-PARAM-REGION': '=?base64?dXMtMQ==?=',
        'mcp-param-rows': '7.0',
        // Not among the arguments: not looked at.
        'mcp-param-dry': 'whatever',
      },
    );
    expect(same.status).toBe(200);
    expect(textOf(same.body.result)).toBe('region=us-1 rows=7 dry=undefined query=q');
    const unmarked = await modernCall(url, 'plain', { text: 'hi' }, {});
    expect(textOf(unmarked.body.result)).toBe('hi');
  });

  it('is called by a legacy session, whose era has no such headers', async () => {
    const client = new Client({ name: 'legacy-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      const result = await client.callTool({
        name: 'route_query',
        arguments: { region: 'ap-2', query: 'q' },
      });
      expect(textOf(result as Record<string, unknown>)).toBe(
        'region=ap-2 rows=undefined dry=undefined query=q',
      );
      // The control plane, a modern client of the server, still sent the header.
      expect((result.structuredContent as { headers: Record<string, string> }).headers).toEqual({
        'mcp-param-region': 'ap-2',
      });
    } finally {
      await client.close();
    }
  });
});

describe("Bindery's own tools", () => {
  it("check a custom tool's marks the same way", async () => {
    const refused = await modernCall(customUrl, 'tenant_echo', { tenant: 'acme' }, {});
    expect(refused.status).toBe(400);
    expect(refused.body.error?.code).toBe(-32020);
    const taken = await modernCall(
      customUrl,
      'tenant_echo',
      { tenant: 'acme' },
      { 'mcp-param-tenant': 'acme' },
    );
    expect(taken.status).toBe(200);
    expect(JSON.stringify(taken.body.result)).toContain('tenant acme');
  });

  it('refuses to save a custom or HTTP tool whose marks break the rules', async () => {
    const project = await stack.admin('POST', '/api/v2/projects', { name: 'Badly marked' });
    const schema = {
      type: 'object',
      properties: { ids: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Id' } } },
    };
    const custom = await stack.adminRaw('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'bad_custom',
      code: 'export default () => 1',
      input_schema: schema,
    });
    const http = await stack.adminRaw('POST', '/api/v2/adis', {
      kind: 'http',
      name: 'bad_http',
      project_id: project.id,
      method: 'GET',
      url: 'http://127.0.0.1:9/items',
      input_schema: { type: 'object', properties: { id: { type: 'string', 'x-mcp-header': 'Two Words' } } },
    });
    for (const [answer, reason] of [
      [custom, /ids\.<items>: x-mcp-header may only mark a property reached from the root/],
      [http, /id: x-mcp-header "Two Words" is not an HTTP field-name token/],
    ] as const) {
      expect(answer.status).toBe(400);
      const error = (answer.body as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.message).toMatch(reason);
    }
  });
});
