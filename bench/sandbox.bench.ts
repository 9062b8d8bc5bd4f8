/**
 * Custom tool sandbox benchmark (issue: tool kinds, custom JavaScript tools).
 *   pnpm --filter @bindery/bench bench:sandbox
 * Prints p50/p99 per call of a trivial tool (`export default (args) => args.x + 1`):
 * 1. the same function called directly in this process (the floor);
 * 2. the query pool's cheap path for comparison: a trivial `query` evaluated in-process;
 * 3. QuickJS in this thread: a fresh runtime and context, the prelude, the module, the call;
 * 4. through the sandbox (a worker thread of its pool), concurrency 1;
 * 5. the same with one host call answered on this event loop (ctx.context.read);
 * then calls per second through the sandbox at concurrency 8.
 * Rounds of 1-5 take turns call by call, so drift on a shared machine hits all alike.
 * Environment: BENCH_CALLS (calls per path, default 2000), BENCH_WARMUP (default 300).
 */
import { executeRead } from '@bindery/context-ops';
import { MessageChannel } from 'node:worker_threads';
import { quickjsEngine } from '../services/control-plane/src/kinds/custom/sandbox/engine.ts';
import {
  CustomToolSandbox,
  DEFAULT_SANDBOX_LIMITS,
} from '../services/control-plane/src/kinds/custom/sandbox/index.ts';
import { runInVm } from '../services/control-plane/src/kinds/custom/sandbox/tool-vm.ts';
import { ms, summarize } from './support/stats.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 2_000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 300);
const MEMORY_MB = 32;
const CODE = 'export default (args) => args.x + 1';
const WITH_HOST = 'export default async (args, ctx) => (await ctx.context.read("/n")) + args.x';

const sandbox = new CustomToolSandbox({ threads: 2, queue: 64, perTenant: 64, memoryMb: MEMORY_MB });
const engine = await quickjsEngine(MEMORY_MB * 1024 * 1024);
const direct = (args: { x: number }) => args.x + 1;
const context = { n: 41 };

function expect(value: unknown, wanted: unknown, path: string): void {
  if (value !== wanted)
    throw new Error(`${path} answered ${JSON.stringify(value)}, not ${JSON.stringify(wanted)}`);
}

const paths: Record<string, (i: number) => Promise<void> | void> = {
  'direct call (this process)': (i) => expect(direct({ x: i }), i + 1, 'direct'),
  'query, in-process (cheap path)': () =>
    expect(executeRead('query', context, { query: 'n' }, {}).result, 41, 'query'),
  'QuickJS in this thread': async (i) => {
    const { outcome } = await runInVm(
      engine,
      {
        mode: 'run',
        code: CODE,
        argsJson: JSON.stringify({ x: i }),
        limits: DEFAULT_SANDBOX_LIMITS,
        functions: [],
        secrets: {},
        startedAfter: new Int32Array(new SharedArrayBuffer(4)),
        dispatchedAt: 0,
      },
      performance.now() + 1_000,
      MEMORY_MB * 1024 * 1024,
    );
    expect(outcome.ok === true && outcome.value, i + 1, 'in-thread');
  },
  'sandbox (worker thread)': async (i) => {
    const outcome = await sandbox.runCustomTool({ code: CODE, args: { x: i }, tenant: 'bench' });
    expect(outcome.ok === true && outcome.value, i + 1, 'sandbox');
  },
  'sandbox + one host call': async (i) => {
    const outcome = await sandbox.runCustomTool(
      { code: WITH_HOST, args: { x: i }, tenant: 'bench' },
      { readContext: async () => context.n },
    );
    expect(outcome.ok === true && outcome.value, i + 41, 'sandbox with host');
  },
};

// A port pair per call costs something on its own; measured once so the host-call figure reads.
const channelSamples: number[] = [];
for (let i = 0; i < 1_000; i++) {
  const started = performance.now();
  const channel = new MessageChannel();
  channel.port1.close();
  channel.port2.close();
  channelSamples.push(performance.now() - started);
}

console.log(
  `custom tool sandbox benchmark: ${CALLS} calls per path after ${WARMUP} warm-up rounds, 2 threads`,
);
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((name) => [name, []]));
for (let round = 0; round < WARMUP + CALLS; round++) {
  for (const [name, path] of Object.entries(paths)) {
    const started = performance.now();
    await path(round);
    if (round >= WARMUP) samples[name]!.push(performance.now() - started);
  }
}
for (const [name, list] of Object.entries(samples)) {
  const { n, p50, p99 } = summarize(list);
  console.log(`  ${name.padEnd(32)} n=${n}  p50 ${ms(p50).padStart(10)}  p99 ${ms(p99).padStart(10)}`);
}
const sandboxP50 = summarize(samples['sandbox (worker thread)']!).p50;
const queryP50 = summarize(samples['query, in-process (cheap path)']!).p50;
console.log(`  sandbox overhead over the in-process query (p50 difference): ${ms(sandboxP50 - queryP50)}`);
console.log(`  a MessageChannel made and closed: p50 ${ms(summarize(channelSamples).p50)}`);

const concurrency = 8;
const total = Math.max(CALLS, 1_000);
let next = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      const outcome = await sandbox.runCustomTool({
        code: CODE,
        args: { x: i },
        tenant: `t${i % concurrency}`,
      });
      expect(outcome.ok === true && outcome.value, i + 1, 'concurrent');
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
console.log(
  `  sandbox at concurrency ${concurrency}: ${(total / seconds).toFixed(0)} calls/s (${total} calls)`,
);
await sandbox.close();
