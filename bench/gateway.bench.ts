/**
 * Gateway benchmark (issue: MCP gateway).
 *   pnpm --filter @bindery/bench bench:gateway
 * Starts the real control plane (fresh PostgreSQL database) and the real gateway as processes and
 * prints p50/p99 of tools/call through the gateway and straight to the executor, at concurrency 1
 * and 32, and how many config fetches the control plane saw during the steady-state runs.
 * tools/list of an AEI with 1,000 bindings has a benchmark of its own (tools-list.bench.ts).
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  spawnService,
  startControlPlane,
  startGateway,
} from './support/control-plane.ts';
import { cpuMs, ms, summarize } from './support/stats.ts';
import { executorResult, toolCallResult } from './support/answers.ts';
import { readMetrics } from '@bindery/test-support';

const CALLS_C1 = Number(process.env.BENCH_CALLS ?? 1500);
const CALLS_PER_WORKER_C32 = 40;
const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP ?? 1000);

const cp = await startControlPlane('postgres');
const gw = await startGateway(cp.url, { CONFIG_CACHE_TTL_MS: process.env.BENCH_TTL_MS ?? '30000' });

// The floor: a bare Node.js proxy in front of the same control plane (support/reference-proxy.ts).
const reference = await spawnService(
  fileURLToPath(new URL('.', import.meta.url)),
  { UPSTREAM_URL: cp.url },
  [],
  'support/reference-proxy.ts',
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

/** Config requests the gateway sent so far, and how many of them were ETag revalidations (304). */
async function configRequests(): Promise<{ all: number; revalidated: number }> {
  const metrics = await readMetrics(gw.url);
  return {
    all: metrics.value('gateway_config_fetches_total'),
    revalidated: metrics.value('gateway_config_cache_total', '{result="revalidated"}', 0),
  };
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

  // Straight to the executor: what the gateway itself calls. The same request through the
  // reference proxy shows what any Node.js hop costs here.
  const executeAt = (base: string) => () =>
    fetch(`${base}/internal/adi/${adi.id}/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ aei_id: aei.id, binding_id: binding.id, arguments: args }),
    })
      .then((r) => r.text())
      .then((text) => void executorResult(text, base));
  const direct = executeAt(cp.url);
  const viaReference = executeAt(reference.url);

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
    })
      .then((r) => r.text())
      .then((text) => void toolCallResult(text, 'gateway'));

  // Through the gateway with the SDK Client: what an agent sees end to end.
  const clients: Client[] = [];
  for (let w = 0; w < 32; w++) {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    clients.push(client);
  }
  const viaSdk = (w: number) =>
    clients[w]!.callTool({ name: 'q', arguments: args }).then((result) => {
      if (result.isError) throw new Error(`SDK call: ${JSON.stringify(result.content)}`);
    });

  // Warm everything (pools, caches, JIT): a gateway serves for hours, so the figures are of warm
  // processes. With 50 rounds the first third of the c=1 run still came out 0.3-0.5 ms slower
  // than the rest, while V8 was still optimizing the hot paths.
  for (let i = 0; i < WARMUP_ROUNDS; i++) {
    await direct();
    await viaReference();
    await viaGateway(0);
    await viaSdk(0);
  }
  const configBefore = await configRequests();

  console.log('gateway benchmark: tools/call of a query tool on a small context (PostgreSQL)');
  console.log('  (the paths take turns call by call, so they see the same machine load)');
  const paths = {
    direct,
    reference: viaReference,
    gateway: viaGateway,
    sdk: viaSdk,
  };
  const interleaved = async (workers: number, perWorker: number) => {
    const samples = {
      direct: [] as number[],
      reference: [] as number[],
      gateway: [] as number[],
      sdk: [] as number[],
    };
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        for (let i = 0; i < perWorker; i++) {
          for (const name of ['direct', 'reference', 'gateway', 'sdk'] as const) {
            const t0 = performance.now();
            await paths[name](w);
            samples[name].push(performance.now() - t0);
          }
        }
      }),
    );
    return samples;
  };
  const cpuBefore = { gateway: cpuMs(gw.child.pid), reference: cpuMs(reference.child.pid) };
  const c1 = await interleaved(1, CALLS_C1);
  const cpuAfter = { gateway: cpuMs(gw.child.pid), reference: cpuMs(reference.child.pid) };
  const d1 = row('executor direct (HTTP)            c=1', c1.direct);
  const r1 = row('via reference proxy (bare Node)   c=1', c1.reference);
  const g1 = row('via gateway (JSON-RPC over HTTP)  c=1', c1.gateway);
  row('via gateway (SDK Client)          c=1', c1.sdk);
  const c32 = await interleaved(32, CALLS_PER_WORKER_C32);
  const d32 = row('executor direct (HTTP)            c=32', c32.direct);
  const r32 = row('via reference proxy (bare Node)   c=32', c32.reference);
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
  // Paired: the same iteration's call minus its direct call, so machine drift cancels out; at
  // c=1 also per third of the run, to show how steady the figure is within a run.
  const paired = (via: number[], direct: number[]) => summarize(via.map((v, k) => v - direct[k]!)).p50;
  const thirds = (via: number[], direct: number[]) => {
    const size = Math.floor(via.length / 3);
    return [0, 1, 2].map((t) =>
      paired(via.slice(t * size, (t + 1) * size), direct.slice(t * size, (t + 1) * size)).toFixed(2),
    );
  };
  console.log(
    `  gateway adds at p50: ${ms(g1.p50 - d1.p50)} (c=1), ${ms(g32.p50 - d32.p50)} (c=32); ` +
      `paired per call: ${ms(paired(c1.gateway, c1.direct))} (c=1; by third of the run ` +
      `${thirds(c1.gateway, c1.direct).join(', ')}), ${ms(paired(c32.gateway, c32.direct))} (c=32)`,
  );
  console.log(
    `  reference proxy adds at p50: ${ms(r1.p50 - d1.p50)} (c=1), ${ms(r32.p50 - d32.p50)} (c=32); ` +
      `paired per call: ${ms(paired(c1.reference, c1.direct))} (c=1), ${ms(paired(c32.reference, c32.direct))} (c=32)`,
  );
  // Two gateway calls per c=1 iteration (raw JSON-RPC and SDK Client), one reference call.
  console.log(
    `  CPU per call at c=1 (user + system): gateway ${ms((cpuAfter.gateway - cpuBefore.gateway) / (2 * CALLS_C1))}, ` +
      `reference proxy ${ms((cpuAfter.reference - cpuBefore.reference) / CALLS_C1)}`,
  );
  const steadyCalls = 2 * (CALLS_C1 + 32 * CALLS_PER_WORKER_C32);
  const configAfter = await configRequests();
  console.log(
    `  config requests by the gateway during ${steadyCalls} steady-state calls: ${configAfter.all - configBefore.all} ` +
      `(ETag revalidations answered 304: ${configAfter.revalidated - configBefore.revalidated}; ` +
      `at most one per key per CONFIG_CACHE_TTL_MS, here ${process.env.BENCH_TTL_MS ?? '30000'} ms)`,
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

  for (const client of clients) await client.close();
} finally {
  await gw.stop();
  await reference.stop();
  await cp.stop();
}
