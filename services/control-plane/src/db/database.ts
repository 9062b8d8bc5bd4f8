/**
 * Opens the database: PostgreSQL when a URL is configured, else embedded PGlite in a data
 * directory (or in memory, for tests). Migrates it, then hands back a Prisma client on it.
 */
import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from '../generated/prisma/client.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { migrate, type SqlSession } from './migrate.ts';

export type DatabaseTarget =
  | { kind: 'postgres'; url: string }
  | {
      kind: 'pglite';
      dataDir: string | undefined;
      /**
       * Starts a new database from this dump of a data directory (PGlite's `dumpDataDir`) instead
       * of an empty one; it is still migrated. Lets tests clone one migrated database.
       */
      loadDataDir?: Blob;
    };

export interface Database {
  prisma: PrismaClient;
  kind: DatabaseTarget['kind'];
  /** Migrations applied by this open (empty when the database was up to date). */
  migrated: string[];
  /** The PostgreSQL connection pool Prisma runs on (for its metrics); undefined on PGlite. */
  pool: pg.Pool | undefined;
  /**
   * Plain statements on the same database, without Prisma: for the few hot statements where
   * Prisma's per-statement work costs more than the database does (the audit trail's INSERT).
   */
  sql: SqlSession;
  close(): Promise<void>;
}

/**
 * Opens, migrates and returns the database; the caller owns `close()`. A PGlite data directory is
 * locked to this process first (DataDirLockedError when another process owns it) and released on
 * `close()`; in-memory PGlite takes no lock.
 */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if (target.kind === 'postgres') {
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    let migrated: string[];
    try {
      migrated = await migrate({
        exec: async (sql) => void (await client.query(sql)),
        query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
      });
    } finally {
      await client.end();
    }
    // Our own pool, handed to the adapter, so its connection counts can be read.
    const pool = new pg.Pool({ connectionString: target.url });
    // An idle connection the server drops (restart, terminated backend) is an 'error' event on the
    // pool, fatal without a listener. The pool discards that connection and opens another when
    // needed, and queries in flight fail on their own; the adapter's own listener (which only
    // traces) is removed on disconnect, while connections may still be closing. Nothing to do here.
    pool.on('error', () => undefined);
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    return {
      prisma,
      kind: 'postgres',
      migrated,
      pool,
      sql: {
        exec: async (sql) => void (await pool.query(sql)),
        query: async <T>(sql: string, params?: unknown[], name?: string) =>
          (
            await (name === undefined
              ? pool.query(sql, params)
              : pool.query({ name, text: sql, values: params }))
          ).rows as T[],
      },
      close: async () => {
        await prisma.$disconnect();
        // The adapter leaves a pool it was given open (its disposeExternalPool is off).
        await pool.end();
      },
    };
  }
  let lock: { release(): void } | undefined;
  if (target.dataDir !== undefined) {
    await mkdir(target.dataDir, { recursive: true });
    lock = await lockDataDir(target.dataDir);
  }
  try {
    const lite = new PGlite({ dataDir: target.dataDir, loadDataDir: target.loadDataDir });
    const session: SqlSession = {
      exec: async (sql) => void (await lite.exec(sql)),
      query: async <T>(sql: string, params?: unknown[]) => (await lite.query<T>(sql, params)).rows,
    };
    const migrated = await migrate(session).catch(async (error: unknown) => {
      await lite.close().catch(() => undefined);
      throw error;
    });
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(lite) });
    return {
      prisma,
      kind: 'pglite',
      migrated,
      pool: undefined,
      // PGlite runs one statement at a time and none inside another's transaction.
      sql: session,
      close: async () => {
        try {
          await prisma.$disconnect();
          await lite.close();
        } finally {
          // Only once PGlite has written everything back and closed.
          lock?.release();
        }
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}
