// Pins background folds (context/table-folds.ts) against writes that land while a fold runs: once
// the fold ends, the patches written meanwhile are folded too, without waiting for another write
// (an idle table would otherwise keep them unfolded, and every read would replay them). PostgreSQL
// only: the test holds the fold at a row lock another connection takes, which the embedded
// database (one connection) cannot do; writes do not wait for that lock.
import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';
import { until } from './support/upstream-servers.ts';

const THRESHOLD = 5;

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp({ foldPolicy: { patches: THRESHOLD, bytesPerPatch: Number.MAX_SAFE_INTEGER } });
  f = await buildFixture(t, { items: [] }, { add: { json_path: '/items', operation_type: 'create' } });
});
afterAll(() => t.close());

async function snapshotVersion(): Promise<number> {
  const snapshot = await t.database.prisma.tableSnapshot.findUniqueOrThrow({ where: { tableId: f.tableId } });
  return snapshot.version;
}

it('patches written while a fold runs are folded when it ends, with no write after', async () => {
  const add = async (value: number) => toolAnswer(await execute(t, f, 'add', { value }));
  for (let i = 0; i < THRESHOLD - 1; i += 1) await add(i);
  const start = await snapshotVersion();

  // Another connection locks the patch rows written so far: the fold the next write starts takes
  // the snapshot, then waits at deleting them.
  const locker = new pg.Client({ connectionString: t.databaseUrl });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    const locked = await locker.query('SELECT version FROM table_patch WHERE table_id = $1 FOR SHARE', [
      f.tableId,
    ]);
    expect(locked.rowCount).toBe(THRESHOLD - 1);
    await add(THRESHOLD - 1);
    // The fold waits for the locker: asked outside the locker's transaction, which would see one
    // snapshot of the server's activity.
    const lockerPid = (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    const waiting = await until(
      async () =>
        (
          await t.database.prisma.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE ${lockerPid}::int = ANY(pg_blocking_pids(pid))`
        )[0]!.n,
      (n) => n > 0,
    );
    expect(waiting).toBe(1);
    // More than a threshold of patches while the fold waits; writes do not wait for it.
    for (let i = THRESHOLD; i < 3 * THRESHOLD; i += 1) await add(i);
    expect(await snapshotVersion()).toBe(start);
  } finally {
    await locker.query('COMMIT');
    await locker.end();
  }

  // No write from here on: the fold ends and the next one folds what was written meanwhile.
  const last = (await tableState(t, f)).version;
  expect(await until(snapshotVersion, (version) => version === last)).toBe(last);
  expect(toolAnswer(await execute(t, f, 'add', { value: 'after' })).isError).toBe(false);
  expect((await tableState(t, f)).data).toEqual({
    items: [...Array.from({ length: 3 * THRESHOLD }, (_, i) => i), 'after'],
  });
});
