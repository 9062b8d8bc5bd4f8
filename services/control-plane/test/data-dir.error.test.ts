// Pins one owner per embedded data directory (two control planes on one PGlite directory once lost
// acknowledged writes and corrupted indexes): the directory is locked before PGlite opens it; a
// second control plane exits 1 with one line naming the directory and the owner's PID, no stack
// trace, while the first keeps serving every write; the lock holds however the owner touches the
// lock file, is released on close, and in-memory databases take none.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../src/db/data-dir-lock.ts';
import { openDatabase } from '../src/db/database.ts';
import { engine } from './support/app.ts';
import {
  adminCall,
  reapAll,
  runUntilExit,
  startServer,
  tableIds,
  PROCESS_TEST,
} from './support/server-process.ts';

const ADMIN_TOKEN = 'bnd_admin_data-dir-tests-0001';
const serviceDir = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];

async function newDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'bindery-owner-'));
  dirs.push(dir);
  return dir;
}

/** Whether another process can take the lock of `dir` right now (it takes and drops it at once). */
function lockedForOthers(dir: string): boolean {
  const probe =
    "const fs = require('node:fs'); const { tryLock } = require('fs-native-extensions');" +
    `const fd = fs.openSync(${JSON.stringify(join(dir, LOCK_FILE))}, fs.constants.O_RDWR);` +
    "process.stdout.write(tryLock(fd) ? 'free' : 'locked');";
  return execFileSync(process.execPath, ['-e', probe], { cwd: serviceDir }).toString() === 'locked';
}

let env: Record<string, string>;

afterAll(async () => {
  await reapAll();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

// One engine suffices: this is about the embedded database's directory, not SQL.
describe.runIf(engine === 'pglite')('one owner per data directory', PROCESS_TEST, () => {
  beforeAll(async () => {
    env = {
      BINDERY_DATA_DIR: await newDataDir(),
      BINDERY_ADMIN_TOKEN: ADMIN_TOKEN,
      BINDERY_SEED_DEMO: 'false',
      LOG_REQUESTS: 'false',
    };
  });

  it('refuses a second control plane with the directory and the owner PID; the first keeps every write', async () => {
    const first = await startServer(env);
    // The second starts while the first is taking writes, as in the corruption once seen.
    const writes = Array.from({ length: 300 }, (_, i) => i);
    const created: string[] = [];
    const burst = (async () => {
      for (let i = 0; i < writes.length; i += 10) {
        const batch = await Promise.all(
          writes
            .slice(i, i + 10)
            .map((n) =>
              adminCall(first.url, ADMIN_TOKEN, 'POST', '/api/v2/tables', { name: `t${n}`, data: { n } }),
            ),
        );
        for (const res of batch) {
          expect(res.status).toBe(201);
          created.push(res.body.id as string);
        }
      }
    })();
    const second = await runUntilExit(env);
    await burst;

    expect(second.code).toBe(1);
    const lines = second.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^bindery control plane: the data directory /);
    expect(lines[0]).toContain(` ${env.BINDERY_DATA_DIR} `);
    expect(lines[0]).toContain(`(PID ${first.pid}, since `);
    expect(lines[0]).toContain('DATABASE_URL');
    expect(second.stderr).not.toMatch(/\n\s+at /);
    expect(second.stdout).not.toContain('Server listening');

    // The first still serves, and after a restart every acknowledged write is there.
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    expect(created).toHaveLength(300);
    expect(await first.stop()).toBe(0);
    const restarted = await startServer(env);
    expect((await tableIds(restarted.url, ADMIN_TOKEN)).sort()).toEqual([...created].sort());
    const owner = JSON.parse(readFileSync(join(env.BINDERY_DATA_DIR!, LOCK_FILE), 'utf8'));
    expect(owner).toMatchObject({ pid: restarted.pid, hostname: expect.any(String) });
    expect(Date.parse(owner.started_at)).not.toBeNaN();
    expect(await restarted.stop()).toBe(0);
  }, 180_000);

  it('refuses a second open in the same process too, and frees the directory on close', async () => {
    const dataDir = await newDataDir();
    const database = await openDatabase({ kind: 'pglite', dataDir });
    let refused: unknown;
    try {
      await openDatabase({ kind: 'pglite', dataDir });
    } catch (error) {
      refused = error;
    } finally {
      await database.close();
    }
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as Error).message).toContain(`the data directory ${dataDir} is in use`);
    expect((refused as Error).message).toContain(`PID ${process.pid},`);
    expect(lockedForOthers(dataDir)).toBe(false);
    const again = await openDatabase({ kind: 'pglite', dataDir });
    await again.close();
  }, 60_000);

  it('keeps the lock when the owner opens and closes the lock file elsewhere', async () => {
    const dataDir = await newDataDir();
    const lock = await lockDataDir(dataDir);
    try {
      // Closing any descriptor of the file drops a classic POSIX fcntl lock; this one must hold.
      closeSync(openSync(lock.path, 'r'));
      readFileSync(lock.path);
      expect(lockedForOthers(dataDir)).toBe(true);
    } finally {
      lock.release();
    }
    expect(lockedForOthers(dataDir)).toBe(false);
  });

  it('takes no lock for an in-memory database', async () => {
    const a = await openDatabase({ kind: 'pglite', dataDir: undefined });
    const b = await openDatabase({ kind: 'pglite', dataDir: undefined });
    await a.close();
    await b.close();
  }, 60_000);
});
