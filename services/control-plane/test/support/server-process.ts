/**
 * Control planes as real processes (`node dist/server.js`, the build every suite makes first) for
 * tests about the process itself: start-up refusals, restarts, crashes. Every process started here
 * is reaped by `reapAll()` (call it in afterAll), also when a test failed halfway.
 */
import {
  CONTROL_PLANE_DIR,
  adminCall as call,
  freshDatabase,
  runToExit,
  startService,
  type ServiceProcess,
  type TestDatabase,
} from '@bindery/test-support';
import { inject } from 'vitest';
import { engine } from './app.ts';
import { TEMPLATE_DB } from './postgres.ts';

export { reapAll } from '@bindery/test-support';

/**
 * Options for suites of process tests: each starts control planes (a few seconds each, several
 * times that on a loaded machine), so they get more than the default test timeout.
 */
export const PROCESS_TEST = { timeout: 120_000 } as const;

/** A control plane process: where it listens, its pid and output, how to stop or kill it. */
export type ServerProcess = Pick<ServiceProcess, 'url' | 'pid' | 'output' | 'stop' | 'kill'>;

/**
 * Starts a control plane with exactly `env` (besides PATH, LOG_LEVEL=info and PORT=0) and resolves
 * once it listens; rejects with its output if it exits first.
 */
export function startServer(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  return startService({ dir: CONTROL_PLANE_DIR, env: { PORT: '0', ...env }, timeoutMs });
}

/** Starts a control plane expected to refuse: resolves with its exit code and output once it exits. */
export function runUntilExit(
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runToExit({ dir: CONTROL_PLANE_DIR, env: { PORT: '0', ...env }, timeoutMs });
}

/** An admin API call on a server process (an empty answer's body is `{}`). */
export async function adminCall(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: { [key: string]: unknown } }> {
  const answer = await call(url, token, method, path, body);
  return { status: answer.status, body: answer.body ?? {} };
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
export function processDatabase(): Promise<TestDatabase> {
  return freshDatabase(
    engine === 'postgres'
      ? { engine, purpose: 't', template: TEMPLATE_DB }
      : { engine, purpose: 'process', dataDirTemplate: inject('pgliteTemplates').migratedDataDir },
  );
}
