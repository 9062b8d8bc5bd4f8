/**
 * Control planes as real processes (`node --import tsx src/server.ts`) for tests about the process
 * itself: start-up refusals, restarts, crashes. Every process started here is reaped by `reapAll()`
 * (call it in afterAll), also when a test failed halfway.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { engine } from './app.ts';
import { migratedDataDir } from './pglite.ts';
import { createDatabase, TEMPLATE_DB } from './postgres.ts';

/**
 * Options for suites of process tests: each starts control planes (a few seconds each, several
 * times that on a loaded machine), so they get more than the default test timeout.
 */
export const PROCESS_TEST = { timeout: 120_000 } as const;

const serviceDir = fileURLToPath(new URL('../..', import.meta.url));
/** Each process still running, with a promise of its exit code (once its output is read). */
const running = new Map<ChildProcessWithoutNullStreams, Promise<number | null>>();

export interface ServerProcess {
  url: string;
  pid: number;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then the exit code once it is gone. */
  stop(): Promise<number | null>;
  /** SIGKILL: no shutdown at all, as in a crash. Resolves once it is gone. */
  kill(): Promise<void>;
}

function spawnServer(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: serviceDir,
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
  });
  // 'close', not 'exit': by then everything it printed has been read.
  const closed = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  running.set(child, closed);
  return { child, closed };
}

/** Starts a control plane and resolves once it listens; rejects with its output if it exits first. */
export function startServer(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  const { child, closed } = spawnServer(env);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({
          url: match[1],
          pid: child.pid!,
          output: () => output,
          stop: () => {
            child.kill('SIGTERM');
            return closed;
          },
          kill: async () => {
            child.kill('SIGKILL');
            await closed;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
}

/** Starts a control plane expected to refuse: resolves with its exit code and output once it exits. */
export function runUntilExit(
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { child, closed } = spawnServer(env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after ${timeoutMs} ms:\n${stdout}${stderr}`));
    }, timeoutMs);
    void closed.then((code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Kills every process started here that is still running, and waits until each is gone. */
export async function reapAll(): Promise<void> {
  await Promise.all(
    [...running].map(([child, closed]) => {
      child.kill('SIGKILL');
      return closed;
    }),
  );
}

/** An admin API call on a server process. */
export async function adminCall(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: { [key: string]: unknown } }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** The ids of every table the token's user has, through the paged admin API. */
export async function tableIds(url: string, token: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor ? `&cursor=${cursor}` : '';
    const page = await adminCall(url, token, 'GET', `/api/v2/tables?limit=200${query}`);
    if (page.status !== 200) throw new Error(`listing tables: ${page.status} ${JSON.stringify(page.body)}`);
    ids.push(...(page.body.items as { id: string }[]).map((t) => t.id));
    cursor = page.body.next_cursor as string | null;
  } while (cursor);
  return ids;
}

/**
 * A fresh database of the suite's engine for server processes, cloned from the run's migrated
 * template (a PostgreSQL database, or a copy of a PGlite data directory): the environment that
 * points a control plane at it (DATABASE_URL or BINDERY_DATA_DIR), and how to drop it afterwards.
 */
export async function processDatabase(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (engine === 'postgres') {
    const db = await createDatabase(TEMPLATE_DB);
    return { env: { DATABASE_URL: db.url }, drop: db.drop };
  }
  const dir = await migratedDataDir();
  return { env: { BINDERY_DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
}
