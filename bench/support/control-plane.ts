/**
 * Runs the real control plane as a child process on a fresh PostgreSQL database (or PGlite), for
 * benchmarks that measure it from the outside, over HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ADMIN_TOKEN = 'bnd_admin_benchmark-root-token';
export const INTERNAL_TOKEN = 'benchmark-internal-token';
const SERVICE_DIR = fileURLToPath(new URL('../../services/control-plane', import.meta.url));
const SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

export interface RunningProcess {
  url: string;
  stop(): Promise<void>;
}

/** Spawns `tsx <entry>` in `dir` and resolves once it logs that it listens. */
export async function spawnService(
  dir: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
  entry = 'src/server.ts',
): Promise<{ url: string; child: ChildProcess }> {
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', entry], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', LOG_REQUESTS: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${dir} did not start:\n${output}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${dir} exited with ${code}:\n${output}`)));
  });
  return { url, child };
}

/**
 * Node flags that write a CPU profile of a service to `BENCH_PROFILE_DIR` when it is set (a folder per
 * service; open the `.cpuprofile` in Chrome DevTools); none otherwise.
 */
export function profileArgs(service: string): string[] {
  const dir = process.env.BENCH_PROFILE_DIR;
  // One folder per service: the main thread's profile is the largest file in it.
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, service)}`] : [];
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export interface RunningControlPlane {
  url: string;
  database: string;
  /** The process's id, for its CPU time and memory (/proc). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/** The PostgreSQL URL of a benchmark database (for set-ups too large to make through the API). */
export function databaseUrl(database: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A new, empty database: a PostgreSQL database on the benchmark's server, or a PGlite data
 * directory; `env` points a control plane at it (DATABASE_URL or BINDERY_DATA_DIR), `drop`
 * removes it.
 */
export async function newDatabase(
  engine: 'postgres' | 'pglite',
): Promise<{ name: string; env: Record<string, string>; drop(): Promise<void> }> {
  if (engine === 'postgres') {
    const name = `bindery_bench_${randomBytes(4).toString('hex')}`;
    await admin((c) => c.query(`CREATE DATABASE "${name}"`));
    return {
      name,
      env: { DATABASE_URL: databaseUrl(name) },
      drop: () =>
        admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'bindery-bench-'));
  return { name: dir, env: { BINDERY_DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Starts `src/server.ts` on a new database (`pglite` for the embedded one) and waits until it listens;
 * `settings` adds to (or overrides) its environment.
 */
export async function startControlPlane(
  engine: 'postgres' | 'pglite',
  settings: Record<string, string> = {},
): Promise<RunningControlPlane> {
  const env: Record<string, string> = {
    PORT: '0',
    BINDERY_ADMIN_TOKEN: ADMIN_TOKEN,
    INTERNAL_TOKEN,
    BODY_LIMIT_BYTES: String(64 * 1024 * 1024),
    BINDERY_SEED_DEMO: 'false',
    RESULT_LIMIT_BYTES: String(32 * 1024 * 1024),
    // An upstream's message may carry any answer the control plane may pass on (the settings
    // refuse a message cap under the result limit).
    UPSTREAM_MESSAGE_MAX_BYTES: String(32 * 1024 * 1024),
    UPSTREAM_CALL_MAX_BYTES: String(64 * 1024 * 1024),
    ...settings,
  };
  const { name: database, env: where, drop: cleanup } = await newDatabase(engine);
  Object.assign(env, where);
  const { url, child } = await spawnService(SERVICE_DIR, env, profileArgs('control-plane'));
  return {
    url,
    database,
    pid: child.pid,
    async stop() {
      await stopChild(child);
      await cleanup();
    },
  };
}

const GATEWAY_DIR = fileURLToPath(new URL('../../services/gateway', import.meta.url));

/**
 * A gateway process in front of the control plane at `controlPlaneUrl`, on a free port, without a
 * rate limit (benchmarks send far more than one client would), writing a CPU profile with
 * BENCH_PROFILE_DIR; `env` adds or overrides settings.
 */
export function startGateway(
  controlPlaneUrl: string,
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  return spawnService(
    GATEWAY_DIR,
    {
      GATEWAY_PORT: '0',
      CONTROL_PLANE_URL: controlPlaneUrl,
      INTERNAL_TOKEN,
      RATE_LIMIT_PER_SECOND: '0',
      ...env,
    },
    profileArgs('gateway'),
  );
}
