// Pins the shared exchanges of context tool calls (POST /internal/execute-batch): calls of several
// sessions arriving together through the real gateway go to the real control plane in batches
// (counted in gateway_execute_batch_calls), each call still gets its own answer, and every write
// lands once with one audit row; against a control plane without the route (an older version,
// played by a loopback proxy that answers the route 404 and forwards everything else), the calls
// go again one by one with the same answers, and no batch is sent again for a while.
import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Exposed, type Json, resultJson, twoTableExposure } from '@bindery/test-support';
import { bindAddOrder } from './support/fixtures.ts';
import { startStack, type Stack } from './support/stack.ts';

const BATCH_ROUTE = '/internal/execute-batch';

/** A loopback proxy to the control plane that counts batches and can play a version without the route. */
class VersionProxy {
  target = '';
  refuseBatches = false;
  batches = 0;
  refused = 0;
  readonly server: Server = createServer((req, res) => {
    if (req.url === BATCH_ROUTE) {
      this.batches++;
      if (this.refuseBatches) {
        this.refused++;
        req.resume();
        // The control plane's own answer to a route it does not have.
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { code: 'NOT_FOUND', message: `no route POST ${BATCH_ROUTE}`, request_id: 'req-1' },
          }),
        );
        return;
      }
    }
    const upstream = httpRequest(
      `${this.target}${req.url}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        // The proxy's own connection rules, not the control plane's keep-alive hint.
        const { connection: _c, 'keep-alive': _k, ...headers } = answer.headers;
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const proxy = new VersionProxy();
let stack: Stack;
let exposed: Exposed;
let clients: Client[];
let written = 0;

beforeAll(async () => {
  const proxyUrl = await proxy.listen();
  stack = await startStack({
    // A hundred calls on one key within a second: the per-key rate limit is not what this pins.
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '0' },
    gatewayControlPlaneUrl: (url) => {
      proxy.target = url;
      return proxyUrl;
    },
  });
  exposed = await twoTableExposure(stack);
  await bindAddOrder(stack, exposed);
  clients = await Promise.all(
    Array.from({ length: 8 }, () => stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`)),
  );
  await Promise.all(clients.map((c) => c.listTools()));
});
afterAll(async () => {
  await stack?.close();
  await proxy.close();
});

/** gateway_execute_batch_calls: batches sent and the calls they carried. */
async function batchMetric(): Promise<{ batches: number; calls: number }> {
  const text = await (await fetch(`${stack.gatewayUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    batches: value('gateway_execute_batch_calls_count'),
    calls: value('gateway_execute_batch_calls_sum'),
  };
}

const orderIds = async (): Promise<string[]> =>
  (
    (await stack.admin('GET', `/api/v2/tables/${exposed.tables.orders}`, undefined, exposed.token))
      .data as Json[]
  )
    .map((o) => o.id as string)
    .filter((id) => id.startsWith('b'));

/**
 * Every client sends reads and writes at once: each read must answer its own query, each write
 * its own value.
 */
async function burst(perClient: number): Promise<void> {
  const calls = clients.flatMap((client, c) =>
    Array.from({ length: perClient }, (_, k) => {
      if (k % 3 === 2) {
        const id = `b${written++}`;
        return client
          .callTool({ name: 'add_order', arguments: { value: { id, total: c } } })
          .then((r) => expect(r.isError, JSON.stringify(r)).toBeFalsy());
      }
      const wanted = (c + k) % 2 === 0 ? 'Ada' : 'Grace';
      return client
        .callTool({ name: 'find_customers', arguments: { query: `[?name == '${wanted}'].id` } })
        .then((r) => {
          expect(r.isError, JSON.stringify(r)).toBeFalsy();
          expect(resultJson(r)).toEqual([wanted === 'Ada' ? 1 : 2]);
        });
    }),
  );
  await Promise.all(calls);
}

describe('calls that arrive together', () => {
  it('share exchanges, and each gets its own answer; every write lands once, audited once', async () => {
    const before = await batchMetric();
    const forwarded = proxy.batches;
    // Calls share an exchange when two reach the gateway in one turn of its event loop: all but
    // certain for 48 at once, and a loaded host gets a few more tries.
    for (let tries = 0; tries < 5 && proxy.batches === forwarded; tries++) await burst(6);
    const after = await batchMetric();
    expect(after.batches).toBeGreaterThan(before.batches);
    expect(after.calls - before.calls).toBeGreaterThanOrEqual(2 * (after.batches - before.batches));
    expect(proxy.batches - forwarded).toBe(after.batches - before.batches);
    const ids = await orderIds();
    expect(ids.sort()).toEqual(Array.from({ length: written }, (_, n) => `b${n}`).sort());
    const audit = await stack.admin(
      'GET',
      `/api/v2/audit?aei_id=${exposed.aeiId}&limit=200`,
      undefined,
      exposed.token,
    );
    const writes = (audit.items as Json[]).filter((e) => e.tool_name === 'add_order' && e.status === 'ok');
    expect(writes).toHaveLength(written);
  });
});

// Last: the gateway then sends no batch for a minute.
describe('a control plane without the batch route', () => {
  it('gets the calls again one by one, with the same answers, and no more batches for a while', async () => {
    proxy.refuseBatches = true;
    for (let tries = 0; tries < 5 && proxy.refused === 0; tries++) await burst(3);
    expect(proxy.refused).toBeGreaterThan(0);
    const refused = proxy.refused;
    await burst(3);
    expect(proxy.refused).toBe(refused);
    expect((await orderIds()).sort()).toEqual(Array.from({ length: written }, (_, n) => `b${n}`).sort());
  });
});
