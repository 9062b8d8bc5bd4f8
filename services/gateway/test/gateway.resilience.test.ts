// Pins the gateway's behaviour when the control plane blinks: a warm gateway still lists tools from
// its last good config (also after the TTL, stale-if-error), a tools/call answers isError with
// UPSTREAM_FAILED, readiness and metrics say so, and once the control plane is back calls succeed
// again without restarting the gateway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, twoTableExposure, unusedApiKey, type Exposed } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;

beforeAll(async () => {
  // A short TTL so the test also covers revalidation failing (stale-if-error), not just a fresh hit.
  stack = await startStack({ gatewayEnv: { CONFIG_CACHE_TTL_MS: '200' } });
  exposed = await twoTableExposure(stack);
});
afterAll(() => stack.close());

const metric = async (name: 'cache' | 'toolCalls', label: string) =>
  (await stack.gateway.gateway.metrics[name].get()).values
    .filter((v) => Object.values(v.labels).includes(label))
    .reduce((sum, v) => sum + v.value, 0);

describe('control plane up', () => {
  it('revalidates an expired entry with its ETag (304), then serves it fresh again', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    await client.listTools();
    const revalidatedBefore = await metric('cache', 'revalidated');
    const staleBefore = await metric('cache', 'stale');
    await new Promise((r) => setTimeout(r, 300));
    await client.listTools();
    expect(await metric('cache', 'revalidated')).toBe(revalidatedBefore + 1);
    const hitsBefore = await metric('cache', 'hit');
    await client.listTools();
    expect(await metric('cache', 'hit')).toBeGreaterThan(hitsBefore);
    expect(await metric('cache', 'revalidated')).toBe(revalidatedBefore + 1);
    expect(await metric('cache', 'stale')).toBe(staleBefore);
  });
});

describe('control plane down', () => {
  it('keeps listing, fails calls with UPSTREAM_FAILED, and recovers by itself', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    expect((await client.listTools()).tools).toHaveLength(2);
    expect(
      resultJson(await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } })),
    ).toBe(2);

    await stack.stopControlPlane();
    await new Promise((r) => setTimeout(r, 300)); // past the TTL: the next lookup must revalidate
    const staleBefore = await metric('cache', 'stale');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['find_customers', 'peek_orders']);
    expect(await metric('cache', 'stale')).toBeGreaterThan(staleBefore);

    const failed = await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
    expect(failed.isError).toBe(true);
    expect(resultJson(failed).error.code).toBe('UPSTREAM_FAILED');
    expect(await metric('toolCalls', 'upstream_failed')).toBeGreaterThan(0);

    await stack.startControlPlane();
    const back = await client.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
    expect(back.isError).toBeFalsy();
    expect(resultJson(back)).toBe(2);
  });

  it('a key never seen before gets 503 with Retry-After while the control plane is down', async () => {
    await stack.stopControlPlane();
    try {
      const res = await fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${unusedApiKey()}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      const body = (await res.json()) as { error: { data: { code: string } } };
      expect(body.error.data.code).toBe('UPSTREAM_FAILED');
    } finally {
      await stack.startControlPlane();
    }
  });

  it('is ready once it has reached the control plane', async () => {
    const res = await fetch(`${stack.gatewayUrl}/readyz`);
    expect(res.status).toBe(200);
    const metrics = await (await fetch(`${stack.gatewayUrl}/metrics`)).text();
    expect(metrics).toContain('gateway_config_cache_total{result="stale"}');
    expect(metrics).toContain('gateway_tool_calls_total{status="upstream_failed"}');
  });
});
