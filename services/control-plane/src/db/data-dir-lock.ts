/**
 * One owner per embedded data directory. PGlite is a single-process database: two processes on
 * one directory silently lose writes and corrupt indexes. Before PGlite opens a directory, the
 * control plane takes an exclusive OS lock on `bindery.lock` inside it and keeps it until it
 * closes the database; a second process is refused with the owner's PID.
 *
 * Why these locks: `fs-native-extensions` locks with `fcntl(F_OFD_SETLK)` on Linux and `flock` on
 * macOS. Both belong to the open file description, not to the process: closing some other
 * descriptor of the same file (which drops a classic POSIX `fcntl` lock) leaves it held, and a
 * second descriptor in the same process is refused like another process. The kernel drops the lock
 * when the owner dies however it dies (SIGKILL, OOM, power loss ends everything anyway), so a stale
 * lock file is never a problem: the next start simply takes the lock and rewrites the file. The
 * descriptor is opened close-on-exec (Node's default), so a child process never inherits it and
 * cannot keep the lock alive after its parent died.
 *
 * The file's content (`{pid, started_at, hostname}`) is only for the refusal message; the lock
 * itself is the truth.
 */
import { closeSync, constants, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tryLock } from 'fs-native-extensions';

export const LOCK_FILE = 'bindery.lock';

/** What the owner wrote into the lock file. */
export interface LockOwner {
  pid: number;
  started_at: string;
  hostname: string;
}

/** Another process owns the data directory: the message names the directory and the owner. */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly owner: LockOwner | undefined,
  ) {
    const who = owner
      ? `PID ${owner.pid}${owner.hostname === hostname() ? '' : ` on host ${owner.hostname}`}, since ${owner.started_at}`
      : 'a process that has not written its PID yet';
    super(
      `the data directory ${dataDir} is in use by another control plane (${who}); ` +
        'stop that one first, or give this one its own BINDERY_DATA_DIR. ' +
        'The embedded database serves one process: run several control planes on PostgreSQL (DATABASE_URL)',
    );
  }
}

/** The held lock; `release()` ends it (idempotent). */
export interface DataDirLock {
  readonly path: string;
  release(): void;
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockOwner>;
    if (typeof owner.pid === 'number' && typeof owner.started_at === 'string') {
      return { pid: owner.pid, started_at: owner.started_at, hostname: String(owner.hostname ?? '') };
    }
  } catch {
    // Empty or half-written: the owner took the lock a moment ago and is writing it now.
  }
  return undefined;
}

/**
 * Takes the exclusive lock of `dataDir` (which must exist) and records this process in it, or
 * throws DataDirLockedError naming the owner. Never waits for the lock: a second control plane
 * must fail at once, not start late over a directory someone else just used.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const path = join(dataDir, LOCK_FILE);
  // Read-write without O_APPEND (the content is rewritten at offset 0); created if missing.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
  let locked: boolean;
  try {
    locked = tryLock(fd);
  } catch (error) {
    // Some systems report a held lock as EACCES rather than EAGAIN (which the library turns into false).
    if ((error as NodeJS.ErrnoException).code !== 'EACCES') {
      closeSync(fd);
      throw error;
    }
    locked = false;
  }
  if (!locked) {
    closeSync(fd);
    // The owner writes its PID right after locking; give a just-started owner a moment.
    let owner = readOwner(path);
    for (let attempt = 0; owner === undefined && attempt < 5; attempt++) {
      await sleep(20);
      owner = readOwner(path);
    }
    throw new DataDirLockedError(dataDir, owner);
  }
  const owner: LockOwner = { pid: process.pid, started_at: new Date().toISOString(), hostname: hostname() };
  try {
    ftruncateSync(fd);
    writeSync(fd, `${JSON.stringify(owner)}\n`, 0);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      // Closing the only descriptor of this open file description ends the lock.
      closeSync(fd);
    },
  };
}
