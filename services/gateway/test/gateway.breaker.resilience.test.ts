// Pins the circuit breaker in front of the control plane, with a real control plane frozen by
// SIGSTOP (it keeps its sockets and answers nothing): after three failures in a row the gateway
// serves stale configs without asking, fails tool calls in under 100 ms with UPSTREAM_FAILED saying
// the call was not sent, answers keys it never saw with 503 at once, and /readyz and a gauge say
// "degraded"; a call already sent keeps its own outcome; after SIGCONT a probe closes the breaker
// by itself. Also: a refused connection is reported as "not sent", a timeout is not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { resultJson, twoTableExposure, unusedApiKey, type Exposed } from '@bindery/test-support';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: {
      // Stale after 200 ms, so each request revalidates; a revalidation gives up after 600 ms
      // (short, yet long enough for a busy test machine while the control plane is up). A tool
      // call waits 6 s: the call sent before the breaker opens outlives three revalidations.
      CONFIG_CACHE_TTL_MS: '200',
      CONFIG_TIMEOUT_MS: '600',
      TOOL_CALL_TIMEOUT_MS: '6000',
      BREAKER_COOLDOWN_MS: '200',
      BREAKER_MAX_COOLDOWN_MS: '1000',
    },
  });
  exposed = await twoTableExposure(stack);
  // A cold control plane's first config answer can outlast the short CONFIG_TIMEOUT_MS on a busy
  // host: the connect is tried again then (what the tests below pin starts after it).
  for (let attempt = 1; ; attempt += 1) {
    try {
      client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
      break;
    } catch (error) {
      if (attempt >= 5) throw error;
      await sleep(500);
    }
  }
});
afterAll(async () => {
  stack?.thawControlPlane();
  await stack?.close();
});

const counter = async (name: 'configFetches' | 'breakerRejections') =>
  (await stack.gateway.gateway.metrics[name].get()).values.reduce((sum, v) => sum + v.value, 0);
const cacheCount = async (result: string) =>
  (await stack.gateway.gateway.metrics.cache.get()).values.find((v) => v.labels.result === result)?.value ??
  0;
const breaker = async () =>
  (await stack.gateway.gateway.metrics.breakerState.get()).values.find((v) => v.value === 1)?.labels.state;
const readiness = async () => {
  const res = await fetch(`${stack.gatewayUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; control_plane: string } };
};
const count = { query: 'length(@)' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('control plane frozen', () => {
  it('opens after three failures, fails fast while open, and closes by itself after SIGCONT', async () => {
    expect(resultJson(await client.callTool({ name: 'find_customers', arguments: count }))).toBe(2);
    expect(await breaker()).toBe('closed');
    expect(await readiness()).toMatchObject({ status: 200, body: { status: 'ready' } });

    stack.freezeControlPlane();
    try {
      // Sent while the breaker is closed: it waits for the frozen control plane.
      const inFlight = client.callTool({ name: 'find_customers', arguments: count });
      await sleep(250); // past the TTL

      // Three revalidations time out (600 ms each), each then serving the stale config.
      for (let i = 0; i < 3; i++) {
        expect((await client.listTools()).tools).toHaveLength(2);
      }
      expect(await breaker()).toBe('open');
      expect(await readiness()).toMatchObject({ status: 200, body: { status: 'degraded' } });

      // Open: the stale config is served without asking the control plane.
      const fetchesBefore = await counter('configFetches');
      const staleBefore = await cacheCount('stale');
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['find_customers', 'peek_orders']);
      expect(await counter('configFetches')).toBe(fetchesBefore);
      expect(await cacheCount('stale')).toBe(staleBefore + 1);

      // A tool call fails at once, and says nothing was sent.
      const rejectedBefore = await counter('breakerRejections');
      const started = performance.now();
      const failed = await client.callTool({ name: 'find_customers', arguments: count });
      const elapsed = performance.now() - started;
      expect(elapsed).toBeLessThan(100);
      expect(failed.isError).toBe(true);
      const error = resultJson(failed).error;
      expect(error.code).toBe('UPSTREAM_FAILED');
      expect(error.message).toMatch(/not sent, so nothing was applied/);
      expect(error.details).toEqual({ sent: false });
      expect(await counter('breakerRejections')).toBeGreaterThan(rejectedBefore);

      // A key never seen: 503 with Retry-After at once, nothing sent.
      const unknown = await rawPost(
        stack.gatewayUrl,
        `/api/v2/mcp/server/${unusedApiKey()}`,
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      );
      expect(unknown.status).toBe(503);
      expect(unknown.headers['retry-after']).toBe('5');
      expect(JSON.parse(unknown.text).error.data.code).toBe('UPSTREAM_FAILED');
      expect(await counter('configFetches')).toBe(fetchesBefore);

      stack.thawControlPlane();
      // The call sent before the breaker opened keeps its own outcome: the real answer.
      const late = await inFlight;
      expect(late.isError).toBeFalsy();
      expect(resultJson(late)).toBe(2);
    } finally {
      stack.thawControlPlane();
    }

    // A probe closes the breaker without any request from a client.
    await stack.waitForReadiness('ready', 10_000);
    expect(await breaker()).toBe('closed');
    const back = await client.callTool({ name: 'find_customers', arguments: count });
    expect(back.isError).toBeFalsy();
    expect(resultJson(back)).toBe(2);
  });

  it('reports a timed-out call as sent (its outcome is unknown), not as "nothing was applied"', async () => {
    stack.freezeControlPlane();
    try {
      const timedOut = await client.callTool({ name: 'find_customers', arguments: count });
      expect(timedOut.isError).toBe(true);
      const error = resultJson(timedOut).error;
      expect(error.code).toBe('TIMEOUT');
      expect(error.message).not.toMatch(/not sent/);
      expect(error.details).toEqual({ sent: true });
    } finally {
      stack.thawControlPlane();
    }
    await stack.waitForReadiness('ready', 10_000);
  });
});

describe('control plane stopped', () => {
  it('reports a refused connection as not sent, and recovers once it is back', async () => {
    await stack.stopControlPlane();
    try {
      const refused = await client.callTool({ name: 'find_customers', arguments: count });
      expect(refused.isError).toBe(true);
      const error = resultJson(refused).error;
      expect(error.code).toBe('UPSTREAM_FAILED');
      expect(error.message).toMatch(/ECONNREFUSED.*not sent, so nothing was applied/);
      // Two more refusals open the breaker; readiness says so.
      await client.callTool({ name: 'find_customers', arguments: count });
      await client.callTool({ name: 'find_customers', arguments: count });
      expect(await readiness()).toMatchObject({ status: 200, body: { status: 'degraded' } });
    } finally {
      await stack.startControlPlane(); // waits until the gateway says ready again
    }
    expect(resultJson(await client.callTool({ name: 'find_customers', arguments: count }))).toBe(2);
  });
});

describe('a slow tool on a healthy control plane', () => {
  it("never opens the breaker: one tenant's slow calls must not fail everyone's", async () => {
    // Its own gateway: one failure would open this breaker, and a call gives up after 300 ms.
    const strict = await startStack({
      gatewayEnv: { BREAKER_FAILURE_THRESHOLD: '1', TOOL_CALL_TIMEOUT_MS: '300' },
    });
    try {
      const user = await strict.admin('POST', '/api/v2/users', { name: 'slow' });
      const as = (method: string, path: string, body?: unknown) =>
        strict.admin(method, path, body, user.token);
      const table = await as('POST', '/api/v2/tables', {
        name: 'numbers',
        data: { items: Array.from({ length: 1_000 }, (_, i) => i) },
      });
      const adi = await as('POST', '/api/v2/adis', {
        table_id: table.id,
        json_path: '/items',
        operation_type: 'query',
      });
      // Spins until the sandbox's 1 s CPU deadline: past the gateway's 300 ms whatever the host's speed.
      const spin = await as('POST', '/api/v2/adis', {
        kind: 'custom',
        name: 'spin',
        code: 'export default function () { while (true) {} }',
        input_schema: { type: 'object' },
      });
      const aei = await as('POST', '/api/v2/aeis', { name: 'slow' });
      await as('POST', `/api/v2/aeis/${aei.id}/bindings`, [
        { adi_id: adi.id, tool_name: 'ask' },
        { adi_id: spin.id, tool_name: 'spin' },
      ]);
      const slowClient = await strict.connect(`/api/v2/mcp/server/${aei.api_key}`);
      // The first times out at the gateway; the next may too, or be refused at once by the control
      // plane's share of sandbox calls for one tenant (its earlier calls still run there).
      for (let i = 0; i < 3; i++) {
        const slow = await slowClient.callTool({ name: 'spin', arguments: {} });
        const code = resultJson(slow).error.code;
        if (i === 0) expect(code).toBe('TIMEOUT');
        else expect(['TIMEOUT', 'RATE_LIMITED']).toContain(code);
        await sleep(100); // the health check a timeout triggers
      }
      const state = (await strict.gateway.gateway.metrics.breakerState.get()).values.find(
        (v) => v.value === 1,
      )?.labels.state;
      expect(state).toBe('closed');
      const cheap = await slowClient.callTool({ name: 'ask', arguments: { query: 'length(@)' } });
      expect(resultJson(cheap)).toBe(1_000);
    } finally {
      await strict.close();
    }
  });
});
