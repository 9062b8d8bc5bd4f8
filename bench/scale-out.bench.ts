/**
 * Scale-out benchmark: two control planes and two gateways, behind round-robin balancers, under a
 * load of reads and keyed writes; throughput with one gateway and with two, then a crash of each.
 *   pnpm --filter @bindery/bench bench:scale-out
 * Starts (test-support's `startReplicas`) a fresh PostgreSQL database, two control planes on it
 * sharing the local Redis (BENCH_REDIS_URL), a TCP balancer in front of them that both gateways
 * call, two gateways, and a balancer in front of the gateways that the load calls. The load
 * (test-support's `startLoad`), as MCP tools/call of the 2026-07-28 era: writers appending values
 * of their own to one ledger table (`create`, with an idempotency key, sent again with the same key
 * until acknowledged), one write after another, and readers reading its last entry (`query`). Prints:
 * - calls per second (reads and writes) with one gateway behind the balancer and with two, the two
 *   taking turns run by run, the median run kept; both control planes serve in both. Writes to one
 *   table take turns (each waits for the other control plane to confirm its version), so their
 *   rate says what the table allows; reads say what the replicas do;
 * - CPU time per call of each process (from /proc: this benchmark with its load and both
 *   balancers, each gateway, each control plane, PostgreSQL's and Redis' processes), steadier
 *   than calls per second on a busy host: on a host with few cores, four services, the database
 *   and the load share them, and a second gateway adds capacity only where cores are idle;
 * - the crash drill (test-support's `crashEach`): the first control plane killed (SIGKILL), kept
 *   down BENCH_DOWN_MS and started again, then the same for the first gateway: failed calls, when
 *   they ended after the kill, the error window (first to last failure), the calls answered
 *   meanwhile, the restart time, and retries answered by the idempotency record (`replayed`);
 * - the exactly-once check: every acknowledged write in the table once, none twice.
 * Environment: BENCH_SECONDS (one throughput run, default 3), BENCH_ROUNDS (runs per setting,
 * default 3), BENCH_READERS (default 24), BENCH_WRITERS (default 8), BENCH_DOWN_MS (default 3000).
 */
import {
  checkLedger,
  crashEach,
  disruption,
  ledgerExposure,
  readMetrics,
  startLoad,
  startReplicas,
  type Crash,
  type Disruption,
  type LoadRun,
} from '@bindery/test-support';
import { addCpu, cpuReading, type CpuParts } from './support/cpu-time.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LOAD = {
  readers: Number(process.env.BENCH_READERS ?? 24),
  writers: Number(process.env.BENCH_WRITERS ?? 8),
};
const DOWN_MS = Number(process.env.BENCH_DOWN_MS ?? 3000);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const replicas = await startReplicas({ purpose: 'bench', redisUrl: REDIS_URL });
try {
  const ledger = await ledgerExposure((method, path, body) => replicas.admin(method, path, body));
  const [first, second] = replicas.gateways;
  const runs: LoadRun[] = [];
  const processes = () => ({
    'gateway A': replicas.gateways[0]?.pid,
    'gateway B': replicas.gateways[1]?.pid,
    'control plane A': replicas.controlPlanes[0]?.pid,
    'control plane B': replicas.controlPlanes[1]?.pid,
  });
  const reading = () => cpuReading(processes(), { database: 'postgres', redis: 'redis-server' });

  /** One run of the load for SECONDS: its reads and writes per second. */
  const measure = async (label: string, cpu: { calls: number; parts: CpuParts }) => {
    const run = startLoad({ url: replicas.gatewayBalancer.url, ledger, ...LOAD, label });
    runs.push(run);
    // The first second warms connections and caches up; the rest is measured.
    await sleep(1000);
    const from = performance.now();
    const before = reading();
    await sleep(SECONDS * 1000);
    const { reads, writes } = run.answeredSince(from);
    const seconds = (performance.now() - from) / 1000;
    addCpu(cpu.parts, before, reading());
    cpu.calls += reads + writes;
    await run.stop();
    const failed = run.attempts.filter((a) => !a.ok);
    if (failed.length > 0) throw new Error(`${label}: ${failed.length} calls failed (${failed[0]!.problem})`);
    return { reads: reads / seconds, writes: writes / seconds };
  };

  const settings = {
    'one gateway': [first!.port],
    'two gateways': [first!.port, second!.port],
  };
  const rates: Record<string, { reads: number; writes: number }[]> = {
    'one gateway': [],
    'two gateways': [],
  };
  const cpu: Record<string, { calls: number; parts: CpuParts }> = {
    'one gateway': { calls: 0, parts: {} },
    'two gateways': { calls: 0, parts: {} },
  };
  // A run first, not measured: the control planes' query workers, caches and JIT warm up.
  await measure('warm-up', { calls: 0, parts: {} });
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, ports] of Object.entries(settings)) {
      replicas.gatewayBalancer.setBackends(ports);
      rates[name]!.push(await measure(`${name === 'one gateway' ? 'one' : 'two'}-${round}`, cpu[name]!));
    }
  }
  replicas.gatewayBalancer.setBackends([first!.port, second!.port]);

  console.log(
    `scale-out: ${LOAD.readers} readers (query) and ${LOAD.writers} writers (keyed create, one table) through a ` +
      `balancer in front of the gateways; two control planes behind a balancer; PostgreSQL, Redis`,
  );
  const total = (rate: { reads: number; writes: number }) => rate.reads + rate.writes;
  for (const name of Object.keys(settings)) {
    const runsOf = rates[name]!;
    const all = runsOf.map((x) => total(x).toFixed(0)).join(', ');
    console.log(
      `  ${name.padEnd(13)} ${median(runsOf.map(total)).toFixed(0).padStart(6)} calls/s: ` +
        `reads ${median(runsOf.map((x) => x.reads)).toFixed(0)}/s, writes ${median(runsOf.map((x) => x.writes)).toFixed(0)}/s  (runs: ${all})`,
    );
  }
  const ratio = median(rates['two gateways']!.map(total)) / median(rates['one gateway']!.map(total));
  console.log(`  two gateways / one: ${ratio.toFixed(2)}x`);
  for (const name of Object.keys(settings)) {
    const { calls, parts } = cpu[name]!;
    const spent = Object.entries(parts)
      .filter(([, seconds]) => seconds > 0)
      .map(([part, seconds]) => `${part} ${((seconds * 1e6) / calls).toFixed(0)}`);
    console.log(`  ${name.padEnd(13)} CPU µs per call: ${spent.join(', ')}`);
  }

  // The crash drill: what the load's callers see when a replica dies and comes back.
  const executions = (outcome: string) =>
    Promise.all(
      replicas.controlPlanes.map((cp) =>
        // A replica that does not answer (none should: both run when these are read) reads NaN.
        readMetrics(cp.url).then(
          (metrics) => metrics.total('controlplane_tool_execution_seconds_count', [`outcome="${outcome}"`]),
          (error: unknown) => {
            console.warn(`  ${cp.url}/metrics not read (${String(error)}): its count reads NaN`);
            return Number.NaN;
          },
        ),
      ),
    );
  const run = startLoad({ url: replicas.gatewayBalancer.url, ledger, ...LOAD, label: 'crash' });
  runs.push(run);
  const [, replayedBefore = 0] = await executions('replayed');
  let crashes: Crash[];
  const split = { before: [0, 0], after: [0, 0], handedBefore: [0, 0], handedAfter: [0, 0] };
  const handed = () => replicas.gateways.map((g) => replicas.gatewayBalancer.handedTo(g.port));
  try {
    crashes = await crashEach(replicas, run, { downMs: DOWN_MS });
    // How the load spreads over the replicas once both are back.
    [split.before, split.handedBefore] = [await executions('ok'), handed()];
    await sleep(SECONDS * 1000);
    [split.after, split.handedAfter] = [await executions('ok'), handed()];
  } finally {
    await run.stop();
  }
  // The restarted control plane counts from its start; the survivor's count is taken before and
  // after (the killed one's is gone: no retry reached it before its kill).
  const [restartedReplays = 0, survivorReplays = 0] = await executions('replayed');
  const replays = restartedReplays + survivorReplays - replayedBefore;

  console.log(
    `crash drill (the same load; each replica killed with SIGKILL, down at least ${DOWN_MS} ms, started again):`,
  );
  const show = (what: string, d: Disruption, restartMs: number) => {
    const at =
      d.firstMs === undefined
        ? 'none'
        : `${d.failed} (${d.failedReads} reads, ${d.failedWrites} writes), ended +${d.firstMs.toFixed(0)} to +${d.lastMs!.toFixed(0)} ms after the kill`;
    console.log(`  ${what} killed: failed calls ${at}`);
    console.log(
      `    error window ${d.windowMs.toFixed(0)} ms; ${d.answered} calls answered by the survivors while it was down; ` +
        `failures: ${JSON.stringify(d.problems)}; started again in ${restartMs.toFixed(0)} ms`,
    );
  };
  for (const crash of crashes) {
    const until = crash.what === 'control plane' ? crashes[1]!.killedAt : Number.POSITIVE_INFINITY;
    show(crash.what, disruption(run, crash.killedAt, crash.restartedAt), crash.upAt - crash.restartedAt);
    const after = disruption(run, crash.restartedAt, until);
    console.log(`    after its restart: ${after.failed} failed, ${after.answered} answered`);
  }
  const share = (after: number[], before: number[]) => {
    const delta = after.map((n, i) => n - before[i]!);
    const sum = delta.reduce((a, b) => a + b, 0);
    return delta.map((n) => `${((100 * n) / Math.max(1, sum)).toFixed(0)}%`).join(' / ');
  };
  console.log(
    `  over ${SECONDS} s after both restarts: tool calls run by control plane A (restarted) / B: ` +
      `${share(split.after, split.before)}; load connections to gateway A (restarted) / B: ` +
      `${share(split.handedAfter, split.handedBefore)}`,
  );
  console.log(
    `  writes sent again after a failure: ${run.retriedWrites()}; of those, answered from the idempotency record ` +
      `(applied before the failure): ${replays}`,
  );

  const table = await replicas.admin('GET', `/api/v2/tables/${ledger.tableId}`, undefined, 1);
  const check = checkLedger(table.data.entries, runs);
  const exact =
    check.missing.length === 0 &&
    check.duplicated.length === 0 &&
    check.foreign.length === 0 &&
    check.stored === check.acknowledged;
  console.log(
    `exactly once: ${exact ? 'yes' : 'NO'} — ${check.acknowledged} writes acknowledged, ${check.stored} entries stored, ` +
      `${check.missing.length} missing, ${check.duplicated.length} duplicated, ${check.foreign.length} never sent, ` +
      `${check.unacknowledged.length} sent and never acknowledged`,
  );
  if (!exact) process.exitCode = 1;
} finally {
  await replicas.close();
}
