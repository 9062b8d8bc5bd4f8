/**
 * Gateway benchmark (issue: MCP gateway).
 *   pnpm --filter @bindery/bench bench:gateway
 * Starts the real control plane (fresh PostgreSQL database) and the real gateway as processes and
 * prints p50/p99 of tools/call through the gateway and straight to the executor, at concurrency 1
 * and 32; tools/list of an AEI with 1,000 bindings; and how many config fetches the control plane
 * saw during the steady-state runs.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  spawnService,
  startControlPlane,
  stopChild,
} from './support/control-plane.ts';
import { ms, summarize } from './support/stats.ts';

const GATEWAY_DIR = fileURLToPath(new URL('../services/gateway', import.meta.url));
const CALLS_C1 = Number(process.env.BENCH_CALLS ?? 500);
const CALLS_PER_WORKER_C32 = 40;

const cp = await startControlPlane('postgres');
const gw = await spawnService(
  GATEWAY_DIR,
  {
    GATEWAY_PORT: '0',
    CONTROL_PLANE_URL: cp.url,
    INTERNAL_TOKEN,
    RATE_LIMIT_PER_SECOND: '0',
    TOOLS_PAGE_SIZE: '1000',
    CONFIG_CACHE_TTL_MS: process.env.BENCH_TTL_MS ?? '30000',
  },
  process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [],
);

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${cp.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function configFetches(): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const match = /^gateway_config_fetches_total (\d+)/m.exec(text);
  return Number(match?.[1] ?? Number.NaN);
}

/** Runs `workers` loops of `perWorker` timed calls at once; answers every call's milliseconds. */
async function concurrently(
  workers: number,
  perWorker: number,
  call: (w: number) => Promise<void>,
): Promise<number[]> {
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; i < perWorker; i++) {
        const t0 = performance.now();
        await call(w);
        samples.push(performance.now() - t0);
      }
    }),
  );
  return samples;
}

const row = (label: string, samples: number[]) => {
  const s = summarize(samples);
  console.log(
    `  ${label.padEnd(44)} n=${String(s.n).padEnd(5)} p50 ${ms(s.p50).padStart(10)}  p99 ${ms(s.p99).padStart(10)}`,
  );
  return s;
};

try {
  const table = await admin('POST', '/api/v2/tables', {
    name: 'bench',
    data: { customers: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `c${i}` })) },
  });
  const adi = await admin('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/customers',
    operation_type: 'query',
  });
  const aei = await admin('POST', '/api/v2/aeis', { name: 'bench' });
  const binding = await admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id, tool_name: 'q' });
  const args = { query: '[?id < `3`].name' };
  const mcpUrl = new URL(`${gw.url}/api/v2/mcp/server/${aei.api_key}`);

  // Straight to the executor: what the gateway itself calls.
  const direct = () =>
    fetch(`${cp.url}/internal/adi/${adi.id}/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ aei_id: aei.id, binding_id: binding.id, arguments: args }),
    }).then((r) => r.text());

  // Through the gateway as raw JSON-RPC over HTTP on an initialized session (isolates the gateway).
  const sessions: string[] = [];
  for (let w = 0; w < 32; w++) {
    const init = await fetch(mcpUrl, {
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
    });
    await init.text();
    sessions.push(init.headers.get('mcp-session-id') ?? '');
  }
  let id = 1;
  const viaGateway = (w: number) =>
    fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessions[w]!,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: id++,
        method: 'tools/call',
        params: { name: 'q', arguments: args },
      }),
    }).then((r) => r.text());

  // Through the gateway with the SDK Client: what an agent sees end to end.
  const clients: Client[] = [];
  for (let w = 0; w < 32; w++) {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    clients.push(client);
  }
  const viaSdk = (w: number) => clients[w]!.callTool({ name: 'q', arguments: args }).then(() => undefined);

  // Warm everything (pools, caches, JIT).
  for (let i = 0; i < 50; i++) await Promise.all([direct(), viaGateway(0), viaSdk(0)]);
  const fetchesBefore = await configFetches();

  console.log('gateway benchmark: tools/call of a query tool on a small context (PostgreSQL)');
  console.log('  (the three paths take turns call by call, so they see the same machine load)');
  const paths = {
    direct: () => direct().then(() => undefined),
    gateway: (w: number) => viaGateway(w).then(() => undefined),
    sdk: viaSdk,
  };
  const interleaved = async (workers: number, perWorker: number) => {
    const samples = { direct: [] as number[], gateway: [] as number[], sdk: [] as number[] };
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        for (let i = 0; i < perWorker; i++) {
          for (const name of ['direct', 'gateway', 'sdk'] as const) {
            const t0 = performance.now();
            await paths[name](w);
            samples[name].push(performance.now() - t0);
          }
        }
      }),
    );
    return samples;
  };
  const c1 = await interleaved(1, CALLS_C1);
  const d1 = row('executor direct (HTTP)            c=1', c1.direct);
  const g1 = row('via gateway (JSON-RPC over HTTP)  c=1', c1.gateway);
  row('via gateway (SDK Client)          c=1', c1.sdk);
  const c32 = await interleaved(32, CALLS_PER_WORKER_C32);
  const d32 = row('executor direct (HTTP)            c=32', c32.direct);
  const g32 = row('via gateway (JSON-RPC over HTTP)  c=32', c32.gateway);
  row('via gateway (SDK Client)          c=32', c32.sdk);
  // The floor any extra HTTP hop costs on this machine: an empty GET to the gateway.
  row(
    'HTTP round trip floor (GET /healthz) c=1',
    await concurrently(1, CALLS_C1, () =>
      fetch(`${gw.url}/healthz`)
        .then((r) => r.text())
        .then(() => undefined),
    ),
  );
  // Paired: the same iteration's gateway call minus its direct call, so machine drift cancels out.
  const paired = (r: { direct: number[]; gateway: number[] }) =>
    summarize(r.gateway.map((g, k) => g - r.direct[k]!)).p50;
  console.log(
    `  gateway adds at p50: ${ms(g1.p50 - d1.p50)} (c=1), ${ms(g32.p50 - d32.p50)} (c=32); ` +
      `paired per call: ${ms(paired(c1))} (c=1), ${ms(paired(c32))} (c=32)`,
  );
  const steadyCalls = 2 * (CALLS_C1 + 32 * CALLS_PER_WORKER_C32);
  console.log(
    `  config fetches by the gateway during ${steadyCalls} steady-state calls: ${(await configFetches()) - fetchesBefore}`,
  );
  if (process.env.BENCH_DEBUG) {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    console.log(
      text
        .split('\n')
        .filter((l) => l.startsWith('gateway_config') || l.startsWith('gateway_requests_total'))
        .join('\n'),
    );
  }

  // An AEI with 1,000 bindings.
  const big = await admin('POST', '/api/v2/aeis', { name: 'big' });
  const ids: string[] = [];
  for (let i = 0; i < 1000; i++) {
    const a = await admin('POST', '/api/v2/adis', {
      table_id: table.id,
      json_path: '/customers',
      operation_type: (['query', 'preview', 'select', 'get_schema', 'create'] as const)[i % 5],
      category: `category-${i % 20}`,
      description: `Tool number ${i} over the customers of the benchmark table.`,
    });
    ids.push(String(a.id));
  }
  for (let i = 0; i < 1000; i += 500) {
    await admin(
      'POST',
      `/api/v2/aeis/${big.id}/bindings`,
      ids.slice(i, i + 500).map((adi_id) => ({ adi_id })),
    );
  }
  const bigClient = new Client({ name: 'bench', version: '1' });
  await bigClient.connect(
    new StreamableHTTPClientTransport(new URL(`${gw.url}/api/v2/mcp/server/${big.api_key}`)),
  );
  const first = await bigClient.listTools();
  const bytes = JSON.stringify(first).length;
  for (let i = 0; i < 20; i++) await bigClient.listTools();
  console.log(
    `tools/list of an AEI with 1,000 bindings (${first.tools.length} tools, ${(bytes / 1024).toFixed(0)} KiB of JSON):`,
  );
  row(
    'tools/list via gateway (SDK Client) c=1',
    await concurrently(1, 100, () => bigClient.listTools().then(() => undefined)),
  );
  for (const client of [...clients, bigClient]) await client.close();
} finally {
  await stopChild(gw.child);
  await cp.stop();
}
