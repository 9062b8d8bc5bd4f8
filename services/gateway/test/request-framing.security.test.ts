// Pins that the gateway answers 400 to a request whose framing leaves its host or path in doubt,
// on every entry and every path a request can take (the fast lane on a held session included):
// two Host headers (Node would keep the first, a proxy in front may read the last), none on
// HTTP/1.1, an absolute URL as request target (routed by its path while Host names another host),
// `OPTIONS *` and CONNECT. MCP endpoints answer with a JSON-RPC error, everything else with the
// REST error body, and the connection is closed. Sent over raw sockets: no HTTP client sends these.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { PROTOCOL_VERSION, openSession } from './support/mcp-raw.ts';
import { requestText, socketRequest, type SocketAnswer } from './support/raw-socket.ts';
import { OPS_TOKEN, startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let urlPath: string;
let urlSession: string;
let bearerSession: string;
let host: string;

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
  host = new URL(stack.gatewayUrl).host;
  urlPath = `/api/v2/mcp/server/${exposed.apiKey}`;
  urlSession = await openSession(stack.gatewayUrl, urlPath);
  bearerSession = await openSession(stack.gatewayUrl, '/api/v2/mcp/server', false, {
    authorization: `Bearer ${exposed.apiKey}`,
  });
});
afterAll(() => stack.close());

const MCP_HEAD = ['Content-Type: application/json', 'Accept: application/json, text/event-stream'];
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' });

function send(requestLine: string, head: readonly string[], body = ''): Promise<SocketAnswer> {
  return socketRequest(stack.gatewayUrl, requestText(requestLine, head, body));
}

/** Headers of a tools/list on a held session: what the fast lane would serve. */
function onSession(sessionId: string, extra: readonly string[] = []): string[] {
  return [...MCP_HEAD, `Mcp-Session-Id: ${sessionId}`, `Mcp-Protocol-Version: ${PROTOCOL_VERSION}`, ...extra];
}

function expectJsonRpcRefusal(answer: SocketAnswer, message: RegExp): void {
  expect(answer.status, answer.text).toBe(400);
  const body: Json = JSON.parse(answer.text);
  expect(body.jsonrpc).toBe('2.0');
  expect(body.error.code).toBe(-32600);
  expect(body.error.data.code).toBe('VALIDATION_FAILED');
  expect(body.error.message).toMatch(message);
  expect(answer.headers.connection).toBe('close');
}

function expectRestRefusal(answer: SocketAnswer, message: RegExp): void {
  expect(answer.status, answer.text).toBe(400);
  const body: Json = JSON.parse(answer.text);
  expect(body.error.code).toBe('VALIDATION_FAILED');
  expect(body.error.message).toMatch(message);
  expect(typeof body.error.request_id).toBe('string');
}

const TWO_HOSTS = /more than one Host header/;
const ABSOLUTE = /absolute URL/;

describe('two Host headers', () => {
  const hosts = () => [`Host: ${host}`, 'Host: evil.example'];

  it('are refused on a held session of the URL entry, which the fast lane would otherwise serve', async () => {
    // The same request with one Host is served (the control for what follows).
    const served = await send(`POST ${urlPath} HTTP/1.1`, [`Host: ${host}`, ...onSession(urlSession)], LIST);
    expect(served.status).toBe(200);
    expect(served.text).toContain('find_customers');
    expectJsonRpcRefusal(
      await send(`POST ${urlPath} HTTP/1.1`, [...hosts(), ...onSession(urlSession)], LIST),
      TWO_HOSTS,
    );
  });

  it('are refused on the bearer entry, with a session and without', async () => {
    const auth = `Authorization: Bearer ${exposed.apiKey}`;
    expectJsonRpcRefusal(
      await send('POST /api/v2/mcp/server HTTP/1.1', [...hosts(), auth, ...onSession(bearerSession)], LIST),
      TWO_HOSTS,
    );
    expectJsonRpcRefusal(
      await send('POST /api/v2/mcp/server HTTP/1.1', [...hosts(), auth, ...MCP_HEAD], LIST),
      TWO_HOSTS,
    );
  });

  it('are refused on the legacy and caller entries, and on a GET stream', async () => {
    expectJsonRpcRefusal(
      await send(`POST /api/v1/mcp/server/${exposed.apiKey} HTTP/1.1`, [...hosts(), ...MCP_HEAD], LIST),
      TWO_HOSTS,
    );
    expectJsonRpcRefusal(
      await send(
        'POST /api/v2/mcp/caller/vscode HTTP/1.1',
        [...hosts(), 'Authorization: Bearer x', ...MCP_HEAD],
        LIST,
      ),
      TWO_HOSTS,
    );
    expectJsonRpcRefusal(
      await send(`GET ${urlPath} HTTP/1.1`, [
        ...hosts(),
        'Accept: text/event-stream',
        `Mcp-Session-Id: ${urlSession}`,
      ]),
      TWO_HOSTS,
    );
  });

  it('are refused on the REST entry and the ops routes, in the REST error body', async () => {
    const auth = `Authorization: Bearer ${exposed.apiKey}`;
    expectRestRefusal(await send('GET /api/v2/rest/tools HTTP/1.1', [...hosts(), auth]), TWO_HOSTS);
    expectRestRefusal(await send('GET /api/v2/rest/openapi.json HTTP/1.1', [...hosts(), auth]), TWO_HOSTS);
    expectRestRefusal(await send('GET /healthz HTTP/1.1', hosts()), TWO_HOSTS);
    expectRestRefusal(await send('GET /metrics HTTP/1.1', hosts()), TWO_HOSTS);
    // An unknown path too: nothing is routed.
    expectRestRefusal(await send('GET /nowhere HTTP/1.1', hosts()), TWO_HOSTS);
  });

  it('are refused whatever their case and order', async () => {
    expectJsonRpcRefusal(
      await send(
        `POST ${urlPath} HTTP/1.1`,
        ['host: evil.example', ...onSession(urlSession), `HOST: ${host}`],
        LIST,
      ),
      TWO_HOSTS,
    );
  });
});

describe('an absolute URL as request target', () => {
  it('is refused on the MCP entries, though its path names one and Host is allowed', async () => {
    expectJsonRpcRefusal(
      await send(`POST http://evil.example${urlPath} HTTP/1.1`, [`Host: ${host}`, ...MCP_HEAD], LIST),
      ABSOLUTE,
    );
    // With a held session, and naming this very gateway: still not origin-form.
    expectJsonRpcRefusal(
      await send(`POST http://${host}${urlPath} HTTP/1.1`, [`Host: ${host}`, ...onSession(urlSession)], LIST),
      ABSOLUTE,
    );
    expectJsonRpcRefusal(
      await send(
        'POST https://evil.example/api/v2/mcp/server HTTP/1.1',
        [`Host: ${host}`, `Authorization: Bearer ${exposed.apiKey}`, ...onSession(bearerSession)],
        LIST,
      ),
      ABSOLUTE,
    );
  });

  it('is refused on the REST entry and the ops routes, in the REST error body', async () => {
    const auth = `Authorization: Bearer ${exposed.apiKey}`;
    expectRestRefusal(
      await send('GET http://evil.example/api/v2/rest/tools HTTP/1.1', [`Host: ${host}`, auth]),
      ABSOLUTE,
    );
    expectRestRefusal(
      await send(
        'POST http://evil.example/api/v2/rest/tool-calls HTTP/1.1',
        [`Host: ${host}`, auth, 'Content-Type: application/json'],
        JSON.stringify({ id: 1, tool_name: 'find_customers', arguments: { query: '[0].name' } }),
      ),
      ABSOLUTE,
    );
    expectRestRefusal(await send('GET http://evil.example/healthz HTTP/1.1', [`Host: ${host}`]), ABSOLUTE);
    expectRestRefusal(
      await send(
        'POST http://evil.example/cache/invalidate HTTP/1.1',
        [`Host: ${host}`, `Authorization: Bearer ${OPS_TOKEN}`, 'Content-Type: application/json'],
        JSON.stringify({ all: true }),
      ),
      ABSOLUTE,
    );
  });
});

describe('other framings', () => {
  it('HTTP/1.1 without Host: 400 in the REST error body (HTTP/1.0 may omit it)', async () => {
    expectRestRefusal(await send('GET /healthz HTTP/1.1', []), /no Host header/);
    expectJsonRpcRefusal(
      await send(`POST ${urlPath} HTTP/1.1`, onSession(urlSession), LIST),
      /no Host header/,
    );
    const old = await send('GET /healthz HTTP/1.0', []);
    expect(old.status).toBe(200);
  });

  it('OPTIONS * and CONNECT: 400, not a route of the gateway', async () => {
    expectRestRefusal(await send('OPTIONS * HTTP/1.1', [`Host: ${host}`]), /not a path/);
    const tunnel = await send(`CONNECT ${host} HTTP/1.1`, [`Host: ${host}`]);
    expect(tunnel.status, tunnel.text).toBe(400);
    expect(JSON.parse(tunnel.text).error.code).toBe('VALIDATION_FAILED');
  });

  it('the gateway still serves the sessions afterwards', async () => {
    const served = await send(`POST ${urlPath} HTTP/1.1`, [`Host: ${host}`, ...onSession(urlSession)], LIST);
    expect(served.status).toBe(200);
  });
});
