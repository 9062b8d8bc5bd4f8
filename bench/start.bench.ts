/**
 * How long the control plane takes to start, and the CPU it spends doing it: the built JavaScript
 * (`node dist/server.js`, what `pnpm start` and the images run) against the same sources run
 * through a TypeScript loader (`node --import tsx src/server.ts`), the in-run reference.
 *
 *   pnpm --filter @bindery/bench bench:start      (BENCH_RUNS=3: starts of each, after a first one)
 *
 * Each variant gets its own embedded database (PGlite, in a fresh directory): a first start creates
 * and migrates it (printed apart), the next BENCH_RUNS start on it as a restart does. Time to listen
 * counts from the spawn to the service's "started" message; CPU is user + system time of the
 * process and everything it spawned, read at that moment and again SETTLE_MS later (the worker
 * threads the service warms at start have loaded by then).
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERVICE_DIR = fileURLToPath(new URL('../services/control-plane', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SETTLE_MS = 8_000;
const TICKS_PER_SECOND = 100;

const VARIANTS = [
  { name: 'built (node dist/server.js)', args: ['dist/server.js'] },
  { name: 'sources (node --import tsx src/server.ts)', args: ['--import', 'tsx', 'src/server.ts'] },
];

interface Start {
  listenMs: number;
  cpuAtListenS: number;
  cpuSettledS: number;
  rssMb: number;
}

/** CPU seconds (user + system) of `pid` and its descendants, from /proc. */
function treeCpuSeconds(pid: number): number {
  let ticks = 0;
  const stats = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      try {
        const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // The command name may hold spaces: the fields start after its closing parenthesis.
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
        return [
          { pid: Number(entry), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) },
        ];
      } catch {
        return [];
      }
    });
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const stat of stats) {
      if (!tree.has(stat.pid) && tree.has(stat.ppid)) {
        tree.add(stat.pid);
        grew = true;
      }
    }
  }
  for (const stat of stats) if (tree.has(stat.pid)) ticks += stat.ticks;
  return ticks / TICKS_PER_SECOND;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function startOnce(args: string[], dataDir: string): Promise<Start> {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: SERVICE_DIR,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      BINDERY_DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      INTERNAL_TOKEN: 'bench-internal-token',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      child.on('message', (message: { type?: string }) => {
        if (message.type === 'bindery:started') resolve();
      });
      child.once('exit', (code) => reject(new Error(`the control plane exited with ${code}:\n${stderr}`)));
    });
    const listenMs = performance.now() - started;
    const pid = child.pid!;
    const cpuAtListenS = treeCpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    return { listenMs, cpuAtListenS, cpuSettledS: treeCpuSeconds(pid), rssMb: rssMb(pid) };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;

console.log(`control plane start on embedded PGlite: ${RUNS} restarts of each variant after a first start`);
console.log(
  row([
    'variant',
    'start',
    'to listen (ms)',
    'CPU at listen (s)',
    `CPU ${SETTLE_MS / 1000} s later (s)`,
    'RSS then (MB)',
  ]),
);
console.log(row(['---', '---', '---:', '---:', '---:', '---:']));
for (const variant of VARIANTS) {
  const dataDir = await mkdtemp(join(tmpdir(), 'bindery-start-bench-'));
  try {
    const first = await startOnce(variant.args, dataDir);
    const restarts: Start[] = [];
    for (let run = 0; run < RUNS; run++) restarts.push(await startOnce(variant.args, dataDir));
    const show = (label: string, starts: Start[]) =>
      console.log(
        row([
          variant.name,
          label,
          median(starts.map((s) => s.listenMs)).toFixed(0),
          median(starts.map((s) => s.cpuAtListenS)).toFixed(2),
          median(starts.map((s) => s.cpuSettledS)).toFixed(2),
          median(starts.map((s) => s.rssMb)).toFixed(0),
        ]),
      );
    show('first (creates the database)', [first]);
    show(`restart (median of ${RUNS})`, restarts);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
