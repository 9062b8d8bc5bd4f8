/**
 * The real control plane (and gateway) as child processes for benchmarks that measure them from
 * the outside, over HTTP: @bindery/test-support's processes and databases, with the settings a
 * benchmark needs (large bodies and results, no rate limit) and a CPU profile when asked.
 */
import { join } from 'node:path';
import {
  freshDatabase,
  startControlPlane as startControlPlaneProcess,
  startGateway as startGatewayProcess,
  startService,
  type Engine,
  type ServiceProcess,
  type TestDatabase,
} from '@bindery/test-support';

export { ADMIN_TOKEN, INTERNAL_TOKEN, databaseUrl } from '@bindery/test-support';

/** The services run as production runs them: their build, with plain node (`pnpm bench` builds first). */
const BUILT = 'dist/server.js';

/**
 * Spawns `entry` in `dir` (a service's build, `dist/server.js`, or a stand-in's source, run through
 * tsx) and resolves once it listens.
 */
export function spawnService(
  dir: string,
  env: Record<string, string>,
  nodeArgs: string[],
  entry: string,
): Promise<ServiceProcess> {
  return startService({ dir, entry, nodeArgs, env: { LOG_REQUESTS: 'false', ...env } });
}

/**
 * Node flags that write a CPU profile of a service to `BENCH_PROFILE_DIR` when it is set (a folder per
 * service; open the `.cpuprofile` in Chrome DevTools); none otherwise. With `BENCH_PERF=1` instead,
 * the services write the map of their compiled functions for Linux `perf` (`perf record -g -p PID`),
 * which samples only time spent on a CPU: V8's own profiler samples a thread preempted in a system
 * call as busy there, which on a loaded host made socket writes look several times their cost.
 */
export function profileArgs(service: string): string[] {
  if (process.env.BENCH_PERF === '1') {
    return ['--perf-basic-prof-only-functions', '--interpreted-frames-native-stack'];
  }
  const dir = process.env.BENCH_PROFILE_DIR;
  // One folder per service: the main thread's profile is the largest file in it.
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, service)}`] : [];
}

export interface RunningControlPlane {
  url: string;
  database: string;
  /** The process's id, for its CPU time and memory (/proc). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * A new, empty database: a PostgreSQL database on the benchmark's server, or a PGlite data
 * directory; `env` points a control plane at it (DATABASE_URL or BINDERY_DATA_DIR), `drop`
 * removes it.
 */
export function newDatabase(engine: Engine): Promise<TestDatabase> {
  return freshDatabase({ engine, purpose: 'bench' });
}

/**
 * Starts the control plane's build on a new database (`pglite` for the embedded one) and waits until it listens;
 * `settings` adds to (or overrides) its environment.
 */
export async function startControlPlane(
  engine: Engine,
  settings: Record<string, string> = {},
): Promise<RunningControlPlane> {
  const database = await newDatabase(engine);
  const controlPlane = await startControlPlaneProcess(
    {
      BODY_LIMIT_BYTES: String(64 * 1024 * 1024),
      RESULT_LIMIT_BYTES: String(32 * 1024 * 1024),
      // An upstream's message may carry any answer the control plane may pass on (the settings
      // refuse a message cap under the result limit).
      UPSTREAM_MESSAGE_MAX_BYTES: String(32 * 1024 * 1024),
      UPSTREAM_CALL_MAX_BYTES: String(64 * 1024 * 1024),
      ...settings,
      ...database.env,
    },
    { entry: BUILT, nodeArgs: profileArgs('control-plane') },
  ).catch(async (error: unknown) => {
    await database.drop();
    throw error;
  });
  return {
    url: controlPlane.url,
    database: database.name,
    pid: controlPlane.pid,
    async stop() {
      await controlPlane.stop();
      await database.drop();
    },
  };
}

/**
 * A gateway process in front of the control plane at `controlPlaneUrl`, on a free port, without a
 * rate limit (benchmarks send far more than one client would), writing a CPU profile with
 * BENCH_PROFILE_DIR; `env` adds or overrides settings.
 */
export function startGateway(
  controlPlaneUrl: string,
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  return startGatewayProcess(
    controlPlaneUrl,
    { RATE_LIMIT_PER_SECOND: '0', ...env },
    { entry: BUILT, nodeArgs: profileArgs('gateway') },
  );
}
