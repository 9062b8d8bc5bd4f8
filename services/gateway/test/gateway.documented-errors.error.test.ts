// Pins the gateway's documented errors: every row of the error tables of docs/reference/gateway.md that concern
// the gateway (its REST routes, MCP requests refused before the MCP layer, and errors inside MCP
// on every lane a request can take) is triggered against
// the real gateway and answers the documented status and code, in the documented body (a row
// without a check fails); OAuth discovery paths answer 404 without a key lookup or a rate-limit
// token; 401s carry `WWW-Authenticate: Bearer` without `resource_metadata`; the SDK client with a
// wrong key fails cleanly and never tries OAuth; an unknown tool's message carries its
// "MCP error -32602:" prefix once.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { twoTableExposure, unusedApiKey, type Exposed, type Json } from '@bindery/test-support';
import { LANES, lanesFor, responseTo, type Lane, type Lanes } from './support/mcp-raw.ts';
import { rawPost } from './support/raw-post.ts';
import { requestText, socketRequest } from './support/raw-socket.ts';
import { INTERNAL_TOKEN, OPS_TOKEN, freePort, startStack, type Stack } from './support/stack.ts';

const METRICS_TOKEN = 'e2e-metrics-token-00000001';
let stack: Stack;
let exposed: Exposed;
/** Every path a request reached the gateway's server with (fast lane included). */
const seen: string[] = [];

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: { GATEWAY_BODY_LIMIT_BYTES: '4096', METRICS_TOKEN },
  });
  exposed = await twoTableExposure(stack);
  stack.gateway.server.on('request', (req) => seen.push(`${req.method} ${req.url}`));
});
afterAll(() => stack?.close());

const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const mcpPath = () => `/api/v2/mcp/server/${exposed.apiKey}`;

interface Observed {
  status: number;
  /** The REST `error.code`, or the JSON-RPC answer's `data.code`. */
  code: string;
  /** The JSON-RPC error code, on MCP answers. */
  rpc?: number;
  headers: Headers;
  body: Json;
}

async function call(url: string, init: RequestInit = {}): Promise<Observed> {
  const res = await fetch(url, init);
  const text = await res.text();
  // A successful MCP answer may come as one server-sent event.
  const json = text.startsWith('event:') ? (/^data: (.*)$/m.exec(text)?.[1] ?? '') : text;
  const body = json ? JSON.parse(json) : undefined;
  return {
    status: res.status,
    code: body?.error?.data?.code ?? body?.error?.code,
    ...(body?.jsonrpc === '2.0' && { rpc: body.error?.code }),
    headers: res.headers,
    body,
  };
}

const post = (path: string, body: string, headers: Record<string, string> = {}, base = stack.gatewayUrl) =>
  call(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });

/** A gateway of its own (settings for one row), closed after `run`. */
async function withGateway<T>(env: Record<string, string>, run: (url: string) => Promise<T>): Promise<T> {
  const gateway: FastifyInstance = await buildGateway(
    loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl, ...env }),
    false,
  );
  const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  try {
    return await run(url);
  } finally {
    await gateway.close();
  }
}

/** A request no HTTP parser takes (an unknown method), answered on the raw socket. */
function unknownMethod(): Promise<Observed> {
  const { port } = new URL(stack.gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write('FOO /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
    );
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const parsed = JSON.parse(body);
      resolve({
        status: Number(head.split(' ')[1]),
        code: parsed.error.code,
        headers: new Headers(),
        body: parsed,
      });
    });
  });
}

/** A request written on the raw socket (what no HTTP client sends), its answer as observed. */
async function onSocket(requestLine: string, head: string[], body = ''): Promise<Observed> {
  const answer = await socketRequest(stack.gatewayUrl, requestText(requestLine, head, body));
  expect(answer.headers.connection).toBe('close');
  const parsed = JSON.parse(answer.text);
  return {
    status: answer.status ?? 0,
    code: parsed.error.data?.code ?? parsed.error.code,
    ...(typeof parsed.error.code === 'number' && { rpc: parsed.error.code }),
    headers: new Headers(answer.headers),
    body: parsed,
  };
}

/**
 * The rows of a table under `heading` in docs/reference/gateway.md (the first, or the `nth` from 0): first cell,
 * HTTP status, code.
 */
function tableRows(
  heading: string,
  nth = 0,
): { situation: string; status: number; code: string; cells: string[] }[] {
  const doc = readFileSync(
    fileURLToPath(new URL('../../../docs/reference/gateway.md', import.meta.url)),
    'utf8',
  );
  const start = doc.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/reference/gateway.md has a section "${heading}"`).toBeGreaterThan(-1);
  const section = doc.slice(start + 1);
  const lines = section
    .slice(0, section.indexOf('\n## ') === -1 ? undefined : section.indexOf('\n## '))
    .split('\n');
  // Each table starts with a header row right after a line that is not part of a table.
  const headers = lines.flatMap((l, i) => (l.startsWith('|') && !lines[i - 1]?.startsWith('|') ? [i] : []));
  expect(headers.length, `docs/reference/gateway.md "${heading}" has table ${nth + 1}`).toBeGreaterThan(nth);
  const first = headers[nth]!;
  const rows: { situation: string; status: number; code: string; cells: string[] }[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const code = cells[cells.length - 1]!.replaceAll('`', '');
    rows.push({ situation: cells[0]!, status: Number(cells[1]), code, cells });
  }
  return rows;
}

type Trigger = () => Promise<Observed>;

/** Rows of "Gateway routes other than MCP", each answered in the REST body. */
const REST_TRIGGERS: Record<string, Trigger> = {
  'unknown path': () => call(`${stack.gatewayUrl}/nope`),
  'OAuth discovery: `/.well-known/oauth-protected-resource`, `oauth-authorization-server`, `openid-configuration`, with or without a path suffix':
    () => call(`${stack.gatewayUrl}/.well-known/oauth-protected-resource${mcpPath()}`),
  'a known path with another method (header `Allow` names the methods)': async () => {
    const res = await call(`${stack.gatewayUrl}/healthz`, { method: 'DELETE' });
    expect(res.headers.get('allow')).toContain('GET');
    return res;
  },
  'body is not JSON, or empty': () => post('/cache/invalidate', '{oops'),
  "body breaks the route's schema (`/cache/invalidate` with no field)": () =>
    post('/cache/invalidate', '{}', { authorization: `Bearer ${OPS_TOKEN}` }),
  'Content-Type not `application/json`': () =>
    post('/cache/invalidate', 'all', { 'content-type': 'text/plain' }),
  'body over `GATEWAY_BODY_LIMIT_BYTES`': () =>
    post('/cache/invalidate', JSON.stringify({ api_keys: ['x'.repeat(5000)] })),
  'URL percent-escapes not UTF-8': () => call(`${stack.gatewayUrl}/n%ffpe`),
  '`/metrics` without `Authorization: Bearer <METRICS_TOKEN>` when that is set': () =>
    call(`${stack.gatewayUrl}/metrics`),
  '`/cache/invalidate` without `Authorization: Bearer <OPS_TOKEN>`, or on a gateway without `OPS_TOKEN`':
    () => post('/cache/invalidate', '{"all": true}'),
  'a request that is not valid HTTP (an unknown method such as `FOO`); no `request_id`, connection closed':
    unknownMethod,
  'two `Host` headers, none on HTTP/1.1, or a target that is not a path (`GET http://host/healthz`, `OPTIONS *`); connection closed':
    async () => {
      const host = `Host: ${new URL(stack.gatewayUrl).host}`;
      for (const [line, head] of [
        ['GET /healthz HTTP/1.1', []],
        ['OPTIONS * HTTP/1.1', [host]],
      ] as const) {
        expect((await onSocket(line, [...head])).code).toBe('VALIDATION_FAILED');
      }
      return onSocket('GET http://evil.example/healthz HTTP/1.1', [host]);
    },
  '`CONNECT` (this is not a proxy); no `request_id`, connection closed': async () => {
    const answer = await socketRequest(
      stack.gatewayUrl,
      requestText('CONNECT 127.0.0.1:443 HTTP/1.1', ['Host: 127.0.0.1:443']),
    );
    const parsed = JSON.parse(answer.text);
    expect(parsed.error.request_id).toBeUndefined();
    return {
      status: answer.status ?? 0,
      code: parsed.error.code,
      headers: new Headers(answer.headers),
      body: parsed,
    };
  },
};
const REST_UNTRIGGERABLE: Record<string, string> = {
  'a bug in the gateway; quote the `request_id`':
    'no route fails on purpose; the handler maps any unexpected error to it',
};

/** Rows of "MCP gateway answers" (refused before the MCP layer), each a JSON-RPC error answer. */
const MCP_TRIGGERS: Record<string, Trigger> = {
  'unknown api_key (or not in the issued shape), or no key': async () => {
    const none = await post('/api/v2/mcp/server', LIST);
    expect([none.status, none.code]).toEqual([401, 'UNAUTHORIZED']);
    return post(`/api/v2/mcp/server/${unusedApiKey()}`, LIST);
  },
  'exposure (or legacy instance) disabled': async () => {
    const other = await twoTableExposure(stack);
    await stack.admin('PATCH', `/api/v2/aeis/${other.aeiId}`, { status: 'disabled' }, other.token);
    return post(`/api/v2/mcp/server/${other.apiKey}`, LIST);
  },
  'Host or Origin not allowed (DNS rebinding)': async () => {
    const res = await rawPost(stack.gatewayUrl, mcpPath(), LIST, {
      headers: { origin: 'http://evil.example' },
    });
    const body = JSON.parse(res.text);
    return {
      status: res.status,
      code: body.error.data.code,
      rpc: body.error.code,
      headers: new Headers(),
      body,
    };
  },
  'body is not JSON, or empty': () => post(mcpPath(), '{"jsonrpc": "2.0",'),
  'body nested deeper than 72 levels (before anything parses it)': () => post(mcpPath(), '['.repeat(80)),
  'body not a JSON-RPC 2.0 message or a non-empty batch of them': () => post(mcpPath(), '{"hello": 1}'),
  'Content-Type not `application/json`': () => post(mcpPath(), LIST, { 'content-type': 'text/plain' }),
  'URL percent-escapes not UTF-8, or a key over 100 characters': () => post('/api/v2/mcp/server/%ff', LIST),
  'body over `GATEWAY_BODY_LIMIT_BYTES`': () =>
    post(
      mcpPath(),
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { x: 'x'.repeat(5000) } }),
    ),
  '`MCP-Protocol-Version` header naming no supported version (not on `initialize`)': () =>
    post(mcpPath(), LIST, { 'mcp-protocol-version': '1999-01-01' }),
  'rate limit (header `Retry-After`)': () =>
    withGateway({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' }, async (url) => {
      await post(mcpPath(), LIST, {}, url);
      const res = await post(mcpPath(), LIST, {}, url);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      return res;
    }),
  'new key past an unknown-key lookup cap (`Retry-After`)': () =>
    withGateway({ UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND: '1' }, async (url) => {
      await post(`/api/v2/mcp/server/${unusedApiKey()}`, LIST, {}, url);
      return post(`/api/v2/mcp/server/${unusedApiKey()}`, LIST, {}, url);
    }),
  'control plane unreachable and the key not cached (`Retry-After`)': async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const gateway = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: closed }),
      false,
    );
    const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
    try {
      return await post(mcpPath(), LIST, {}, url);
    } finally {
      await gateway.close();
    }
  },
  'GET/DELETE for a session this gateway does not hold': () =>
    call(`${stack.gatewayUrl}${mcpPath()}`, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'no-such-session' },
    }),
};
MCP_TRIGGERS['two `Host` headers, none on HTTP/1.1, or an absolute URL as request target'] = async () => {
  const host = `Host: ${new URL(stack.gatewayUrl).host}`;
  const head = ['Content-Type: application/json', 'Accept: application/json, text/event-stream'];
  const path = mcpPath();
  const absolute = await onSocket(`POST http://evil.example${path} HTTP/1.1`, [host, ...head], LIST);
  expect([absolute.status, absolute.code]).toEqual([400, 'VALIDATION_FAILED']);
  return onSocket(`POST ${path} HTTP/1.1`, [host, 'Host: evil.example', ...head], LIST);
};

const MCP_UNTRIGGERABLE: Record<string, string> = {
  'initialize past a session cap, all sessions busy (`Retry-After`)':
    'needs every session held busy by a call in flight; pinned in gateway.sessions.resilience.test.ts',
  'a request id already in flight in this session':
    'needs a request held open on a session stream while its id is sent again; pinned in gateway.request-ids.error.test.ts',
};

describe('docs/reference/gateway.md error tables, row by row', () => {
  it('"Gateway routes other than MCP": status, code and the REST body', async () => {
    const rows = tableRows('Gateway routes other than MCP');
    expect(rows.length).toBeGreaterThan(5);
    for (const row of rows) {
      const trigger = REST_TRIGGERS[row.situation];
      if (!trigger) {
        expect(REST_UNTRIGGERABLE[row.situation], `no check for the row "${row.situation}"`).toBeDefined();
        continue;
      }
      const res = await trigger();
      expect([row.situation, res.status, res.code]).toEqual([row.situation, row.status, row.code]);
      expect(res.body.jsonrpc).toBeUndefined();
      expect(Object.keys(res.body.error).sort()).toEqual(
        row.situation.includes('no `request_id`') ? ['code', 'message'] : ['code', 'message', 'request_id'],
      );
      expect(res.body.error.message.length).toBeGreaterThan(10);
    }
  });

  it('"MCP gateway answers": status, data.code and the JSON-RPC body', async () => {
    const rows = tableRows('MCP gateway answers');
    expect(rows.length).toBeGreaterThan(10);
    for (const row of rows) {
      const trigger = MCP_TRIGGERS[row.situation];
      if (!trigger) {
        expect(MCP_UNTRIGGERABLE[row.situation], `no check for the row "${row.situation}"`).toBeDefined();
        continue;
      }
      const res = await trigger();
      expect([row.situation, res.status, res.code]).toEqual([row.situation, row.status, row.code]);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null });
      expect([row.situation, res.rpc]).toEqual([row.situation, Number(row.cells[2])]);
    }
  });
});

/** Rows of the in-MCP table of "MCP gateway answers": the requests that must get that error. */
const IN_MCP_TRIGGERS: Record<string, object[]> = {
  '`tools/call` without a string `params.name` (`tools/call needs params.name, a string`)': [
    { method: 'tools/call', params: { arguments: {} } },
    { method: 'tools/call', params: { name: 7, arguments: {} } },
  ],
  '`tools/call` whose `params.arguments` is not an object': [
    { method: 'tools/call', params: { name: 'find_customers', arguments: [1] } },
    { method: 'tools/call', params: { name: 'find_customers', arguments: 'query' } },
  ],
  "a list's cursor not a string, not one the gateway handed out, or from an older version of the list": [
    { method: 'tools/list', params: { cursor: 5 } },
    { method: 'tools/list', params: { cursor: 'not-a-cursor!' } },
    { method: 'tools/list', params: { cursor: Buffer.from('9999').toString('base64url') } },
    { method: 'tools/list', params: { cursor: Buffer.from('0.find_customers').toString('base64url') } },
    { method: 'prompts/list', params: { cursor: Buffer.from('1.x').toString('base64url') } },
  ],
  "other params the method's schema refuses (`initialize`, `logging/setLevel`), `params.task`": [
    { method: 'logging/setLevel', params: { level: 'loudest' } },
    { method: 'tools/call', params: { name: 'find_customers', arguments: { query: '@' }, task: { ttl: 1 } } },
  ],
  'an unknown tool (the message names close matches)': [
    { method: 'tools/call', params: { name: 'find_customer', arguments: {} } },
  ],
  '`prompts/get` of an unknown prompt, without a required argument (all named), or with one it does not declare':
    [
      { method: 'prompts/get', params: { name: 'no_such_prompt' } },
      { method: 'prompts/get', params: {} },
    ],
  '`completion/complete` for an unknown prompt or argument': [
    {
      method: 'completion/complete',
      params: { ref: { type: 'ref/prompt', name: 'no_such_prompt' }, argument: { name: 'a', value: '' } },
    },
  ],
  '`resources/read` of a URI that names no resource of the exposure, or no node under its context': [
    { method: 'resources/read', params: { uri: 'bindery://tools/no_such_tool/context' } },
    { method: 'resources/read', params: { uri: 'bindery://tools/find_customers/context/99' } },
    { method: 'resources/read', params: { uri: 'other:x' } },
  ],
  '`resources/read` of a path with a `.` or `..` segment (also percent-encoded) or bad percent-encoding': [
    { method: 'resources/read', params: { uri: 'bindery://tools/find_customers/context/..' } },
    { method: 'resources/read', params: { uri: 'bindery://tools/find_customers/context/%2E' } },
    { method: 'resources/read', params: { uri: 'bindery://tools/find_customers/context/%ZZ' } },
  ],
  'an unknown method': [{ method: 'nope/nothing', params: {} }],
};

describe('docs/reference/gateway.md in-MCP error table, row by row', () => {
  let lanes: Lanes;
  beforeAll(async () => {
    lanes = await lanesFor(stack.gatewayUrl, mcpPath());
  });

  /** The error answered to one request with id 7 on `lane`. */
  async function errorOf(lane: Lane, message: object): Promise<{ code: number; message: string }> {
    const answer = await lanes.post(lane, JSON.stringify({ jsonrpc: '2.0', id: 7, ...message }));
    expect(answer.status).toBe(200);
    return responseTo(answer, 7).error;
  }

  it('answers each row with its JSON-RPC code and the request id, on every lane', async () => {
    const rows = tableRows('MCP gateway answers', 1);
    expect(rows.length).toBeGreaterThan(4);
    for (const row of rows) {
      const messages = IN_MCP_TRIGGERS[row.situation];
      expect(messages, `no check for the row "${row.situation}"`).toBeDefined();
      for (const lane of LANES) {
        for (const message of messages!) {
          const where = `${row.situation} / ${JSON.stringify(message)} / ${lane}`;
          const error = await errorOf(lane, message);
          expect([where, error?.code]).toEqual([where, Number(row.code)]);
          // One message, written once, saying what is wrong.
          expect(error.message.length, where).toBeGreaterThan(10);
          expect(error.message, where).not.toMatch(/MCP error -\d+:.*MCP error -\d+:/);
        }
      }
    }
    // The unknown tool's message names the close match.
    const unknown = await errorOf(
      'fast lane',
      IN_MCP_TRIGGERS['an unknown tool (the message names close matches)']![0]!,
    );
    expect(unknown.message).toContain('find_customers');
  });
});

describe('OAuth discovery', () => {
  const PROBES = [
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-authorization-server',
    '/.well-known/openid-configuration',
  ];

  it('answers 404 in the REST body, with or without a path suffix, without a key lookup or a token', async () => {
    const lookups = async () =>
      (await stack.gateway.gateway.metrics.configFetches.get()).values.reduce((sum, v) => sum + v.value, 0);
    const before = await lookups();
    await withGateway({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' }, async (url) => {
      for (const probe of PROBES) {
        for (const suffix of ['', mcpPath(), `/api/v2/mcp/server/${unusedApiKey()}`]) {
          const res = await call(`${url}${probe}${suffix}`);
          expect(res.status).toBe(404);
          expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', request_id: expect.any(String) });
          expect(res.body.error.message).toContain('no OAuth');
          expect(res.body.error.message).not.toContain(exposed.apiKey);
        }
      }
      // The key's one token is still there.
      expect((await post(mcpPath(), LIST, {}, url)).status).toBe(200);
    });
    for (const probe of PROBES) expect((await call(`${stack.gatewayUrl}${probe}`)).status).toBe(404);
    expect(await lookups()).toBe(before);
  });

  it('401: "Bearer" for no key, "Bearer error=invalid_token" for a wrong one, never resource_metadata', async () => {
    const none = await post('/api/v2/mcp/server', LIST);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    for (const key of [unusedApiKey(), 'bnd_key_short']) {
      const wrong = await post(`/api/v2/mcp/server/${key}`, LIST);
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    }
  });

  it('the SDK client with a wrong key fails with the 401 and its message, and tries no OAuth', async () => {
    seen.length = 0;
    const client = new Client({ name: 'wrong-key', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(
      new URL(`${stack.gatewayUrl}/api/v2/mcp/server/${unusedApiKey()}`),
    );
    const error = await client.connect(transport).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error & { code?: number }).code).toBe(401);
    expect(error!.message).toContain('unknown api_key');
    await client.close().catch(() => undefined);
    expect(seen.length).toBeGreaterThan(0);
    for (const request of seen) {
      expect(request).not.toMatch(/\/\.well-known\/|\/register|\/authorize|\/token/);
    }
  });
});

describe('messages written once', () => {
  it('an unknown tool: the client sees "MCP error -32602:" once', async () => {
    const client = await stack.connect(mcpPath());
    const error = await client.callTool({ name: 'find_customer', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(
      /^MCP error -32602: unknown tool "find_customer"; did you mean "find_customers"/,
    );
    expect(error!.message.match(/MCP error/g)).toHaveLength(1);
  });
});
