// Pins OpenTelemetry traces across every hop. A gateway and a control plane, each its own process,
// export spans over OTLP/HTTP to a receiver this test runs on 127.0.0.1; an MCP client calls:
// - an HTTP tool, sending its own trace in `_meta.traceparent`: one trace, the agent's, holds the
//   gateway's request span (child of the agent's span), the control plane's execution, the kind's
//   span and the outgoing request's, and the test API receives a `traceparent` of that trace;
// - an upstream server's tool (a real SDK server over HTTP): the upstream sees the trace in the
//   request's `_meta` and in its HTTP headers;
// - a tool on the REST entry, continuing the caller's `traceparent` header;
// - a context write, whose database queries are spans of the same trace;
// and the audit rows and the services' log lines of those calls carry their trace id. No span
// holds the tool's secret (sent in its query) or the api key (in the MCP URL's path), and a
// malformed or oversized trace context from a caller starts a trace of the gateway's own.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayProcess, startStack, type Json, type Stack } from '@bindery/test-support';

interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP receiver (JSON bodies) on loopback, keeping every span it is sent. */
async function startReceiver(): Promise<{ server: Server; url: string; spans: ExportedSpan[] }> {
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: {
            spans: (Omit<ExportedSpan, 'service' | 'attributes'> & {
              attributes?: { key: string; value: Record<string, unknown> }[];
            })[];
          }[];
        }[];
      };
      for (const { resource, scopeSpans } of body.resourceSpans) {
        const service = resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const { spans: sent } of scopeSpans) {
          for (const span of sent) {
            spans.push({
              ...span,
              parentSpanId: span.parentSpanId ?? '',
              service,
              attributes: Object.fromEntries(
                (span.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]),
              ),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans };
}

/** An API that answers every request and keeps the headers it got. */
async function startApi(): Promise<{ server: Server; url: string; received: IncomingHttpHeaders[] }> {
  const received: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    received.push(req.headers);
    req
      .resume()
      .on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** A real MCP server over HTTP (stateless) whose `echo` tool keeps the `_meta` and headers of each call. */
async function startUpstream(): Promise<{
  server: Server;
  url: string;
  calls: { meta: Record<string, unknown>; headers: IncomingHttpHeaders }[];
}> {
  const calls: { meta: Record<string, unknown>; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const mcp = new McpServer(
        { name: 'traced-upstream', version: '1.0.0' },
        { capabilities: { tools: {} } },
      );
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [
          {
            name: 'echo',
            inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          },
        ],
      }));
      mcp.setRequestHandler(CallToolRequestSchema, (request) => {
        calls.push({ meta: { ...request.params._meta }, headers: req.headers });
        return { content: [{ type: 'text', text: String(request.params.arguments?.text) }] };
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void mcp.close());
      void mcp
        .connect(transport)
        .then(() => transport.handleRequest(req, res, raw === '' ? undefined : JSON.parse(raw)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, calls };
}

const SECRET = `sv-${randomBytes(12).toString('hex')}`;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let api: Awaited<ReturnType<typeof startApi>>;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
let stack: Stack;
let token: string;
let client: Client;
let apiKey: string;

beforeAll(async () => {
  [receiver, api, upstream] = await Promise.all([startReceiver(), startApi(), startUpstream()]);
  const tracing = {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    // The SDK's own setting: spans leave at once instead of every 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '50',
    LOG_FORMAT: 'json',
    LOG_REQUESTS: 'true',
  };
  stack = await startStack({
    gateway: gatewayProcess,
    gatewayEnv: tracing,
    // At debug, a custom tool's console is a line of the control plane's log.
    controlPlaneEnv: {
      ...tracing,
      HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8',
      LOG_LEVEL: 'debug',
      BINDERY_SECRET_KEY: randomBytes(32).toString('base64'),
    },
  });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'traced' })).token as string;
  const as = (method: string, path: string, body?: unknown): Promise<Json> =>
    stack.admin(method, path, body, token);
  await as('POST', '/api/v2/secrets', { name: 'THINGS_KEY', value: SECRET });
  const lookup = await as('POST', '/api/v2/adis', {
    kind: 'http',
    name: 'lookup',
    method: 'GET',
    url: `${api.url}/things/{id}`,
    params: [{ name: 'id', in: 'path', required: true }],
    query: { key: '{{secret.THINGS_KEY}}' },
  });
  const table = await as('POST', '/api/v2/tables', { name: 'notes', data: { items: [] } });
  const add = await as('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/items',
    operation_type: 'create',
  });
  const chatty = await as('POST', '/api/v2/adis', {
    kind: 'custom',
    name: 'chatty',
    code: 'export default (args) => { console.info("hello", args.who); return "hi " + args.who; }',
    input_schema: { type: 'object', properties: { who: { type: 'string' } } },
  });
  const remote = await as('POST', '/api/v2/upstream-servers', {
    name: 'Traced',
    transport: 'http',
    url: upstream.url,
  });
  expect(remote.status).toBe('ok');
  const aei = await as('POST', '/api/v2/aeis', { name: 'traced' });
  await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, [
    { adi_id: lookup.id, tool_name: 'lookup' },
    { adi_id: add.id, tool_name: 'add_note' },
    { adi_id: chatty.id, tool_name: 'chatty' },
  ]);
  await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, {
    upstream_server_id: remote.id,
    prefix: 'up',
  });
  apiKey = String(aei.api_key);
  client = new Client({ name: 'traced-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`/api/v2/mcp/server/${String(aei.api_key)}`, stack.gatewayUrl)),
  );
}, 90_000);

afterAll(async () => {
  await client?.close();
  await stack?.close();
  for (const server of [receiver?.server, api?.server, upstream?.server]) {
    await new Promise((resolve) => server?.close(resolve));
  }
});

/**
 * The spans of `traceId` once it holds a span named by each of `names` (a name, or the start of
 * one followed by `*`): each service exports every 50 ms, each on its own.
 */
async function traceOf(traceId: string, names: string[]): Promise<ExportedSpan[]> {
  const named = (span: ExportedSpan, name: string) =>
    name.endsWith('*') ? span.name.startsWith(name.slice(0, -1)) : span.name === name;
  for (let tries = 0; tries < 100; tries += 1) {
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    if (names.every((name) => spans.some((span) => named(span, name)))) return spans;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`trace ${traceId}: ${JSON.stringify(receiver.spans.filter((s) => s.traceId === traceId))}`);
}

const traceIdIn = (traceparent: unknown) => String(traceparent).split('-')[1] ?? '';

describe('traces across the gateway, the control plane and what a tool calls', () => {
  it('an agent’s trace holds every hop of an HTTP tool call, and the API receives it', async () => {
    const agentTrace = randomBytes(16).toString('hex');
    const agentSpan = randomBytes(8).toString('hex');
    const result = await client.callTool({
      name: 'lookup',
      arguments: { id: 'a1' },
      _meta: { traceparent: `00-${agentTrace}-${agentSpan}-01` },
    });
    expect(result.isError).toBeFalsy();
    const spans = await traceOf(agentTrace, ['tools/call lookup', 'bindery.execute', 'http *', 'GET']);
    const gateway = spans.find((s) => s.service === 'bindery-gateway' && s.name === 'tools/call lookup');
    expect(gateway).toBeDefined();
    expect(gateway!.parentSpanId).toBe(agentSpan);
    expect(gateway!.attributes['mcp.method.name']).toBe('tools/call');
    const execute = spans.find((s) => s.name === 'bindery.execute');
    expect(execute?.service).toBe('bindery-control-plane');
    expect(execute!.parentSpanId).toBe(gateway!.spanId);
    const kind = spans.find((s) => s.parentSpanId === execute!.spanId && s.name.startsWith('http '));
    expect(kind).toBeDefined();
    // The outgoing request: a client span (kind 3), whose context the API received.
    const outgoing = spans.find((s) => s.kind === 3 && s.parentSpanId === kind!.spanId);
    expect(outgoing).toBeDefined();
    const sent = api.received.at(-1)!.traceparent;
    expect(traceIdIn(sent)).toBe(agentTrace);
    expect(String(sent).split('-')[2]).toBe(outgoing!.spanId);
    // The request carried the secret in its query; its span says only that there was one.
    expect(outgoing!.attributes['url.full']).toBe(`${api.url}/things/a1?REDACTED`);
  });

  it('a caller’s malformed or oversized trace context is not taken: the gateway starts its own', async () => {
    const zeros = `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`;
    for (const traceparent of ['00-not-a-trace-01', zeros, `00-${'a'.repeat(4096)}-${'b'.repeat(16)}-01`]) {
      const result = await client.callTool({
        name: 'lookup',
        arguments: { id: 'h1' },
        _meta: { traceparent, tracestate: 'x'.repeat(100_000) },
      });
      expect(result.isError).toBeFalsy();
      const sent = api.received.at(-1)!.traceparent;
      const traceId = traceIdIn(sent);
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(traceId).not.toBe('0'.repeat(32));
      const spans = await traceOf(traceId, ['tools/call lookup', 'bindery.execute']);
      expect(spans.find((s) => s.name === 'tools/call lookup')!.parentSpanId).toBe('');
    }
    // A name too long for any tool is not the span's name.
    await client.callTool({ name: 'x'.repeat(5000), arguments: {} }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.spans.some((s) => s.name.includes('x'.repeat(200)))).toBe(false);
  });

  it('a call on the REST entry continues the caller’s traceparent header', async () => {
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const answer = await fetch(`${stack.gatewayUrl}/api/v2/rest/tools/lookup`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${callerTrace}-${callerSpan}-01`,
      },
      body: JSON.stringify({ id: 'r1' }),
    });
    expect(answer.status, await answer.clone().text()).toBe(200);
    const spans = await traceOf(callerTrace, ['tools/call lookup', 'bindery.execute', 'GET']);
    const gateway = spans.find((s) => s.name === 'tools/call lookup');
    expect(gateway?.service).toBe('bindery-gateway');
    expect(gateway!.parentSpanId).toBe(callerSpan);
    expect(spans.find((s) => s.name === 'bindery.execute')!.parentSpanId).toBe(gateway!.spanId);
    expect(traceIdIn(api.received.at(-1)!.traceparent)).toBe(callerTrace);
  });

  it('an upstream server’s tool gets the trace in its request’s _meta and its headers', async () => {
    const result = await client.callTool({ name: 'up_echo', arguments: { text: 'hi' } });
    expect(result.isError).toBeFalsy();
    const call = upstream.calls.at(-1)!;
    const traceId = traceIdIn(call.meta.traceparent);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceIdIn(call.headers.traceparent)).toBe(traceId);
    const spans = await traceOf(traceId, ['tools/call up_echo', 'bindery.execute', 'mcp *']);
    // The gateway started this trace: the agent sent none.
    const root = spans.find((s) => s.name === 'tools/call up_echo');
    expect(root?.service).toBe('bindery-gateway');
    expect(root!.parentSpanId).toBe('');
    expect(spans.find((s) => s.name.startsWith('mcp '))?.service).toBe('bindery-control-plane');
  });

  it('a context write’s database queries are spans of its trace; audit rows and log lines carry the id', async () => {
    const agentTrace = randomBytes(16).toString('hex');
    const result = await client.callTool({
      name: 'add_note',
      arguments: { value: { text: 'traced' } },
      _meta: { traceparent: `00-${agentTrace}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(result.isError).toBeFalsy();
    const spans = await traceOf(agentTrace, ['tools/call add_note', 'bindery.execute', 'prisma:*']);
    expect(
      spans.filter((s) => s.name.startsWith('prisma:')).every((s) => s.service === 'bindery-control-plane'),
    ).toBe(true);
    const audit = await stack.admin('GET', '/api/v2/audit?limit=10', undefined, token);
    const row = (audit.items as Json[]).find((item) => item.tool_name === 'add_note');
    expect(row?.trace_id).toBe(agentTrace);
    // The gateway's request line names the trace.
    const gatewayLine = stack
      .gateway!.output()
      .split('\n')
      .find((l) => l.includes(`"trace_id":"${agentTrace}"`));
    expect(gatewayLine).toContain('request completed');
    // Once: a line that names its trace twice reads badly in every log tool.
    expect(gatewayLine!.split('"trace_id"').length - 1).toBe(1);
  });

  it('a custom tool’s run is a span, and its console line in the control plane’s log names the trace', async () => {
    const agentTrace = randomBytes(16).toString('hex');
    const result = await client.callTool({
      name: 'chatty',
      arguments: { who: 'Ada' },
      _meta: { traceparent: `00-${agentTrace}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(result.isError).toBeFalsy();
    const spans = await traceOf(agentTrace, ['bindery.execute', 'custom *']);
    const execute = spans.find((s) => s.name === 'bindery.execute');
    expect(spans.find((s) => s.name.startsWith('custom '))?.parentSpanId).toBe(execute?.spanId);
    const line = stack
      .controlPlaneOutput()
      .split('\n')
      .find((l) => l.includes('custom tool console') && l.includes('hello Ada'));
    expect(line).toContain(`"trace_id":"${agentTrace}"`);
  });

  it('no exported span holds the tool’s secret or the api key', () => {
    const exported = JSON.stringify(receiver.spans);
    expect(receiver.spans.length).toBeGreaterThan(20);
    expect(exported).not.toContain(SECRET);
    expect(exported).not.toContain(apiKey);
  });
});
