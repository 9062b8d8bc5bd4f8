/**
 * CPU time of processes, read from /proc (Linux), for benchmarks that split a call's cost by
 * process: the services by pid, PostgreSQL and Redis by process name, the benchmark itself by
 * process.cpuUsage(). Seconds of user plus system time; undefined where /proc is not there.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { cpuMs } from './stats.ts';

/** User plus system CPU seconds of `pid`, or 0 when it is gone. */
function cpuOf(pid: number): number {
  const ms = cpuMs(pid);
  return Number.isNaN(ms) ? 0 : ms / 1000;
}

/** CPU seconds of every process whose command name is `name` (postgres: all its backends). */
function cpuNamed(name: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/stat`, 'utf8').includes(`(${name})`)) total += cpuOf(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

export type CpuParts = Record<string, number>;

/** A reading of each part: `pids` by name, plus `named` processes and this benchmark (`client`). */
export function cpuReading(
  pids: Record<string, number | undefined>,
  named: Record<string, string>,
): CpuParts | undefined {
  try {
    readdirSync('/proc');
  } catch {
    return undefined;
  }
  const usage = process.cpuUsage();
  const parts: CpuParts = { client: (usage.user + usage.system) / 1e6 };
  for (const [part, pid] of Object.entries(pids)) parts[part] = pid === undefined ? 0 : cpuOf(pid);
  for (const [part, name] of Object.entries(named)) parts[part] = cpuNamed(name);
  return parts;
}

/** `after - before`, part by part, added into `total`. */
export function addCpu(total: CpuParts, before: CpuParts | undefined, after: CpuParts | undefined): void {
  if (!before || !after) return;
  for (const part of Object.keys(after))
    total[part] = (total[part] ?? 0) + after[part]! - (before[part] ?? 0);
}
