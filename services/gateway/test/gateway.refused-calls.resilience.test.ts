// Pins what a tool call answers when the control plane refuses the gateway's request itself with a
// 4xx (here a real one: the control plane restarted with another INTERNAL_TOKEN while the gateway
// still holds the exposure's config, so every execute gets 401): UPSTREAM_FAILED saying nothing was
// applied and that repeating it fails the same way, with `details.applied: false`, for a write, a
// write carrying an idempotency key, a read and an execute_apis item alike; never OUTCOME_UNKNOWN,
// which would have the agent check data or retry a write that never happened; no token in it.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Exposed, type Json, resultJson, twoTableExposure } from '@bindery/test-support';
import { bindAddOrder } from './support/fixtures.ts';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

const ROTATED_TOKEN = 'e2e-internal-token-rotated-0002';
let stack: Stack;
let exposed: Exposed;
let direct: Client;
let catalog: Client;

beforeAll(async () => {
  // Configs stay fresh for the whole file: calls go out without the key being looked up again.
  stack = await startStack({ gatewayEnv: { CONFIG_CACHE_TTL_MS: '600000' } });
  exposed = await twoTableExposure(stack);
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, exposed.token);
  const addId = await bindAddOrder(stack, exposed);
  const progressive = await as('POST', '/api/v2/aeis', { name: 'catalog', exposure_mode: 'progressive' });
  await as('POST', `/api/v2/aeis/${progressive.id}/bindings`, { adi_id: addId, tool_name: 'add_order' });
  direct = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
  catalog = await stack.connect(`/api/v2/mcp/server/${progressive.api_key}`);
  // Both configs cached, the catalog session set up, while the tokens still agree.
  expect((await direct.listTools()).tools.map((t) => t.name)).toContain('add_order');
  const init = await catalog.callTool({ name: 'initialize_session', arguments: { app_id: 'default' } });
  expect(init.isError).toBeFalsy();
});
afterAll(() => stack?.close());

const orders = async () =>
  (await stack.admin('GET', `/api/v2/tables/${exposed.tables.orders}`, undefined, exposed.token)).data;

/** Checks the refusal's wording: nothing applied, no advice to check or retry, no credential. */
function expectRefused(error: Json) {
  expect(error.code).toBe('UPSTREAM_FAILED');
  expect(error.message).toMatch(/^the control plane refused the call \(HTTP 401: /);
  expect(error.message).toMatch(/nothing was applied/);
  expect(error.message).toMatch(/fails the same way/);
  expect(error.message).not.toMatch(/may have been applied|try again shortly/);
  expect(error.details).toEqual({ sent: true, applied: false, status: 401 });
  for (const secret of [INTERNAL_TOKEN, ROTATED_TOKEN]) expect(JSON.stringify(error)).not.toContain(secret);
}

describe('the control plane refuses the execute request (401)', () => {
  it('is UPSTREAM_FAILED with nothing applied, for writes, keyed writes, reads and execute_apis items', async () => {
    const before = await orders();
    await stack.stopControlPlane();
    await stack.startControlPlane({ INTERNAL_TOKEN: ROTATED_TOKEN });

    const write = await direct.callTool({ name: 'add_order', arguments: { value: { id: 'o3' } } });
    expect(write.isError).toBe(true);
    expectRefused(resultJson(write).error);

    const keyed = await direct.callTool({
      name: 'add_order',
      arguments: { value: { id: 'o4' } },
      _meta: { 'bindery/idempotency_key': 'refused-1' },
    });
    expectRefused(resultJson(keyed).error);

    const read = await direct.callTool({ name: 'find_customers', arguments: { query: 'length(@)' } });
    expectRefused(resultJson(read).error);

    const batch = await catalog.callTool({
      name: 'execute_apis',
      arguments: { executions: [{ api_name: 'add_order', parameters: { value: { id: 'o5' } } }] },
    });
    const [item] = resultJson(batch).results;
    expect(item.success).toBe(false);
    expectRefused(item.error);

    // Once the tokens agree again, nothing of the above had been written, and calls work.
    await stack.stopControlPlane();
    await stack.startControlPlane();
    expect(await orders()).toEqual(before);
    const again = await direct.callTool({ name: 'add_order', arguments: { value: { id: 'o3' } } });
    expect(again.isError).toBeFalsy();
    expect(await orders()).toHaveLength(before.length + 1);
  });
});
