// Pins the in-process migration runner: it applies Prisma-layout migrations once, records them in
// _prisma_migrations exactly as Prisma would (SHA-256 checksums), is a no-op the second time, and
// refuses to start on an edited or unknown migration. Runs on PostgreSQL and on PGlite.
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, migrate, readMigrations, type SqlSession } from '../src/db/migrate.ts';
import { engine } from './support/app.ts';
import { emptyPGlite } from './support/pglite.ts';
import { createDatabase } from './support/postgres.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function emptySession(): Promise<SqlSession> {
  if (engine === 'pglite') {
    const lite = await emptyPGlite();
    cleanups.push(() => lite.close());
    return {
      exec: async (sql) => void (await lite.exec(sql)),
      query: async <T>(sql: string, params?: unknown[]) => (await lite.query<T>(sql, params)).rows,
    };
  }
  const db = await createDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  cleanups.push(async () => {
    await client.end();
    await db.drop();
  });
  return {
    exec: async (sql) => void (await client.query(sql)),
    query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
  };
}

async function copyMigrations(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'bindery-migrations-'));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('migration runner', () => {
  it('applies every migration once and records Prisma-compatible checksums', async () => {
    const session = await emptySession();
    const all = await readMigrations();
    expect(all.length).toBeGreaterThan(0);
    expect(await migrate(session)).toEqual(all.map((m) => m.name));
    expect(await migrate(session)).toEqual([]);

    const rows = await session.query<{ migration_name: string; checksum: string; finished_at: unknown }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name',
    );
    for (const [i, m] of all.entries()) {
      const file = await readFile(join(MIGRATIONS_DIR, m.name, 'migration.sql'));
      expect(rows[i]?.migration_name).toBe(m.name);
      expect(rows[i]?.checksum).toBe(createHash('sha256').update(file).digest('hex'));
      expect(rows[i]?.finished_at).not.toBeNull();
    }
    const tables = await session.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'aei_binding'`,
    );
    expect(tables[0]?.n).toBe(1);
  });

  it('applies a new migration added later, and only that one', async () => {
    const session = await emptySession();
    const dir = await copyMigrations();
    await migrate(session, dir);
    await mkdir(join(dir, '99990101000000_extra'));
    await writeFile(join(dir, '99990101000000_extra', 'migration.sql'), 'CREATE TABLE "extra" (id int);');
    expect(await migrate(session, dir)).toEqual(['99990101000000_extra']);
  });

  it('refuses to run when an applied migration was edited', async () => {
    const session = await emptySession();
    const dir = await copyMigrations();
    await migrate(session, dir);
    const [first] = await readMigrations(dir);
    await writeFile(join(dir, first!.name, 'migration.sql'), `${first!.sql}\n-- edited`);
    await expect(migrate(session, dir)).rejects.toThrow(/was changed after it was applied/);
  });

  it('rolls a failing migration back and names it', async () => {
    const session = await emptySession();
    const dir = await copyMigrations();
    await mkdir(join(dir, '99990101000000_broken'));
    await writeFile(
      join(dir, '99990101000000_broken', 'migration.sql'),
      'CREATE TABLE "half" (id int); SELECT nope;',
    );
    await expect(migrate(session, dir)).rejects.toThrow(/99990101000000_broken failed/);
    const half = await session.query(`SELECT 1 FROM information_schema.tables WHERE table_name = 'half'`);
    expect(half).toEqual([]);
  });
});
