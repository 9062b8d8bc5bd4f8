// Pins graceful shutdown of the gateway process: on SIGTERM, twenty slow tool calls in flight
// (sent by MCP clients that also hold their standing SSE streams open) are all answered, the
// standing streams end, and the process exits 0 before its grace period is over; the control plane
// audited every call.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const CALLS = 20;
/** Runs far longer than the control plane's query budget here over a 1,000-item array. */
const SLOW_QUERY = 'map(&map(&map(&map(&map(&map(&map(&@, $), $), $), $), $), $), $)';

let stack: Stack;
let token: string;
let apiKey: string;
let aeiId: string;

beforeAll(async () => {
  // Each query runs its one-second budget on one of four worker threads (or waits, at most two
  // seconds, for one): every call answers between one and three seconds after it came in.
  stack = await startStack({
    controlPlaneEnv: {
      QUERY_TIMEOUT_MS: '1000',
      QUERY_WORKERS: '4',
      QUERY_QUEUE: '16',
      QUERY_TENANT_ESCALATIONS: '20',
    },
  });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'shutdown' })).token;
  const as = (path: string, body: unknown) => stack.admin('POST', path, body, token);
  const table = await as('/api/v2/tables', { name: 'numbers', data: { items: [...Array(1_000).keys()] } });
  const adi = await as('/api/v2/adis', { table_id: table.id, json_path: '/items', operation_type: 'query' });
  const aei = await as('/api/v2/aeis', { name: 'slow' });
  await as(`/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id, tool_name: 'slow_query' });
  apiKey = aei.api_key;
  aeiId = aei.id;
});
afterAll(() => stack?.close());

/** Tool calls the control plane has received and not answered (alone or in the gateway's batches). */
async function controlPlaneInFlight(): Promise<number> {
  const text = await (await fetch(`${stack.controlPlaneUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('controlplane_tool_executions_in_flight '));
  return Number(line?.split(' ')[1] ?? 0);
}

describe('gateway shutdown', { timeout: 120_000 }, () => {
  it('answers twenty tool calls in flight at SIGTERM, ends standing streams, and exits 0', async () => {
    const gateway = await startGateway(stack.controlPlaneUrl);
    try {
      const deadline = Date.now() + 60_000;
      // Four clients, each with its standing SSE stream, five calls each.
      const clients = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const client = new Client({ name: 'shutdown-test', version: '1.0.0' });
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`${gateway.url}/api/v2/mcp/server/${apiKey}`)),
          );
          return client;
        }),
      );
      const calls = Array.from({ length: CALLS }, (_, i) =>
        clients[i % clients.length]!.callTool({ name: 'slow_query', arguments: { query: SLOW_QUERY } }),
      );
      while ((await controlPlaneInFlight()) < CALLS) {
        if (Date.now() > deadline) throw new Error('the calls never all reached the control plane');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const stopped = gateway.stop(); // SIGTERM
      const results = await Promise.all(calls);
      const code = await stopped;

      for (const result of results as Json[]) {
        expect(result.isError).toBe(true);
        expect(['LIMIT_EXCEEDED', 'RATE_LIMITED']).toContain(JSON.parse(result.content[0].text).error.code);
      }
      // 0, not 1: an open standing stream or keep-alive connection would have held the process until
      // its grace period was over, and then it exits 1.
      expect(code).toBe(0);
      expect(gateway.output()).toContain('shutting down: finishing requests in flight');
      const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${aeiId}&limit=100`, undefined, token);
      expect(audit.items).toHaveLength(CALLS);
      for (const client of clients) await client.close().catch(() => undefined);
    } finally {
      await gateway.kill();
    }
  });
});
