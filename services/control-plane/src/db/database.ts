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
  { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string | undefined };

export interface Database {
  prisma: PrismaClient;
  kind: DatabaseTarget['kind'];
  /** Migrations applied by this open (empty when the database was up to date). */
  migrated: string[];
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
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: target.url }) });
    return { prisma, kind: 'postgres', migrated, close: () => prisma.$disconnect() };
  }
  let lock: { release(): void } | undefined;
  if (target.dataDir !== undefined) {
    await mkdir(target.dataDir, { recursive: true });
    lock = await lockDataDir(target.dataDir);
  }
  try {
    const lite = new PGlite(target.dataDir);
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
