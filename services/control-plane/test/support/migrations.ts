/**
 * Databases as an older release left them, for tests of the migrations that upgrade them: migrated
 * up to (not including) one migration, filled with rows in the layout of that time, then handed to
 * a test app, which applies the rest on open as an upgrade does.
 */
import { cp, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { DatabaseTarget } from '../../src/db/database.ts';
import { MIGRATIONS_DIR, migrate, type SqlSession } from '../../src/db/migrate.ts';
import { engine } from './app.ts';
import { emptyPGlite } from './pglite.ts';
import { createDatabase } from './postgres.ts';

/** The migrations from `first` on, in order: what opening a database from before `first` applies. */
export async function migrationsFrom(first: string): Promise<string[]> {
  const names = (await readdir(MIGRATIONS_DIR, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return names.filter((name) => name >= first);
}

/**
 * An empty database of the suite's engine migrated up to the migration before `migration`, with
 * `fill` run on it (a PGlite data directory, or a PostgreSQL database); `drop` removes it.
 */
export async function databaseBefore(
  migration: string,
  fill: (session: SqlSession) => Promise<void>,
): Promise<{ target: DatabaseTarget; drop(): Promise<void> }> {
  await stat(join(MIGRATIONS_DIR, migration)); // fails loudly if the migration is renamed
  const migrations = await mkdtemp(join(tmpdir(), 'bindery-migrations-'));
  try {
    await cp(MIGRATIONS_DIR, migrations, { recursive: true });
    for (const later of await migrationsFrom(migration)) {
      await rm(join(migrations, later), { recursive: true });
    }
    if (engine === 'pglite') {
      const dataDir = await mkdtemp(join(tmpdir(), 'bindery-pglite-'));
      const lite = await emptyPGlite(dataDir);
      const session: SqlSession = {
        exec: async (sql) => void (await lite.exec(sql)),
        query: async <T>(sql: string, params?: unknown[]) => (await lite.query<T>(sql, params)).rows,
      };
      await migrate(session, migrations);
      await fill(session);
      await lite.close();
      return {
        target: { kind: 'pglite', dataDir },
        drop: () => rm(dataDir, { recursive: true, force: true }),
      };
    }
    const db = await createDatabase();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const session: SqlSession = {
        exec: async (sql) => void (await client.query(sql)),
        query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
      };
      await migrate(session, migrations);
      await fill(session);
    } finally {
      await client.end();
    }
    return { target: { kind: 'postgres', url: db.url }, drop: db.drop };
  } finally {
    await rm(migrations, { recursive: true, force: true });
  }
}
