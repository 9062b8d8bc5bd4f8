// Pins the gateway's protocol hygiene against the real gateway and control plane:
// - version negotiation: a client asking for 2025-03-26, 2025-06-18 or 2025-11-25 gets that version
//   back, and the SDK Client speaking it (its MCP-Protocol-Version header) lists and calls tools; an
//   unknown version gets the SDK's latest back;
// - the MCP-Protocol-Version header: a version no one supports is 400 on every path a request can
//   take (fast lane, framework route, SDK transport with and without a session, GET stream, DELETE)
//   with one JSON-RPC body naming the supported versions, and the session goes on; a request
//   without the header is served (taken as 2025-03-26); an initialize is not checked;
// - ping both ways: a client's ping answers {} on every path; the gateway's session server pings
//   the SDK Client over its standing GET stream and gets the client's answer;
// - a session its client ended with DELETE is gone: later requests naming it get 404.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  EmptyResultSchema,
  LATEST_PROTOCOL_VERSION,
  PingRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { openSession, readAnswer, responseTo, type McpAnswer } from './support/mcp-raw.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let path: string;
/** The MCP-Protocol-Version header of every request the gateway's server received, by session. */
const versionsSeen = new Map<string, (string | undefined)[]>();
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
  path = `/api/v2/mcp/server/${exposed.apiKey}`;
  stack.gateway.server.on('request', (req) => {
    const session = req.headers['mcp-session-id'];
    if (typeof session !== 'string') return;
    const version = req.headers['mcp-protocol-version'];
    versionsSeen.set(session, [...(versionsSeen.get(session) ?? []), version as string | undefined]);
  });
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await stack.close();
});

const BAD_VERSION = '1999-01-01';
const LIST = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' });
const CALL = (id: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'find_customers', arguments: { query: '[1].name' } },
  });
const PING = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });

/** A raw initialize asking for `version`: the HTTP answer and the session it opened. */
async function initialize(version: string, headers: Record<string, string> = {}) {
  const res = await rawPost(
    stack.gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
    { headers },
  );
  return { answer: readAnswer(res), sessionId: res.headers['mcp-session-id'] as string | undefined };
}

/**
 * The SDK Client on a session opened at `version`: the SDK's Client always asks for its latest
 * version, so the initialize is sent by hand and the client joins the session speaking `version`
 * (its transport sends that MCP-Protocol-Version with every request), then sends initialized.
 */
async function clientAt(version: string): Promise<{ client: Client; sessionId: string; negotiated: string }> {
  const { answer, sessionId } = await initialize(version);
  expect(answer.status).toBe(200);
  expect(sessionId).toEqual(expect.any(String));
  const negotiated = responseTo(answer, 0).result.protocolVersion as string;
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`), {
    sessionId: sessionId!,
  });
  transport.setProtocolVersion(negotiated);
  const client = new Client({ name: 'protocol-e2e', version: '1.0.0' });
  clients.push(client);
  await client.connect(transport);
  await client.notification({ method: 'notifications/initialized' });
  return { client, sessionId: sessionId!, negotiated };
}

/** POSTs `body` with these headers (no content-length with `chunked`: the framework's route). */
async function post(body: string, headers: Record<string, string>, chunked = false): Promise<McpAnswer> {
  return readAnswer(await rawPost(stack.gatewayUrl, path, body, { headers, chunked }));
}

/** The refusal of an unsupported MCP-Protocol-Version, as every path answers it. */
function expectVersionRefusal(answer: { status: number; messages: Json[] }, where: string) {
  expect([where, answer.status]).toEqual([where, 400]);
  expect(answer.messages, where).toHaveLength(1);
  const body = answer.messages[0];
  expect(body, where).toMatchObject({
    jsonrpc: '2.0',
    id: null,
    error: {
      code: -32600,
      data: { code: 'VALIDATION_FAILED', supported_versions: [...SUPPORTED_PROTOCOL_VERSIONS] },
    },
  });
  expect(body.error.message, where).toContain(`"${BAD_VERSION}"`);
  for (const version of SUPPORTED_PROTOCOL_VERSIONS) expect(body.error.message, where).toContain(version);
}

describe('version negotiation', () => {
  it.each(['2025-03-26', '2025-06-18', '2025-11-25'])(
    'a client asking for %s gets it back, then lists and calls tools speaking it',
    async (version) => {
      const { client, sessionId, negotiated } = await clientAt(version);
      expect(negotiated).toBe(version);
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name).sort()).toEqual(['find_customers', 'peek_orders']);
      const called = await client.callTool({ name: 'find_customers', arguments: { query: '[1].name' } });
      expect(called.isError).toBeFalsy();
      expect(resultJson(called)).toBe('Grace');
      expect(await client.ping()).toEqual({});
      // Every request of the session after initialize carried the negotiated version.
      const seen = versionsSeen.get(sessionId) ?? [];
      expect(seen.length).toBeGreaterThanOrEqual(4);
      expect(new Set(seen)).toEqual(new Set([version]));
    },
  );

  it('the SDK Client as it comes negotiates the latest version', async () => {
    const client = await stack.connect(path);
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    expect((await client.listTools()).tools).toHaveLength(2);
    expect(versionsSeen.get(sessionId)).toContain(LATEST_PROTOCOL_VERSION);
  });

  it.each(['2024-01-01', 'not-a-version'])(
    'an unknown version (%s) gets the latest back, and the session works at it',
    async (version) => {
      const { client, negotiated } = await clientAt(version);
      expect(negotiated).toBe(LATEST_PROTOCOL_VERSION);
      expect((await client.listTools()).tools).toHaveLength(2);
      expect(resultJson(await client.callTool({ name: 'peek_orders', arguments: {} }))).toBeDefined();
    },
  );

  it('an initialize is answered whatever MCP-Protocol-Version header it carries', async () => {
    const { answer, sessionId } = await initialize('2025-06-18', { 'mcp-protocol-version': BAD_VERSION });
    expect(answer.status).toBe(200);
    expect(sessionId).toEqual(expect.any(String));
    expect(responseTo(answer, 0).result.protocolVersion).toBe('2025-06-18');
  });
});

describe('the MCP-Protocol-Version header after initialize', () => {
  let plain: string;
  beforeAll(async () => {
    plain = await openSession(stack.gatewayUrl, path);
  });

  /**
   * Each way a POST reaches its answer, with `version` as its header (none when undefined). A
   * batch is never a direct answer: on a held session it goes to the session's SDK transport.
   */
  function lanes(version: string | undefined) {
    const v: Record<string, string> = version === undefined ? {} : { 'mcp-protocol-version': version };
    return {
      'fast lane': (body: string) => post(body, { 'mcp-session-id': plain, ...v }),
      framework: (body: string) => post(body, { 'mcp-session-id': plain, ...v }, true),
      'SDK, held session': (body: string) => post(`[${body}]`, { 'mcp-session-id': plain, ...v }),
      'SDK, stateless': (body: string) => post(body, v),
    };
  }

  it('a version none supports is 400 with the supported versions, on every path, and spends nothing', async () => {
    const before = (await stack.gateway.gateway.metrics.toolCalls.get()).values.reduce(
      (s, v) => s + v.value,
      0,
    );
    for (const [lane, send] of Object.entries(lanes(BAD_VERSION))) {
      for (const body of [LIST(1), CALL(2), PING(3)]) {
        expectVersionRefusal(await send(body), `${lane} ${body}`);
      }
    }
    // Nothing was run.
    const after = (await stack.gateway.gateway.metrics.toolCalls.get()).values.reduce(
      (s, v) => s + v.value,
      0,
    );
    expect(after).toBe(before);
    // An empty header and a list of versions are no version either.
    for (const version of ['', '2025-06-18, 2025-03-26']) {
      const answer = await post(LIST(5), { 'mcp-session-id': plain, 'mcp-protocol-version': version });
      expect(answer.status, JSON.stringify(version)).toBe(400);
      expect(answer.messages[0].error.data.code).toBe('VALIDATION_FAILED');
    }
  });

  it('the GET stream and DELETE are refused alike, and the session goes on', async () => {
    const url = `${stack.gatewayUrl}${path}`;
    const stream = await fetch(url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': plain, 'mcp-protocol-version': BAD_VERSION },
    });
    expectVersionRefusal({ status: stream.status, messages: [await stream.json()] }, 'GET');
    const close = await fetch(url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': plain, 'mcp-protocol-version': BAD_VERSION },
    });
    expectVersionRefusal({ status: close.status, messages: [await close.json()] }, 'DELETE');
    expect(stack.gateway.gateway.sessions.peek(plain)).toBeDefined();
    const listed = await post(LIST(6), { 'mcp-session-id': plain, 'mcp-protocol-version': '2025-06-18' });
    expect(listed.status).toBe(200);
    expect(responseTo(listed, 6).result.tools).toHaveLength(2);
  });

  it('a session its client ended (DELETE) answers 404 on every path afterwards; others go on', async () => {
    const ended = await openSession(stack.gatewayUrl, path);
    const other = await openSession(stack.gatewayUrl, path);
    const close = await fetch(`${stack.gatewayUrl}${path}`, {
      method: 'DELETE',
      headers: { 'mcp-session-id': ended, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(close.status).toBe(200);
    for (const [body, chunked] of [
      [LIST(40), false],
      [CALL(41), false],
      [LIST(42), true],
    ] as const) {
      const answer = await post(
        body,
        { 'mcp-session-id': ended, 'mcp-protocol-version': '2025-11-25' },
        chunked,
      );
      expect(answer.status).toBe(404);
      expect(answer.messages[0].error.code).toBe(-32001);
    }
    const listed = await post(LIST(43), { 'mcp-session-id': other, 'mcp-protocol-version': '2025-11-25' });
    expect(responseTo(listed, 43).result.tools).toHaveLength(2);
  });

  it(`a request without the header is served (taken as ${DEFAULT_NEGOTIATED_PROTOCOL_VERSION}) on every path`, async () => {
    for (const [lane, send] of Object.entries(lanes(undefined))) {
      const listed = await send(LIST(7));
      expect([lane, listed.status]).toEqual([lane, 200]);
      expect(responseTo(listed, 7).result.tools, lane).toHaveLength(2);
      const called = await send(CALL(8));
      expect(resultJson(responseTo(called, 8).result), lane).toBe('Grace');
    }
  });

  it('any supported version is served, also one older than the session negotiated', async () => {
    for (const version of SUPPORTED_PROTOCOL_VERSIONS) {
      for (const [lane, send] of Object.entries(lanes(version))) {
        const listed = await send(LIST(9));
        expect([version, lane, listed.status]).toEqual([version, lane, 200]);
        expect(responseTo(listed, 9).result.tools).toHaveLength(2);
      }
    }
  });
});

describe('ping', () => {
  it('a client ping answers {} on every path', async () => {
    const plain = await openSession(stack.gatewayUrl, path);
    const v = { 'mcp-protocol-version': '2025-06-18' };
    const answers = {
      'fast lane': await post(PING(11), { 'mcp-session-id': plain, ...v }),
      framework: await post(PING(11), { 'mcp-session-id': plain, ...v }, true),
      'SDK, held session (a batch)': await post(`[${PING(11)}]`, { 'mcp-session-id': plain, ...v }),
      'SDK, stateless': await post(PING(11), v),
    };
    for (const [lane, answer] of Object.entries(answers)) {
      expect([lane, answer.status]).toEqual([lane, 200]);
      expect(responseTo(answer, 11), lane).toEqual({ jsonrpc: '2.0', id: 11, result: {} });
    }
    // On a held session the ping is a plain JSON answer of its own (no SSE stream).
    const direct = await rawPost(stack.gatewayUrl, path, PING(13), {
      headers: { 'mcp-session-id': plain, ...v },
    });
    expect(direct.headers['content-type']).toBe('application/json');
    expect(direct.text).toBe('{"jsonrpc":"2.0","id":13,"result":{}}');
    // A ping's params are checked on the direct answer as on the SDK path.
    const task = JSON.stringify({ jsonrpc: '2.0', id: 12, method: 'ping', params: { task: { ttl: 1 } } });
    for (const body of [task, `[${task}]`]) {
      const refused = await post(body, { 'mcp-session-id': plain, ...v });
      expect([body, responseTo(refused, 12).error.code]).toEqual([body, -32602]);
    }
  });

  it("the SDK Client's ping() gets {}", async () => {
    const client = await stack.connect(path);
    expect(await client.ping()).toEqual({});
  });

  it("the gateway's session pings the client over its GET stream and gets the client's answer", async () => {
    const client = await stack.connect(path);
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    // The client's own ping handler, counting: the answer the server gets is this client's.
    let pinged = 0;
    client.removeRequestHandler('ping');
    client.setRequestHandler(PingRequestSchema, () => {
      pinged += 1;
      return {};
    });
    const session = stack.gateway.gateway.sessions.peek(sessionId);
    expect(session).toBeDefined();
    // The client opens its GET stream after initialized, without telling: a ping sent before the
    // stream is there is not delivered, so it is sent again (with a short deadline) until one is.
    const deadline = Date.now() + 10_000;
    let answer: unknown;
    while (answer === undefined) {
      answer = await session!.server
        .request({ method: 'ping' }, EmptyResultSchema, { timeout: 500 })
        .catch((error: unknown) => {
          if (Date.now() > deadline) throw error;
          return undefined;
        });
    }
    expect(answer).toEqual({});
    expect(pinged).toBeGreaterThanOrEqual(1);
    // Once the stream is up, Server.ping() itself reaches the client.
    const count = pinged;
    expect(await session!.server.ping()).toEqual({});
    expect(pinged).toBe(count + 1);
    // The session is still served afterwards.
    expect((await client.listTools()).tools).toHaveLength(2);
  });
});
