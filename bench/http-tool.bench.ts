/**
 * HTTP tool benchmark (issue: tool kinds).
 *   pnpm --filter @bindery/bench bench:http-tool
 * Starts a small JSON API (support/json-api.ts, its own process), the real control plane (fresh
 * PostgreSQL database, 127.0.0.1/32 allowed for tools) and the real gateway, and measures the
 * throughput of one HTTP tool (path and query arguments, a secret header) at concurrency 32:
 * called straight with undici from this process (the in-run reference) and through the gateway
 * (raw JSON-RPC over HTTP, and the SDK Client). Once against an API that answers at once (what the
 * path itself costs) and once against one that takes API_DELAY_MS like a real API. Target: the
 * gateway path at 0.5x the direct calls or better. A second in-run reference bounds what any path
 * through a service can reach on the machine at hand: the same calls through a bare Node.js proxy
 * (support/reference-proxy.ts: one HTTP hop, no parsing, no checks), which is one hop where the
 * gateway path has two (gateway, then the control plane's executor) plus MCP and an audit row.
 * A third in-run reference is what a team would otherwise write: a hand-written MCP server wrapping
 * the same API with the SDK (support/wrapper-mcp-server.ts: a new server per request, as the SDK's
 * stateless example does, one fetch per call); target: the gateway path at 2.5x its throughput or
 * better against the instant API.
 * Environment: BENCH_CALLS (calls per worker and run, default 60), BENCH_DELAYS (API latencies in
 * ms, default "0,50"), BENCH_ROUNDS (runs per path, alternating, median kept; default 3).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, request } from 'undici';
import {
  ADMIN_TOKEN,
  profileArgs,
  spawnService,
  startControlPlane,
  startGateway,
} from './support/control-plane.ts';
import { toolCallResult } from './support/answers.ts';
import { addCpu, cpuReading, type CpuParts } from './support/cpu-time.ts';
import { ms, throughput as measure } from './support/stats.ts';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const WORKERS = 32;
const PER_WORKER = Number(process.env.BENCH_CALLS ?? 60);
const DELAYS = (process.env.BENCH_DELAYS ?? '0,50').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const API_KEY = `k-${randomBytes(8).toString('hex')}`;

const cp = await startControlPlane('postgres', {
  HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.1/32',
  BINDERY_SECRET_KEY: randomBytes(32).toString('base64'),
});
const gw = await startGateway(cp.url, { CONFIG_CACHE_TTL_MS: '30000' });
const agent = new Agent({ connections: 2 * WORKERS, keepAliveTimeout: 60_000 });

async function admin(method: string, path: string, body?: unknown) {
  const res = await request(`${cp.url}${path}`, {
    method: method as 'GET' | 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    dispatcher: agent,
  });
  const json = (await res.body.json()) as Record<string, unknown>;
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

/** Runs WORKERS loops of PER_WORKER calls at once: calls per second and per-call latencies. */
const throughput = (call: (w: number, i: number) => Promise<void>) => measure(WORKERS, PER_WORKER, call);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

try {
  await admin('POST', '/api/v2/secrets', { name: 'ITEMS_KEY', value: API_KEY });
  console.log(
    `HTTP tool benchmark: one GET tool (path + query arguments, a secret header), concurrency ${WORKERS}, ` +
      `${WORKERS * PER_WORKER} calls per run, median of ${ROUNDS} alternating runs per path (PostgreSQL)`,
  );
  for (const delay of DELAYS) {
    const apiProcess = await spawnService(
      BENCH_DIR,
      { API_DELAY_MS: String(delay), API_KEY },
      profileArgs('api'),
      'support/json-api.ts',
    );
    let proxyProcess: Awaited<ReturnType<typeof spawnService>> | undefined;
    let wrapperProcess: Awaited<ReturnType<typeof spawnService>> | undefined;
    try {
      wrapperProcess = await spawnService(
        BENCH_DIR,
        { API_URL: apiProcess.url, API_KEY },
        profileArgs('wrapper'),
        'support/wrapper-mcp-server.ts',
      );
      proxyProcess = await spawnService(
        BENCH_DIR,
        { UPSTREAM_URL: apiProcess.url },
        profileArgs('proxy'),
        'support/reference-proxy.ts',
      );
      const adi = await admin('POST', '/api/v2/adis', {
        kind: 'http',
        name: `get_item_${delay}`,
        method: 'GET',
        url: `${apiProcess.url}/items/{id}`,
        params: [
          { name: 'id', in: 'path' },
          { name: 'q', in: 'query' },
        ],
        headers: { 'X-Api-Key': '{{secret.ITEMS_KEY}}' },
      });
      const aei = await admin('POST', '/api/v2/aeis', { name: `bench ${delay}` });
      await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id, tool_name: 'get_item' });
      const mcpUrl = new URL(`${gw.url}/api/v2/mcp/server/${String(aei.api_key)}`);

      const straightTo = (base: string, what: string) => async (w: number, i: number) => {
        const res = await request(`${base}/items/${w}-${i}?q=x`, {
          headers: { 'x-api-key': API_KEY, accept: 'application/json' },
          dispatcher: agent,
        });
        const body = (await res.body.json()) as { q?: string };
        if (res.statusCode !== 200 || body.q !== 'x') throw new Error(`${what} answered ${res.statusCode}`);
      };
      const direct = straightTo(apiProcess.url, 'direct call');
      const viaProxy = straightTo(proxyProcess.url, 'call through the bare proxy');

      // The same path with a context `query` tool (no outgoing request): what the gateway and the
      // executor cost without the HTTP kind. Bound before the sessions start, so the gateway's
      // cached config of the key has both tools.
      const table = await admin('POST', '/api/v2/tables', {
        name: `ref ${delay}`,
        data: { items: [1, 2, 3] },
      });
      const query = await admin('POST', '/api/v2/adis', {
        table_id: table.id,
        json_path: '/items',
        operation_type: 'query',
        name: `count_${delay}`,
      });
      await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: query.id, tool_name: 'count' });
      const sessions: string[] = [];
      for (let w = 0; w < WORKERS; w++) {
        const init = await request(mcpUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: {
              protocolVersion: '2025-06-18',
              capabilities: {},
              clientInfo: { name: 'bench', version: '1' },
            },
          }),
          dispatcher: agent,
        });
        await init.body.text();
        sessions.push(String(init.headers['mcp-session-id'] ?? ''));
      }
      let id = 1;
      /** One tools/call over JSON-RPC (on the worker's session, when given): its result, checked. */
      const toolCall = async (
        url: string | URL,
        name: string,
        args: Record<string, unknown>,
        what: string,
        session?: string,
      ) => {
        const res = await request(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18',
            ...(session !== undefined && { 'mcp-session-id': session }),
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: id++,
            method: 'tools/call',
            params: { name, arguments: args },
          }),
          dispatcher: agent,
        });
        return toolCallResult(await res.body.text(), what);
      };
      /** get_item through `url`, checking the API's answer is in the result. */
      const getItemVia =
        (url: string | URL, what: string, sessionOf?: (w: number) => string) =>
        async (w: number, i: number) => {
          const result = await toolCall(url, 'get_item', { id: `${w}-${i}`, q: 'x' }, what, sessionOf?.(w));
          if ((result.structuredContent as { q?: unknown } | undefined)?.q !== 'x') {
            throw new Error(`${what}: the API's answer is not in the result: ${JSON.stringify(result)}`);
          }
        };
      const viaGateway = getItemVia(mcpUrl, 'gateway call', (w) => sessions[w]!);
      // The hand-written SDK server wrapping the API (a new server per request, one fetch per call).
      const viaWrapper = getItemVia(wrapperProcess.url, 'hand-written SDK server');

      const viaGatewayContext = async (w: number) => {
        const result = await toolCall(mcpUrl, 'count', { query: 'length(@)' }, 'context call', sessions[w]!);
        if ((result.structuredContent as { result?: unknown } | undefined)?.result !== 3) {
          throw new Error(`context call: unexpected result ${JSON.stringify(result)}`);
        }
      };

      const clients: Client[] = [];
      for (let w = 0; w < WORKERS; w++) {
        const client = new Client({ name: 'bench', version: '1' });
        await client.connect(new StreamableHTTPClientTransport(mcpUrl));
        clients.push(client);
      }
      const viaSdk = async (w: number, i: number) => {
        const result = await clients[w]!.callTool({
          name: 'get_item',
          arguments: { id: `${w}-${i}`, q: 'x' },
        });
        if (result.isError) throw new Error(`SDK call: ${JSON.stringify(result)}`);
      };

      // Warm-up: connection pools, the gateway's config cache, JIT.
      for (const path of [direct, viaProxy, viaWrapper, viaGateway, viaSdk, viaGatewayContext])
        await throughput(path);

      const paths = {
        direct,
        proxy: viaProxy,
        wrapper: viaWrapper,
        gateway: viaGateway,
        sdk: viaSdk,
        context: viaGatewayContext,
      };
      const names = Object.keys(paths) as (keyof typeof paths)[];
      const runs = Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<
        keyof typeof paths,
        Awaited<ReturnType<typeof throughput>>[]
      >;
      // CPU time each process spent on each path's calls, over all its runs.
      const cpu = Object.fromEntries(names.map((name) => [name, {}])) as Record<keyof typeof paths, CpuParts>;
      const reading = () =>
        cpuReading(
          {
            gateway: gw.child.pid,
            'control plane': cp.pid,
            API: apiProcess.child.pid,
            proxy: proxyProcess?.child.pid,
            wrapper: wrapperProcess?.child.pid,
          },
          { database: 'postgres' },
        );
      for (let r = 0; r < ROUNDS; r++) {
        for (const name of names) {
          const before = reading();
          runs[name].push(await throughput(paths[name]));
          addCpu(cpu[name], before, reading());
        }
      }
      // The run with the median throughput of each path.
      const best = (name: keyof typeof paths) => {
        const perSecond = median(runs[name].map((run) => run.perSecond));
        return runs[name].find((run) => run.perSecond === perSecond)!;
      };
      console.log(`  API answering after ${delay} ms:`);
      const rows = [
        ['direct (undici, this process)', best('direct')],
        ['reference: a bare Node.js proxy hop', best('proxy')],
        ['reference: hand-written SDK server', best('wrapper')],
        ['via gateway (JSON-RPC over HTTP)', best('gateway')],
        ['via gateway (SDK Client)', best('sdk')],
        ['reference: a context query tool, JSON-RPC', best('context')],
      ] as const;
      for (const [label, run] of rows) {
        console.log(
          `    ${label.padEnd(42)} ${run.perSecond.toFixed(0).padStart(6)} calls/s  p50 ${ms(run.p50).padStart(10)}  p99 ${ms(run.p99).padStart(10)}`,
        );
      }
      // Where each path's calls spend CPU: what the direct calls cost (this process and the API)
      // against what every hop of the gateway path adds.
      const calls = ROUNDS * WORKERS * PER_WORKER;
      for (const [name, label, onPath] of [
        ['direct', 'direct', ['client', 'API']],
        ['proxy', 'bare proxy hop', ['client', 'proxy', 'API']],
        ['wrapper', 'hand-written SDK server', ['client', 'wrapper', 'API']],
        ['gateway', 'HTTP tool, JSON-RPC', ['client', 'gateway', 'control plane', 'API', 'database']],
        ['context', 'context tool, JSON-RPC', ['client', 'gateway', 'control plane', 'database']],
      ] as const) {
        // The processes on the path (the others only idle meanwhile).
        const parts = Object.entries(cpu[name]).filter(([part]) =>
          (onPath as readonly string[]).includes(part),
        );
        if (parts.length === 0) continue;
        // A PostgreSQL backend that exited during the runs is left out of its run (cpu-time.ts).
        const total = parts.reduce((sum, [, seconds]) => sum + seconds, 0);
        const each = parts.map(([part, seconds]) => `${part} ${((seconds * 1e6) / calls).toFixed(0)}`);
        console.log(
          `    CPU µs per call, ${label.padEnd(24)} ${((total * 1e6) / calls).toFixed(0).padStart(5)}: ${each.join(', ')}`,
        );
      }
      const ratio = (name: 'gateway' | 'sdk' | 'proxy') =>
        (best(name).perSecond / best('direct').perSecond).toFixed(2);
      const ofContext = (best('gateway').perSecond / best('context').perSecond).toFixed(2);
      console.log(
        `    throughput vs direct: ${ratio('gateway')}x (JSON-RPC), ${ratio('sdk')}x (SDK Client); target >= 0.5x; ` +
          `the HTTP tool at ${ofContext}x the context tool's throughput on the same path`,
      );
      console.log(
        `    the bare proxy hop alone: ${ratio('proxy')}x of direct (what one HTTP hop that does nothing reaches here)`,
      );
      const ofWrapper = best('gateway').perSecond / best('wrapper').perSecond;
      console.log(
        `    via gateway / hand-written SDK server wrapping the API: ${ofWrapper.toFixed(2)}x` +
          (delay === 0
            ? ` (target >= 2.5x against an instant API: ${ofWrapper >= 2.5 ? 'met' : 'NOT met'})`
            : ''),
      );
      for (const client of clients) await client.close();
    } finally {
      if (proxyProcess) await proxyProcess.stop();
      if (wrapperProcess) await wrapperProcess.stop();
      await apiProcess.stop();
    }
  }
} finally {
  await agent.close();
  await gw.stop();
  await cp.stop();
}
