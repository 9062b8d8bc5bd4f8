// Pins the takeover of a crashed owner's data directory: a control plane killed with SIGKILL in the
// middle of a burst of writes leaves its lock file behind, but the kernel has dropped the lock, so a
// new control plane starts on that directory at once, records itself as the owner, and has every
// write the first one acknowledged.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../src/db/data-dir-lock.ts';
import { engine } from './support/app.ts';
import { adminCall, reapAll, startServer, tableIds, PROCESS_TEST } from './support/server-process.ts';

const ADMIN_TOKEN = 'bnd_admin_data-dir-crash-0001';
let dataDir: string | undefined;

afterAll(async () => {
  await reapAll();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// One engine suffices: this is about the embedded database's directory, not SQL.
describe.runIf(engine === 'pglite')('a crashed owner', PROCESS_TEST, () => {
  it('leaves nothing that stops the next control plane, and no acknowledged write is lost', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'bindery-crash-'));
    const env = {
      BINDERY_DATA_DIR: dataDir,
      BINDERY_ADMIN_TOKEN: ADMIN_TOKEN,
      BINDERY_SEED_DEMO: 'false',
      LOG_REQUESTS: 'false',
    };
    const owner = await startServer(env);
    const acknowledged: string[] = [];
    let sent = 0;
    let killing: Promise<void> | undefined;
    // Eight writers until the owner dies; it is killed once 150 writes are acknowledged, with
    // others still in flight.
    const writer = async () => {
      while (!killing && sent < 2_000) {
        const n = sent++;
        try {
          const res = await adminCall(owner.url, ADMIN_TOKEN, 'POST', '/api/v2/tables', {
            name: `t${n}`,
            data: { n },
          });
          if (res.status === 201) acknowledged.push(res.body.id as string);
          if (acknowledged.length >= 150) killing ??= owner.kill();
        } catch {
          return; // the connection died with the owner: this write was never acknowledged
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, writer));
    await killing;
    expect(acknowledged.length).toBeGreaterThanOrEqual(150);

    const stale = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8'));
    expect(stale.pid).toBe(owner.pid);

    const next = await startServer(env);
    const owned = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8'));
    expect(owned.pid).toBe(next.pid);
    const ids = new Set(await tableIds(next.url, ADMIN_TOKEN));
    expect(acknowledged.filter((id) => !ids.has(id))).toEqual([]);
    expect(ids.size).toBeLessThanOrEqual(sent);
    expect(await next.stop()).toBe(0);
  }, 180_000);
});
