/**
 * tools/list benchmark (issue: hot path, tools/list from bytes).
 *   pnpm --filter @bindery/bench bench:tools-list
 * Starts the real control plane (fresh PostgreSQL database) and the real gateway as processes,
 * makes an AEI with 1,000 bindings in direct mode and one with the same bindings in progressive
 * mode, and prints for each: lists per second at concurrency 8 and p50/p99 at concurrency 1 of
 * `tools/list` as raw JSON-RPC over HTTP on held sessions (one page: TOOLS_PAGE_SIZE=1000; a plain
 * socket client, `support/raw-http-client.ts`, so the client's share of the two cores is small), next
 * to the targets, with in-run references: a bare Node.js server answering the same bytes from
 * memory (`support/static-answer.ts`, the floor of moving them over HTTP here), the HTTP round
 * trip floor (GET /healthz), what JSON.stringify of that result costs in this process (what each
 * list paid before the answer was kept as bytes), and the SDK Client's list (parsing and
 * validating 1,000 tools on the client's side included).
 * Environment: BENCH_LISTS (lists per run at concurrency 8, default 2000), BENCH_ROUNDS (runs
 * per path, alternating, the median kept; default 3), BENCH_CALLS (lists per path at
 * concurrency 1, default 400), BENCH_WARMUP (lists per path first, default 200).
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Pool } from 'undici';
import { ADMIN_TOKEN, spawnService, startControlPlane, startGateway } from './support/control-plane.ts';
import { loadThread, type LoadThread, type Throughput } from './support/list-load.ts';
import { cpuMs, ms, summarize, type Summary } from './support/stats.ts';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const LISTS_C8 = Number(process.env.BENCH_LISTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CALLS_C1 = Number(process.env.BENCH_CALLS ?? 400);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const BINDINGS = 1000;
const TARGET_PER_SECOND = 1000;
const TARGET_P50_MS = 2;
const PROTOCOL_VERSION = '2025-06-18';

const cp = await startControlPlane('postgres');
const gw = await startGateway(cp.url, { TOOLS_PAGE_SIZE: String(BINDINGS) });
const answers = await mkdtemp(join(tmpdir(), 'bindery-bench-answers-'));
// Closed in `finally`, whatever happens: a thread or pool left open would keep the process alive.
let bareServer: Awaited<ReturnType<typeof spawnService>> | undefined;
let load: LoadThread | undefined;
const gateway = new Pool(gw.url, { connections: 8 });

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

interface Run extends Throughput {
  /** CPU time (user + system) per call of the server's process. */
  serverCpuMs: number;
}

/** About `total` lists on `path` by the load thread's loops at once, with the server's CPU per list. */
async function throughput(thread: LoadThread, path: string, total: number, serverPid: number | undefined) {
  const before = cpuMs(serverPid);
  const run = await thread.throughput(path, total);
  // The loops run ceil(total / 8) lists each.
  const calls = Math.ceil(total / 8) * 8;
  return { ...run, serverCpuMs: (cpuMs(serverPid) - before) / calls };
}

const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
const perSecond = (value: number) => `${value.toFixed(0).padStart(6)} lists/s`;
const latency = (s: Summary) => `p50 ${ms(s.p50).padStart(10)}  p99 ${ms(s.p99).padStart(10)}`;

try {
  const table = await admin('POST', '/api/v2/tables', {
    name: 'bench',
    data: { customers: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `c${i}` })) },
  });
  const ids: string[] = new Array(BINDINGS);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < BINDINGS) {
        const i = next++;
        const adi = await admin('POST', '/api/v2/adis', {
          table_id: table.id,
          json_path: '/customers',
          operation_type: (['query', 'preview', 'select', 'get_schema', 'create'] as const)[i % 5],
          category: `category-${i % 20}`,
          description: `Tool number ${i} over the customers of the benchmark table.`,
        });
        ids[i] = String(adi.id);
      }
    }),
  );
  const exposure = async (body: Record<string, unknown>) => {
    const aei = await admin('POST', '/api/v2/aeis', body);
    for (let i = 0; i < BINDINGS; i += 500) {
      await admin(
        'POST',
        `/api/v2/aeis/${aei.id}/bindings`,
        ids.slice(i, i + 500).map((adi_id) => ({ adi_id })),
      );
    }
    return `/api/v2/mcp/server/${aei.api_key}`;
  };
  const modes = [
    { name: 'direct', path: await exposure({ name: 'direct' }) },
    {
      name: 'progressive',
      path: await exposure({ name: 'catalog', exposure_mode: 'progressive', catalog_search: true }),
    },
  ];

  // Sessions opened by hand, eight per exposure (one per worker), and each exposure's answer.
  const sessions = new Map<string, string[]>();
  for (const mode of modes) {
    const opened: string[] = [];
    for (let w = 0; w < 8; w++) {
      const res = await gateway.request({
        method: 'POST',
        path: mode.path,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: {
            protocolVersion: PROTOCOL_VERSION,
            capabilities: {},
            clientInfo: { name: 'bench', version: '1' },
          },
        }),
      });
      await res.body.text();
      opened.push(String(res.headers['mcp-session-id']));
    }
    sessions.set(mode.name, opened);
    const res = await gateway.request({
      method: 'POST',
      path: mode.path,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': opened[0]!,
        'mcp-protocol-version': PROTOCOL_VERSION,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await writeFile(join(answers, `${mode.name}.json`), await res.body.text());
  }
  const reference = await spawnService(BENCH_DIR, { ANSWER_DIR: answers }, [], 'support/static-answer.ts');
  bareServer = reference;
  console.log(
    `tools/list benchmark: AEIs of ${BINDINGS} bindings, raw JSON-RPC over HTTP on held sessions, ` +
      `TOOLS_PAGE_SIZE=${BINDINGS} (one page); targets >= ${TARGET_PER_SECOND} lists/s at c=8, p50 <= ${TARGET_P50_MS} ms at c=1`,
  );
  for (const mode of modes) {
    // Parsed for the figures and let go (the load runs in a thread of its own anyway).
    const file = join(answers, `${mode.name}.json`);
    const answered = async () =>
      (JSON.parse(await readFile(file, 'utf8')) as { result: { tools: unknown[] } }).result;
    const tools = (await answered()).tools.length;
    console.log(
      `  ${mode.name} mode: ${tools} tools, ${((await stat(file)).size / 1024).toFixed(1)} KiB answer`,
    );
    // The lists go over plain sockets from a thread of their own (support/list-load.ts): one
    // connection per loop and path, each on a session of its own on the gateway.
    load = loadThread({
      gateway: {
        url: gw.url,
        path: mode.path,
        headers: sessions.get(mode.name)!.map((session) => ({
          accept: 'application/json, text/event-stream',
          'mcp-session-id': session,
          'mcp-protocol-version': PROTOCOL_VERSION,
        })),
      },
      bare: {
        url: reference.url,
        path: `/${mode.name}.json`,
        headers: Array.from({ length: 8 }, () => ({})),
      },
    });
    await load.turns(['gateway', 'bare'], WARMUP);
    // Concurrency 8: runs alternate between the paths, the median run of each is kept.
    const runs = { gateway: [] as Run[], bare: [] as Run[] };
    for (let r = 0; r < ROUNDS; r++) {
      runs.gateway.push(await throughput(load, 'gateway', LISTS_C8, gw.child.pid));
      runs.bare.push(await throughput(load, 'bare', LISTS_C8, reference.child.pid));
    }
    const median = (values: Run[]) =>
      [...values].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(values.length / 2)]!;
    // Concurrency 1: the paths take turns list by list.
    const [gatewayC1, bareC1] = await load.turns(['gateway', 'bare'], CALLS_C1);
    await load.close();
    load = undefined;
    const c1 = { gateway: gatewayC1!, bare: bareC1! };
    const g8 = median(runs.gateway);
    const b8 = median(runs.bare);
    const g1 = summarize(c1.gateway);
    const b1 = summarize(c1.bare);
    const cpu = (run: Run) => `CPU per list: server ${ms(run.serverCpuMs)}, client ${ms(run.clientCpuMs)}`;
    console.log(
      `    via gateway                       c=8 ${perSecond(g8.perSecond)} (target >= ${TARGET_PER_SECOND}: ${verdict(g8.perSecond >= TARGET_PER_SECOND)})` +
        `  c=1 n=${g1.n} ${latency(g1)} (target p50 <= ${TARGET_P50_MS} ms: ${verdict(g1.p50 <= TARGET_P50_MS)})`,
    );
    console.log(
      `    reference: bare Node, same bytes  c=8 ${perSecond(b8.perSecond)}                      c=1 n=${b1.n} ${latency(b1)}`,
    );
    console.log(`    at c=8, gateway ${cpu(g8)}; reference ${cpu(b8)}`);
    console.log(
      `    gateway over the reference: ${(g8.perSecond / b8.perSecond).toFixed(2)}x the lists/s, ` +
        `${ms(g1.p50 - b1.p50)} more at p50; runs at c=8: gateway ${runs.gateway.map((r) => r.perSecond.toFixed(0)).join(', ')}, ` +
        `reference ${runs.bare.map((r) => r.perSecond.toFixed(0)).join(', ')}`,
    );
    // What every list paid before: serialising the result again (in this process, for scale).
    const result = await answered();
    const stringify: number[] = [];
    for (let i = 0; i < 60; i++) {
      const t0 = performance.now();
      JSON.stringify({ jsonrpc: '2.0', id: i, result });
      stringify.push(performance.now() - t0);
    }
    console.log(
      `    JSON.stringify of this answer, in this process          ${latency(summarize(stringify.slice(10)))}`,
    );
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}${mode.path}`)));
    for (let i = 0; i < 10; i++) await client.listTools();
    const sdk: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      await client.listTools();
      sdk.push(performance.now() - t0);
    }
    console.log(
      `    SDK Client via gateway (client-side parsing included) c=1 n=50 ${latency(summarize(sdk))}`,
    );
    await client.close();
  }
  const floor: number[] = [];
  for (let i = 0; i < CALLS_C1; i++) {
    const t0 = performance.now();
    await (await fetch(`${gw.url}/healthz`)).text();
    floor.push(performance.now() - t0);
  }
  console.log(
    `  HTTP round trip floor (GET /healthz, fetch) c=1 n=${floor.length} ${latency(summarize(floor))}`,
  );
} finally {
  await load?.close();
  await gateway.close();
  await gw.stop();
  if (bareServer) await bareServer.stop();
  await rm(answers, { recursive: true, force: true });
  await cp.stop();
}
