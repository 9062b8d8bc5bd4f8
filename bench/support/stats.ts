/** Latency percentiles and throughput, printed as plain aligned rows. */
import { readFileSync } from 'node:fs';

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return Number.NaN;
  const index = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[index] ?? Number.NaN;
}

export interface Summary {
  n: number;
  p50: number;
  p99: number;
}

export function summarize(samplesMs: number[]): Summary {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** Runs `fn` `count` times, one after another, and answers each run's milliseconds. */
export async function timeSequential(count: number, fn: (i: number) => Promise<void>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await fn(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

/** Runs `workers` loops of `perWorker` calls at once: calls per second and per-call latencies. */
export async function throughput(
  workers: number,
  perWorker: number,
  call: (w: number, i: number) => Promise<void>,
): Promise<Summary & { perSecond: number }> {
  const samples: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; i < perWorker; i++) {
        const s = performance.now();
        await call(w, i);
        samples.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { perSecond: samples.length / seconds, ...summarize(samples) };
}

export const ms = (value: number) => `${value.toFixed(2)} ms`;

/**
 * CPU time (user + system) a process has used so far, in milliseconds, from `/proc` (Linux);
 * NaN elsewhere. Unlike latency, it hardly depends on what else the machine is doing.
 */
export function cpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticksPerMs = 100 / 1000; // USER_HZ is 100 on Linux
    return (Number(fields[11]) + Number(fields[12])) / ticksPerMs;
  } catch {
    return Number.NaN;
  }
}

/**
 * Peak resident memory of a process so far (VmHWM, worker threads included), in MiB, from `/proc`
 * (Linux); NaN elsewhere.
 */
export function peakRssMb(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? Number.NaN : Number(kb) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** Current resident memory of a process (VmRSS), in MiB; NaN when unknown. */
export function rssMb(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? Number.NaN : Number(kb) / 1024;
  } catch {
    return Number.NaN;
  }
}
