/**
 * Applies the migrations in `prisma/migrations` (Prisma's layout) in-process, on PostgreSQL and on
 * embedded PGlite alike, recording them in `_prisma_migrations` the way Prisma does (checksum =
 * SHA-256 of the file), so `prisma migrate deploy` stays usable wherever its engine exists.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The SQL surface a migration needs: one session, multi-statement scripts, parameterised queries. */
export interface SqlSession {
  exec(sql: string): Promise<void>;
  /**
   * `name` makes it a named prepared statement, for one run very often with the same text: the
   * database parses and plans it once per connection (PGlite, in process, ignores it).
   */
  query<T>(sql: string, params?: unknown[], name?: string): Promise<T[]>;
}

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../../prisma/migrations', import.meta.url));

// An arbitrary constant shared by every control plane, so concurrent starts migrate one at a time.
const ADVISORY_LOCK_KEY = 7_304_177_521;

interface Applied {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Reads the migration folders in name order. */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * Applies every pending migration, each in its own transaction; refuses to start when an applied
 * migration was edited afterwards or a previous attempt failed half-way. Returns the names applied.
 */
export async function migrate(session: SqlSession, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await readMigrations(dir);
  await session.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCK_KEY]);
  try {
    await session.exec(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const rows = await session.query<Applied>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"',
    );
    const applied = new Map<string, Applied>();
    for (const row of rows) {
      if (row.rolled_back_at !== null) continue;
      if (row.finished_at === null) {
        throw new MigrationError(
          `migration ${row.migration_name} failed earlier and was not resolved; fix the database, then mark it rolled back`,
        );
      }
      applied.set(row.migration_name, row);
    }
    const known = new Set(migrations.map((m) => m.name));
    for (const name of applied.keys()) {
      if (!known.has(name)) {
        throw new MigrationError(
          `the database has migration ${name}, which this build does not know (is it older?)`,
        );
      }
    }
    const done: string[] = [];
    for (const migration of migrations) {
      const previous = applied.get(migration.name);
      if (previous) {
        if (previous.checksum !== migration.checksum) {
          throw new MigrationError(`migration ${migration.name} was changed after it was applied`);
        }
        continue;
      }
      await session.exec('BEGIN');
      try {
        await session.exec(migration.sql);
        await session.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at, applied_steps_count)
           VALUES ($1, $2, $3, now(), 1)`,
          [randomUUID(), migration.checksum, migration.name],
        );
        await session.exec('COMMIT');
      } catch (error) {
        await session.exec('ROLLBACK');
        throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`);
      }
      done.push(migration.name);
    }
    return done;
  } finally {
    await session.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCK_KEY]);
  }
}
