/**
 * Hot-path benchmark: read tool calls through the gateway, against a naive MCP server in the same
 * run.
 *   pnpm --filter @bindery/bench bench:hot-path [-- --engine pglite,postgres,postgres+redis]
 * For each engine, starts the real control plane (embedded PGlite on a fresh data directory, or a
 * fresh PostgreSQL database) and the real gateway as processes, binds a `query` tool on a
 * 100-item context, and prints:
 * - calls per second at concurrency 32 through the gateway (raw JSON-RPC over HTTP on initialized
 *   sessions), through a bare Node.js proxy straight to the executor (support/reference-proxy.ts),
 *   and of the in-run reference, a naive stateless SDK server (support/naive-mcp-server.ts: a new
 *   McpServer and transport per request, an echo tool, no database), the paths taking turns run by
 *   run, the median run kept; the gateway's ratio to the naive server (target ≥ 3x on every engine);
 * - p50/p99 at concurrency 1, the paths taking turns call by call (target ≤ 1.5 ms on PostgreSQL,
 *   the naive server's beside it);
 * - CPU time per call at concurrency 32 of each process on each path (from /proc: the benchmark
 *   client, gateway or proxy, control plane, and on PostgreSQL the database's and Redis' processes),
 *   steadier than calls per second on a noisy host;
 * - what the control plane looked up during the measured calls: binding and context cache misses
 *   (0 = no database read for them in steady state) and, on PostgreSQL, where tables' versions came
 *   from (memory under the control plane's lease, or Redis);
 * - the audit rows each INSERT carried at concurrency 32 (the audit trail's group commit), and at
 *   each concurrency how long a call waited for its row's commit and how long its tool ran;
 * - at concurrency 1, each service's CPU time per call and, on PostgreSQL, the database's own
 *   round trips between those calls (`SELECT 1`; a one-row INSERT with its commit, what each lone
 *   call through the control plane waits for at least).
 * Engines: embedded PGlite; PostgreSQL without Redis (tables' versions over LISTEN/NOTIFY); PostgreSQL
 * with REDIS_URL (BENCH_REDIS_URL, default the local Redis); and, named only when asked for,
 * `postgres+tracing`: PostgreSQL without Redis with OpenTelemetry traces on in both services, every
 * call exported to a collector on loopback that keeps nothing (the cost of traces: compare its
 * ratio with `postgres` in the same run).
 * Environment: BENCH_SECONDS (length of one run, default 3), BENCH_ROUNDS (runs per path, default
 * 3), BENCH_CALLS (calls per path at concurrency 1, default 1000), BENCH_WARMUP (rounds, default 500),
 * BENCH_PATHS (words of the paths to run, e.g. `naive,JSON-RPC`; the others are skipped), BENCH_PERF=1
 * (services started for Linux perf, support/control-plane.ts; it takes the place of BENCH_PROFILE_DIR).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import pg from 'pg';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  databaseUrl,
  spawnService,
  startControlPlane,
  startGateway,
} from './support/control-plane.ts';
import { ms, summarize } from './support/stats.ts';
import { benchArgs } from './support/args.ts';
import { addCpu, cpuReading, type CpuParts } from './support/cpu-time.ts';
import { executorResult, toolCallResult } from './support/answers.ts';
import { readMetrics } from '@bindery/test-support';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CALLS_C1 = Number(process.env.BENCH_CALLS ?? 1000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 500);
const CONCURRENCY = 32;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const { values } = parseArgs({
  args: benchArgs(),
  options: { engine: { type: 'string', default: 'pglite,postgres,postgres+redis' } },
});
type Engine = 'pglite' | 'postgres' | 'postgres+redis' | 'postgres+tracing';
const ENGINE_NAMES: Record<Engine, string> = {
  pglite: 'embedded PGlite',
  postgres: 'PostgreSQL without Redis (LISTEN/NOTIFY)',
  'postgres+redis': 'PostgreSQL with Redis',
  'postgres+tracing': 'PostgreSQL without Redis, traces on (every call exported over OTLP/HTTP)',
};
const engines = values.engine.split(',').map((e) => {
  if (!(e in ENGINE_NAMES))
    throw new Error(`--engine: pglite, postgres, postgres+redis or postgres+tracing, not ${e}`);
  return e as Engine;
});

const agent = new Agent({ connections: 64, pipelining: 1 });

/** An OTLP/HTTP collector that answers every export and keeps nothing; counts the spans' bytes. */
async function spanSink(): Promise<{ url: string; bytes: () => number; close(): Promise<void> }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
  const res = await request(url, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${text.slice(0, 300)}`);
  return text;
}

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
/** A modern (2026-07-28) request carries its version and client in `_meta` and headers, no session. */
const MODERN = '2026-07-28';
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
};

/** Calls per second of `workers` loops calling `call` for `seconds`, and how many calls. */
async function throughput(workers: number, seconds: number, call: (w: number) => Promise<void>) {
  let calls = 0;
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < until) {
        await call(w);
        calls += 1;
      }
    }),
  );
  return { rate: calls / ((performance.now() - started) / 1000), calls };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/**
 * The database's own round trips from this process on the control plane's database, taken at
 * concurrency 1 between the paths' calls (so under the same conditions: a backend that idled
 * meanwhile): `SELECT 1`, and a one-row INSERT with its commit, as each call's audit row is at
 * c=1 on PostgreSQL (decision 045 answers a call once its row committed). The floor that guarantee
 * puts under a call's latency on this host, in the same run. Its scratch table goes with the
 * database, which the run drops (with FORCE: hence the error listener, for a client still open).
 */
async function databaseProbe(url: string) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('CREATE TABLE bench_commit_probe (id int PRIMARY KEY, at timestamptz NOT NULL)');
  } catch (error) {
    await client.end();
    throw error;
  }
  let id = 0;
  return {
    select: () => client.query({ name: 'probe_select', text: 'SELECT 1' }),
    insert: () =>
      client.query({
        name: 'probe_insert',
        text: 'INSERT INTO bench_commit_probe (id, at) VALUES ($1, now())',
        values: [id++],
      }),
    close: () => client.end(),
  };
}

/** Milliseconds per event from two readings of a histogram's seconds `sum` and `count`. */
const perEvent = (from: { sum: number; count: number }, to: { sum: number; count: number }): string => {
  const count = to.count - from.count;
  return count > 0 ? `${(((to.sum - from.sum) / count) * 1000).toFixed(2)} ms` : 'n/a';
};

const naive = await spawnService(BENCH_DIR, {}, [], 'support/naive-mcp-server.ts');
try {
  const naiveCall = (_w: number) =>
    post(
      naive.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { query: 'x' } } },
      MCP_HEADERS,
    ).then((text) => void toolCallResult(text, 'naive SDK server'));
  for (const engine of engines) await benchEngine(engine, naiveCall);
} finally {
  await naive.stop();
  await agent.close();
}

async function benchEngine(engine: Engine, naiveCall: (w: number) => Promise<void>) {
  // On PostgreSQL, control planes share tables' versions through Redis, or without it through the
  // database's LISTEN/NOTIFY: the set-ups several control planes run with.
  const postgres = engine !== 'pglite';
  // Traces on: both services export every call's spans to a collector that takes them and keeps
  // nothing (spanSink), so the cost measured is the services' own.
  const sink = engine === 'postgres+tracing' ? await spanSink() : undefined;
  const tracing: Record<string, string> = sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {};
  const cp = await startControlPlane(postgres ? 'postgres' : 'pglite', {
    ...(engine === 'postgres+redis' && { REDIS_URL: REDIS_URL }),
    ...tracing,
  });
  const gw = await startGateway(cp.url, tracing);
  const proxy = await spawnService(BENCH_DIR, { UPSTREAM_URL: cp.url }, [], 'support/reference-proxy.ts');
  try {
    const admin = async (path: string, body: unknown) =>
      JSON.parse(await post(`${cp.url}${path}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` })) as Record<
        string,
        string
      >;
    const table = await admin('/api/v2/tables', {
      name: 'bench',
      data: { customers: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `c${i}` })) },
    });
    const adi = await admin('/api/v2/adis', {
      table_id: table.id,
      json_path: '/customers',
      operation_type: 'query',
    });
    const aei = await admin('/api/v2/aeis', { name: 'bench' });
    const binding = await admin(`/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id!, tool_name: 'q' });
    const args = { query: '[?id < `3`].name' };
    const mcpUrl = `${gw.url}/api/v2/mcp/server/${aei.api_key}`;

    const sessions: string[] = [];
    for (let w = 0; w < CONCURRENCY; w++) {
      const res = await request(mcpUrl, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json', ...MCP_HEADERS },
        body: JSON.stringify(initialize),
      });
      await res.body.text();
      sessions.push(String(res.headers['mcp-session-id'] ?? ''));
    }
    let id = 1;
    const paths: Record<string, (w: number) => Promise<void>> = {
      'naive SDK server (reference)': naiveCall,
      'gateway (JSON-RPC over HTTP)': (w) =>
        post(
          mcpUrl,
          { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'q', arguments: args } },
          { ...MCP_HEADERS, 'mcp-session-id': sessions[w]! },
        ).then((text) => void toolCallResult(text, 'gateway')),
      'gateway, modern era (no session)': () =>
        post(
          mcpUrl,
          {
            jsonrpc: '2.0',
            id: id++,
            method: 'tools/call',
            params: { name: 'q', arguments: args, _meta: MODERN_META },
          },
          {
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': MODERN,
            'mcp-method': 'tools/call',
            'mcp-name': 'q',
          },
        ).then((text) => void toolCallResult(text, 'gateway, modern era')),
      'bare Node proxy -> executor': () =>
        post(
          `${proxy.url}/internal/adi/${adi.id}/execute`,
          { aei_id: aei.id, binding_id: binding.id, arguments: args },
          { authorization: `Bearer ${INTERNAL_TOKEN}` },
        ).then((text) => void executorResult(text, 'bare Node proxy')),
    };
    // BENCH_PATHS (comma-separated words of the paths' names, e.g. `naive,JSON-RPC`) keeps only the
    // paths named, for a profile of one of them (a ratio whose paths did not run prints NaN).
    const only = process.env.BENCH_PATHS?.split(',');
    const names = Object.keys(paths).filter(
      (n) => only === undefined || only.some((word) => n.includes(word)),
    );
    for (let i = 0; i < WARMUP; i++) for (const name of names) await paths[name]!(0);
    for (const name of names) if (!name.startsWith('naive')) await throughput(CONCURRENCY, 1, paths[name]!);

    // One reading of each service's metrics per lookup (no calls are in flight meanwhile).
    const lookups = async () => {
      const [control, gateway] = await Promise.all([readMetrics(cp.url), readMetrics(gw.url)]);
      return {
        bindingMiss: control.value('controlplane_binding_cache_total', '{result="miss"}', 0),
        bindingHit: control.value('controlplane_binding_cache_total', '{result="hit"}', 0),
        contextMiss: control.value('controlplane_context_cache_total', '{result="miss"}', 0),
        versionMemory: control.value('controlplane_table_version_lookups_total', '{source="memory"}', 0),
        versionRedis: control.value('controlplane_table_version_lookups_total', '{source="redis"}', 0),
        versionDatabase: control.value('controlplane_table_version_lookups_total', '{source="database"}', 0),
        batches: gateway.value('gateway_execute_batch_calls_count'),
        batched: gateway.value('gateway_execute_batch_calls_sum'),
        auditInserts: control.value('controlplane_audit_batch_rows_count'),
        auditRows: control.value('controlplane_audit_batch_rows_sum'),
        // What a call waits for its audit row's commit, and what running its tool took.
        auditWait: {
          sum: control.value('controlplane_audit_write_seconds_sum'),
          count: control.value('controlplane_audit_write_seconds_count'),
        },
        execution: {
          sum: control.total('controlplane_tool_execution_seconds_sum'),
          count: control.total('controlplane_tool_execution_seconds_count'),
        },
      };
    };
    const before = await lookups();
    const rates: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((n) => [n, []]));
    // CPU time each process spent on each path's calls (gateway, control plane, database, Redis,
    // this benchmark), over all its runs.
    const cpu: Record<string, { calls: number; parts: CpuParts }> = Object.fromEntries(
      Object.keys(paths).map((n) => [n, { calls: 0, parts: {} }]),
    );
    const reading = () =>
      cpuReading(
        { gateway: gw.child.pid, 'control plane': cp.pid, proxy: proxy.child.pid, naive: naive.child.pid },
        postgres
          ? { database: 'postgres', ...(engine === 'postgres+redis' && { redis: 'redis-server' }) }
          : {},
      );
    for (let r = 0; r < ROUNDS; r++) {
      for (const name of names) {
        const before = reading();
        const run = await throughput(CONCURRENCY, SECONDS, paths[name]!);
        addCpu(cpu[name]!.parts, before, reading());
        cpu[name]!.calls += run.calls;
        rates[name]!.push(run.rate);
      }
    }
    // Between the two phases: the audit rows per INSERT at concurrency 32 (at 1, every INSERT
    // carries one row), and the averages of each phase.
    const atC32 = await lookups();
    const c1: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((n) => [n, []]));
    // Only beside calls that write an audit row (a path through the control plane).
    const probe =
      postgres && names.some((name) => !name.startsWith('naive'))
        ? await databaseProbe(databaseUrl(cp.database))
        : undefined;
    const database = { select: [] as number[], insert: [] as number[] };
    const timed = async (into: number[], work: () => Promise<unknown>) => {
      const t0 = performance.now();
      await work();
      into.push(performance.now() - t0);
    };
    const c1Cpu = reading();
    try {
      for (let i = 0; i < CALLS_C1; i++) {
        for (const name of names) await timed(c1[name]!, () => paths[name]!(0));
        if (probe) {
          await timed(database.select, probe.select);
          await timed(database.insert, probe.insert);
        }
      }
    } finally {
      await probe?.close();
    }
    const c1Parts: CpuParts = {};
    addCpu(c1Parts, c1Cpu, reading());
    const after = await lookups();

    console.log(`hot path, ${ENGINE_NAMES[engine]}: tools/call of a query tool on a 100-item context`);
    const naiveRate = median(rates['naive SDK server (reference)']!);
    for (const name of names) {
      const rate = median(rates[name]!);
      const all = rates[name]!.map((x) => x.toFixed(0)).join(', ');
      console.log(
        `  c=${CONCURRENCY} ${name.padEnd(30)} ${rate.toFixed(0).padStart(6)} calls/s  (runs: ${all})`,
      );
    }
    const ratio = median(rates['gateway (JSON-RPC over HTTP)']!) / naiveRate;
    console.log(
      `  gateway / naive SDK server at c=${CONCURRENCY}: ${ratio.toFixed(2)}x  (target >= 3x: ${ratio >= 3 ? 'met' : 'NOT met'})`,
    );
    const eras =
      median(rates['gateway, modern era (no session)']!) / median(rates['gateway (JSON-RPC over HTTP)']!);
    console.log(
      `  modern era / legacy session at c=${CONCURRENCY}: ${eras.toFixed(2)}x  (target >= 1.2x: ${eras >= 1.2 ? 'met' : 'NOT met'})`,
    );
    for (const name of names) {
      const { calls, parts } = cpu[name]!;
      // The processes on the path (the others only idle meanwhile).
      const onPath = name.startsWith('naive')
        ? ['client', 'naive']
        : ['client', name.startsWith('gateway') ? 'gateway' : 'proxy', 'control plane', 'database', 'redis'];
      const spent = onPath
        .filter((part) => parts[part] !== undefined)
        .map((part) => `${part} ${((parts[part]! * 1e6) / calls).toFixed(0)}`);
      if (spent.length > 0)
        console.log(`  c=${CONCURRENCY} ${name.padEnd(30)} CPU µs per call: ${spent.join(', ')}`);
    }
    for (const name of names) {
      const s = summarize(c1[name]!);
      console.log(
        `  c=1  ${name.padEnd(30)} n=${s.n}  p50 ${ms(s.p50).padStart(9)}  p99 ${ms(s.p99).padStart(9)}`,
      );
    }
    // Each service's CPU over the c=1 calls of the paths through it (the paths took turns, so a
    // process's time is shared by those paths' calls alone; its background work and helper threads
    // are in it too). The database is left out (the probe's statements run on it as well), and so
    // are the client and Redis. On PGlite the control plane's figure includes its database.
    const servedBy: Record<string, string[]> = {
      gateway: names.filter((name) => name.startsWith('gateway')),
      'control plane': names.filter((name) => !name.startsWith('naive')),
      proxy: names.filter((name) => name.startsWith('bare')),
      naive: names.filter((name) => name.startsWith('naive')),
    };
    const c1Spent = Object.entries(servedBy)
      .filter(([part, served]) => served.length > 0 && c1Parts[part] !== undefined)
      .map(([part, served]) => `${part} ${((c1Parts[part]! * 1e6) / (CALLS_C1 * served.length)).toFixed(0)}`);
    if (c1Spent.length > 0) console.log(`  c=1  CPU µs per call of each service: ${c1Spent.join(', ')}`);
    const p50 = summarize(c1['gateway (JSON-RPC over HTTP)']!).p50;
    if (postgres) {
      const naiveP50 = summarize(c1['naive SDK server (reference)']!).p50;
      console.log(
        `  gateway p50 at c=1: ${ms(p50)}, naive SDK server ${ms(naiveP50)} (target <= 1.5 ms on PostgreSQL: ${p50 <= 1.5 ? 'met' : 'NOT met'})`,
      );
    }
    if (probe) {
      console.log(
        `  the database alone at c=1, between those calls: SELECT 1 p50 ${ms(summarize(database.select).p50)}, ` +
          `a one-row INSERT with its commit p50 ${ms(summarize(database.insert).p50)} (a call through the control plane waits for one: its audit row)`,
      );
    }
    const calls = after.bindingHit + after.bindingMiss - before.bindingHit - before.bindingMiss;
    console.log(
      `  during ${calls} measured executor calls: binding cache misses ${after.bindingMiss - before.bindingMiss}, ` +
        `context cache misses ${after.contextMiss - before.contextMiss} (0 = read from memory, no database round trip)`,
    );
    // Both eras' calls go through the gateway (the modern one too).
    const throughGateway = names.filter((name) => name.startsWith('gateway'));
    const gatewayCalls = throughGateway.reduce((sum, name) => sum + cpu[name]!.calls + CALLS_C1, 0);
    const batches = after.batches - before.batches;
    const batched = after.batched - before.batched;
    console.log(
      `  gateway -> control plane: ${batched} of the gateway's ${gatewayCalls} calls went in ${batches} shared exchanges ` +
        `(${batches > 0 ? (batched / batches).toFixed(1) : '0'} calls each); the others alone`,
    );
    const inserts = atC32.auditInserts - before.auditInserts;
    const rows = atC32.auditRows - before.auditRows;
    console.log(
      `  audit at c=${CONCURRENCY}: ${rows} rows in ${inserts} INSERTs ` +
        `(${inserts > 0 ? (rows / inserts).toFixed(1) : '0'} rows each)`,
    );
    // Averages over the control plane's calls of each phase (at c=1: the gateway's, the modern
    // era's and the proxy's calls, taking turns).
    for (const [phase, from, to] of [
      [`c=${CONCURRENCY}`, before, atC32],
      ['c=1', atC32, after],
    ] as const) {
      console.log(
        `  control plane at ${phase}: a call waited ${perEvent(from.auditWait, to.auditWait)} on average ` +
          `for its audit row's commit; running its tool took ${perEvent(from.execution, to.execution)}`,
      );
    }
    if (postgres) {
      console.log(
        `  tables' versions: ${after.versionMemory - before.versionMemory} from memory under the lease, ` +
          `${after.versionRedis - before.versionRedis} asked of Redis, ` +
          `${after.versionDatabase - before.versionDatabase} of the database (0 = no round trip on reads)`,
      );
    }
    if (sink) console.log(`  traces: ${(sink.bytes() / 1024 / 1024).toFixed(1)} MiB of OTLP JSON exported`);
  } finally {
    await proxy.stop();
    await gw.stop();
    await cp.stop();
    await sink?.close();
  }
}
