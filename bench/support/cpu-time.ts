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

/** CPU seconds of each process whose command name is `name` (postgres: all its backends), by pid. */
function cpuNamed(name: string): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/stat`, 'utf8').includes(`(${name})`)) {
        byPid.set(Number(entry), cpuOf(Number(entry)));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return byPid;
}

/**
 * CPU seconds by part. A named part's processes are read one by one (`part` + NUL + pid), so that
 * a process that ended between two readings (a database backend closing) takes its time out of
 * neither: the time it spent in between is missed, never counted below zero.
 */
export type CpuParts = Record<string, number>;
const PID_SEPARATOR = '\u0000';

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
  for (const [part, name] of Object.entries(named)) {
    parts[part] = 0;
    for (const [pid, seconds] of cpuNamed(name)) parts[`${part}${PID_SEPARATOR}${pid}`] = seconds;
  }
  return parts;
}

/**
 * `after - before`, part by part, added into `total` (a named part's processes summed: one that
 * started in between counts whole, one that ended in between not at all).
 */
export function addCpu(total: CpuParts, before: CpuParts | undefined, after: CpuParts | undefined): void {
  if (!before || !after) return;
  for (const key of Object.keys(after)) {
    const part = key.split(PID_SEPARATOR)[0]!;
    total[part] = (total[part] ?? 0) + after[key]! - (before[key] ?? 0);
  }
}
