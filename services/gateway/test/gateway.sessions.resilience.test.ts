// Pins the bounds on open sessions with the SDK's MCP Client against a real gateway: a new session
// past GATEWAY_MAX_SESSIONS_PER_KEY closes that key's least recently used idle session, past
// GATEWAY_MAX_SESSIONS any key's; the closed session's stream gets 404 "session not found" while
// its client's requests are still served (statelessly, as for a session of another replica); when
// every session under a cap is busy the initialize is refused with 429; idle sessions close after
// GATEWAY_SESSION_IDLE_MS, busy ones do not. No fixed sleeps: each wait is for state the test can
// see (a stream registered, a call arrived, a sweep run), with a deadline.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { resultJson, twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { INTERNAL_TOKEN, freePort, startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let a: Exposed;
let b: Exposed;

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { GATEWAY_MAX_SESSIONS: '3', GATEWAY_MAX_SESSIONS_PER_KEY: '2' } });
  a = await twoTableExposure(stack);
  b = await twoTableExposure(stack);
});
afterAll(async () => {
  stack?.thawControlPlane();
  await stack?.close();
});

const sessionId = (client: Client) => (client.transport as { sessionId?: string }).sessionId!;
const metric = async (name: 'sessionsClosed' | 'sessionsRefused', label: string) =>
  (await stack.gateway.gateway.metrics[name].get()).values.find((v) =>
    Object.values(v.labels).includes(label),
  )?.value ?? 0;
const open = () => stack.gateway.gateway.sessions.size;
const count = { query: 'length(@)' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `check` holds, polling; fails naming `what` after `timeoutMs`. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/**
 * What a GET stream for this session answers now: 404 once the gateway closed it, 409 while it is
 * open (its SDK client holds the session's one stream already).
 */
async function stream(exposed: Exposed, id: string) {
  const controller = new AbortController();
  const res = await fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${exposed.apiKey}`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
    signal: controller.signal,
  });
  const body: Json = res.status === 200 ? undefined : await res.json();
  controller.abort();
  return { status: res.status, body };
}

/** Initialize as a raw request: the refusal is an HTTP answer, not an exception. */
function initialize(exposed: Exposed) {
  return fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${exposed.apiKey}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'caps', version: '1' } },
    }),
  });
}

describe('caps', () => {
  let a1: Client;
  let a2: Client;
  let a3: Client;
  let b1: Client;
  let b2: Client;
  // An SDK client opens its GET stream just after connect() returns; that request marks the
  // session used too, so wait until it holds the stream (another GET then gets 409) before the
  // test orders sessions by use. That probe marks the newest session used again: no change.
  const connect = async (exposed: Exposed) => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await until(async () => (await stream(exposed, sessionId(client))).status === 409, 'its GET stream');
    return client;
  };

  it('past the per-key cap, closes that key’s least recently used idle session', async () => {
    a1 = await connect(a);
    a2 = await connect(a);
    await a1.listTools(); // a2 is now the least recently used
    const before = await metric('sessionsClosed', 'evicted_key');
    a3 = await connect(a);
    expect(await metric('sessionsClosed', 'evicted_key')).toBe(before + 1);
    expect(open()).toBe(2);

    expect((await stream(a, sessionId(a1))).status).toBe(409);
    const closed = await stream(a, sessionId(a2));
    expect(closed.status).toBe(404);
    expect(closed.body.error).toMatchObject({
      code: -32001,
      message: expect.stringContaining('session not found'),
    });
    // Its client is not stranded: its requests are served without the session, as on a replica
    // that never held it (the SDK Client does not re-initialise by itself).
    expect((await a2.listTools()).tools).toHaveLength(2);
    expect(resultJson(await a2.callTool({ name: 'find_customers', arguments: count }))).toBe(2);
    expect(open()).toBe(2);
  });

  it('past the global cap, closes the least recently used idle session of any key', async () => {
    await a3.listTools();
    await a1.listTools(); // order of use: a3, a1
    const before = await metric('sessionsClosed', 'evicted_global');
    b1 = await connect(b);
    expect(open()).toBe(3);
    b2 = await connect(b);
    expect(await metric('sessionsClosed', 'evicted_global')).toBe(before + 1);
    expect(open()).toBe(3);
    expect((await stream(a, sessionId(a3))).status).toBe(404);
    for (const [exposed, client] of [
      [a, a1],
      [b, b1],
      [b, b2],
    ] as const) {
      expect((await stream(exposed, sessionId(client))).status).toBe(409);
    }
  });

  it('refuses a new session with 429 when every session under the cap is busy', async () => {
    // Open: a1, b1, b2 (key b at its cap, all three at the global cap). Hold a call on each.
    stack.freezeControlPlane();
    const held: Promise<unknown>[] = [];
    try {
      for (const client of [a1, b1, b2]) {
        held.push(client.callTool({ name: 'find_customers', arguments: count }));
      }
      const sessions = stack.gateway.gateway.sessions;
      await until(
        () => [a1, b1, b2].every((c) => (sessions.peek(sessionId(c))?.busy ?? 0) > 0),
        'the three calls to reach the gateway',
      );

      const perKey = await initialize(b);
      expect(perKey.status).toBe(429);
      expect(perKey.headers.get('retry-after')).toBe('1');
      const body: Json = await perKey.json();
      expect(body).toMatchObject({ id: null, error: { code: -32029, data: { code: 'RATE_LIMITED' } } });
      expect(body.error.message).toMatch(
        /this api_key already has 2 sessions open on this gateway, all busy/,
      );
      const global = await initialize(a);
      expect(global.status).toBe(429);
      expect(((await global.json()) as Json).error.message).toMatch(
        /this gateway has 3 sessions open, all busy/,
      );
      expect(await metric('sessionsRefused', 'key')).toBe(1);
      expect(await metric('sessionsRefused', 'global')).toBe(1);
      expect(open()).toBe(3);
    } finally {
      stack.thawControlPlane();
    }
    // The calls under way were not disturbed.
    for (const result of await Promise.all(held)) expect(resultJson(result as never)).toBe(2);
    // Idle again: a new session takes the room of the least recently used one.
    expect((await initialize(b)).status).toBe(200);
    expect(open()).toBe(3);
  });
});

describe('idle timeout', () => {
  const IDLE_MS = 1_000;
  let idleGateway: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    idleGateway = await buildGateway(
      loadGatewayConfig({
        GATEWAY_PORT: String(port),
        CONTROL_PLANE_URL: stack.controlPlaneUrl,
        INTERNAL_TOKEN,
        GATEWAY_SESSION_IDLE_MS: String(IDLE_MS),
      }),
      false,
    );
    url = await idleGateway.listen({ host: '127.0.0.1', port });
  });
  afterAll(() => idleGateway?.close());

  it('closes sessions idle for GATEWAY_SESSION_IDLE_MS, but not one busy with a call', async () => {
    const connect = async () => {
      const client = new Client({ name: 'idle', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/api/v2/mcp/server/${a.apiKey}`)),
      );
      return client;
    };
    const idle = await connect();
    const working = await connect();
    const sessions = idleGateway.gateway.sessions;
    expect(sessions.size).toBe(2);
    stack.freezeControlPlane();
    let call: Promise<unknown> | undefined;
    try {
      call = working.callTool({ name: 'find_customers', arguments: count });
      // Busy from the moment its call arrived, and last used no later than that.
      await until(() => (sessions.peek(sessionId(working))?.busy ?? 0) > 0, 'the call to reach the gateway');
      const busySince = Date.now();
      // A sweep that would have closed both, were they idle (sweeps run every second here).
      await until(() => sessions.lastSweepAt > busySince + IDLE_MS, 'a sweep past the idle time');
      expect(sessions.peek(sessionId(idle))).toBeUndefined();
      expect(sessions.peek(sessionId(working))).toBeDefined();
      expect(sessions.size).toBe(1);
    } finally {
      stack.thawControlPlane();
    }
    expect(resultJson((await call) as never)).toBe(2);
    const closed = (await idleGateway.gateway.metrics.sessionsClosed.get()).values.find(
      (v) => v.labels.reason === 'idle',
    );
    expect(closed?.value).toBe(1);
    await idle.close().catch(() => undefined);
    await working.close().catch(() => undefined);
  });
});
