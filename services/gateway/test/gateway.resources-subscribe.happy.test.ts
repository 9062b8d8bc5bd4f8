// Resource subscriptions end to end, through the real control plane and gateways to the SDK Client:
// the capabilities declare `subscribe`; a session subscribed to a context's URI (or a part of it,
// through the template) gets notifications/resources/updated within 1 s of a write to its table by
// another session (a tool call), or by the admin API; a write to another table sends it nothing,
// nor does a write after it unsubscribed; an unknown URI is -32002, a bad one -32602, and a
// session holds at most 100 subscriptions; a closed session's subscriptions are dropped; and a
// session on another gateway replica hears the write over Redis.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CONTEXT = 'bindery://tools/find_customers/context';
/** Long enough for a notification that was going to come to have come (they take milliseconds). */
const QUIET_MS = 600;

let stack: Stack;
let exposed: Exposed;

/** The updates a client received, with when (performance.now()). */
interface Listener {
  client: Client;
  updates: { uri: string; at: number }[];
  /** Resolves with the first update for `uri` at or after `since` (rejects after `timeoutMs`). */
  next(uri: string, since: number, timeoutMs?: number): Promise<{ uri: string; at: number }>;
}

function listen(client: Client): Listener {
  const updates: { uri: string; at: number }[] = [];
  const waiters: (() => void)[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push({ uri: n.params.uri, at: performance.now() });
    for (const wake of waiters.splice(0)) wake();
  });
  return {
    client,
    updates,
    next(uri, since, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no resources/updated for ${uri} within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const check = () => {
          const found = updates.find((u) => u.uri === uri && u.at >= since);
          if (found) {
            clearTimeout(timer);
            resolve(found);
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}

async function refusal(request: Promise<unknown>, code: number): Promise<McpError> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  expect((error as McpError).code).toBe(code);
  return error as McpError;
}

const quiet = () => new Promise((resolve) => setTimeout(resolve, QUIET_MS));
const connect = () => stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
let serial = 0;
const addCustomer = (client: Client) =>
  client.callTool({ name: 'add_customer', arguments: { value: { id: 100 + ++serial, name: 'Linus' } } });

beforeAll(async () => {
  // The control plane also publishes on Redis, for the replica of the last test; the rate limit
  // leaves room for a hundred subscriptions in a row.
  stack = await startStack({
    controlPlaneEnv: { REDIS_URL },
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '500', RATE_LIMIT_BURST: '500' },
  });
  exposed = await twoTableExposure(stack);
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, exposed.token);
  const addCustomerAdi = await as('POST', '/api/v2/adis', {
    table_id: exposed.tables.customers,
    json_path: '/list',
    operation_type: 'create',
  });
  const addOrderAdi = await as('POST', '/api/v2/adis', {
    table_id: exposed.tables.orders,
    json_path: '',
    operation_type: 'create',
  });
  await as('POST', `/api/v2/aeis/${exposed.aeiId}/bindings`, [
    { adi_id: addCustomerAdi.id, tool_name: 'add_customer' },
    { adi_id: addOrderAdi.id, tool_name: 'add_order' },
  ]);
});
afterAll(() => stack.close());

describe('resources/subscribe', () => {
  it('is declared in the capabilities', async () => {
    const client = await connect();
    expect(client.getServerCapabilities()?.resources).toEqual({ listChanged: true, subscribe: true });
  });

  it('a write by another session reaches a subscriber as resources/updated within 1 s', async () => {
    const a = listen(await connect());
    const b = await connect();
    await a.client.subscribeResource({ uri: CONTEXT });
    const started = performance.now();
    const update = a.next(CONTEXT, started);
    const written = await addCustomer(b);
    const answered = performance.now() - started;
    expect(written.isError).toBeFalsy();
    const latency = (await update).at - started;
    console.log(
      `resources/updated latency after a tools/call write: ${latency.toFixed(1)} ms from its start ` +
        `(the write answered after ${answered.toFixed(1)} ms)`,
    );
    // Within 1 s of the write's own answer: a write on PostgreSQL with Redis may itself wait a table
    // version lease (2 s) when the members' set in Redis was just made, which is not this path's delay.
    expect(latency - answered).toBeLessThan(1000);
    // The data it announced is there to read.
    const read = await a.client.readResource({ uri: CONTEXT });
    expect(String((read.contents[0] as { text: string }).text)).toContain(`"id":${100 + serial}`);
  });

  it('a write through the same session, and one through the admin API, notify too', async () => {
    const a = listen(await connect());
    await a.client.subscribeResource({ uri: CONTEXT });
    let since = performance.now();
    await addCustomer(a.client);
    await a.next(CONTEXT, since);

    since = performance.now();
    const update = a.next(CONTEXT, since);
    await stack.admin(
      'PUT',
      `/api/v2/tables/${exposed.tables.customers}/data`,
      { list: [{ id: 1, name: 'Ada' }] },
      exposed.token,
    );
    const latency = (await update).at - since;
    console.log(`resources/updated latency after an admin PUT: ${latency.toFixed(1)} ms`);
    expect(latency).toBeLessThan(1000);
  });

  it('a part of a context (the template) is notified as "may have changed"', async () => {
    const a = listen(await connect());
    const part = `${CONTEXT}/0/name`;
    await a.client.subscribeResource({ uri: part });
    const since = performance.now();
    await addCustomer(await connect());
    await a.next(part, since);
    await quiet();
    // Only the URI it subscribed to.
    expect(a.updates.filter((u) => u.at >= since).map((u) => u.uri)).toEqual([part]);
  });

  it('a write to another table sends nothing; nor does a write after unsubscribing', async () => {
    const a = listen(await connect());
    const b = await connect();
    await a.client.subscribeResource({ uri: CONTEXT });
    const since = performance.now();
    expect(
      (await b.callTool({ name: 'add_order', arguments: { value: { id: 'o3', total: 9 } } })).isError,
    ).toBeFalsy();
    await quiet();
    expect(a.updates).toEqual([]);

    await a.client.unsubscribeResource({ uri: CONTEXT });
    // Unsubscribing again (or from a URI never subscribed to) is no error.
    await a.client.unsubscribeResource({ uri: CONTEXT });
    expect((await addCustomer(b)).isError).toBeFalsy();
    await quiet();
    expect(a.updates.filter((u) => u.at >= since)).toEqual([]);
  });

  it('refuses unknown and bad URIs as resources/read does, and more than 100 subscriptions', async () => {
    const client = await connect();
    for (const uri of [
      'bindery://tools/nope/context',
      'bindery://tools/peek_orders/context',
      'bindery://tools/find_customers/other',
      'file:///etc/passwd',
    ]) {
      await refusal(client.subscribeResource({ uri }), -32002);
    }
    const climbing = await refusal(client.subscribeResource({ uri: `${CONTEXT}/..` }), -32602);
    expect(climbing.message).toContain('stays inside its tool');
    await refusal(client.subscribeResource({ uri: `${CONTEXT}/%E0%A4%A` }), -32602);

    for (let i = 0; i < 100; i += 1) await client.subscribeResource({ uri: `${CONTEXT}/${i}` });
    // Subscribing again to one it holds is no new subscription.
    await client.subscribeResource({ uri: `${CONTEXT}/0` });
    const over = await refusal(client.subscribeResource({ uri: CONTEXT }), -32602);
    expect(over.message).toContain('at most 100');
    await client.unsubscribeResource({ uri: `${CONTEXT}/0` });
    await client.subscribeResource({ uri: CONTEXT });
  });

  it('a closed session drops its subscriptions', async () => {
    const client = await connect();
    await client.subscribeResource({ uri: CONTEXT });
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? '';
    const { subscriptions } = stack.gateway.gateway.sessions;
    expect(subscriptions.count(sessionId)).toBe(1);
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    const deadline = Date.now() + 5_000;
    while (subscriptions.count(sessionId) > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(subscriptions.count(sessionId)).toBe(0);
  });

  it('a subscriber on another gateway replica hears a write over Redis', async () => {
    const replica = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl, REDIS_URL }),
      false,
    );
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    try {
      const client = new Client({ name: 'replica-client', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/api/v2/mcp/server/${exposed.apiKey}`)),
      );
      const a = listen(client);
      await client.subscribeResource({ uri: CONTEXT });
      const since = performance.now();
      const update = a.next(CONTEXT, since);
      // Written through the first gateway, which the replica knows nothing of.
      await addCustomer(await connect());
      const latency = (await update).at - since;
      console.log(`resources/updated latency on a replica (Redis): ${latency.toFixed(1)} ms`);
      expect(latency).toBeLessThan(1000);
      await client.close();
    } finally {
      await replica.close();
    }
  });
});
