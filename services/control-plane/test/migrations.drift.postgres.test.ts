// Pins that prisma/migrations and prisma/schema.prisma describe the same database: the SQL Prisma
// renders from schema.prisma and our migrations, each applied to an empty PostgreSQL database,
// must leave identical catalogs (tables, columns, defaults, indexes, constraints).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_DATABASE_URL } from '@bindery/test-support';
import { openDatabase } from '../src/db/database.ts';
import { createDatabase } from './support/postgres.ts';

const schemaSqlScript = fileURLToPath(new URL('../../../prisma/scripts/schema-sql.mjs', import.meta.url));

/**
 * Indexes only the migrations make: partial or expression indexes schema.prisma cannot describe
 * (its comments name them). The user's sign-in name: unique among users with a password.
 */
const MIGRATION_ONLY_INDEXES = new Set(['user_sign_in_name_key']);
/**
 * Constraint triggers only the migrations make (schema.prisma cannot describe triggers): the
 * announcements of a table's version changed or its row deleted (decision 074).
 */
const MIGRATION_ONLY_CONSTRAINTS = new Set(['table_version_changed', 'table_deleted']);

const CATALOG_QUERIES = {
  columns: `SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
              character_maximum_length, datetime_precision
            FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'
            ORDER BY table_name, column_name`,
  indexes: `SELECT tablename, indexname, indexdef FROM pg_indexes
            WHERE schemaname = 'public' AND tablename <> '_prisma_migrations' ORDER BY tablename, indexname`,
  constraints: `SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS def
                FROM pg_constraint WHERE connamespace = 'public'::regnamespace
                AND conrelid::regclass::text <> '_prisma_migrations' ORDER BY 1, 2`,
};

async function catalog(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const out: Record<string, unknown[]> = {};
    for (const [name, sql] of Object.entries(CATALOG_QUERIES)) out[name] = (await client.query(sql)).rows;
    return out;
  } finally {
    await client.end();
  }
}

const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const db of dbs) await db.drop();
});

describe('migrations match schema.prisma', () => {
  let fromSchema: Awaited<ReturnType<typeof catalog>>;
  let fromMigrations: Awaited<ReturnType<typeof catalog>>;

  beforeAll(async () => {
    const rendered = spawnSync(process.execPath, [schemaSqlScript], {
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: ADMIN_DATABASE_URL },
      timeout: 120_000,
    });
    if (rendered.status !== 0) throw new Error(`rendering schema.prisma failed: ${rendered.stderr}`);
    expect(rendered.stdout).toContain('CREATE TABLE "aei_binding"');

    const a = await createDatabase();
    dbs.push(a);
    const client = new pg.Client({ connectionString: a.url });
    await client.connect();
    await client.query(rendered.stdout);
    await client.end();
    fromSchema = await catalog(a.url);

    const b = await createDatabase();
    dbs.push(b);
    const opened = await openDatabase({ kind: 'postgres', url: b.url });
    await opened.close();
    fromMigrations = await catalog(b.url);
  }, 180_000);

  it('has the same columns', () => {
    expect(fromSchema.columns?.length).toBeGreaterThan(50);
    expect(fromMigrations.columns).toEqual(fromSchema.columns);
  });

  it('has the same indexes, and the partial ones Prisma cannot say', () => {
    const partial = (row: unknown) => MIGRATION_ONLY_INDEXES.has((row as { indexname: string }).indexname);
    expect(fromMigrations.indexes?.filter((row) => !partial(row))).toEqual(fromSchema.indexes);
    expect(fromMigrations.indexes?.filter(partial)).toEqual([
      {
        tablename: 'user',
        indexname: 'user_sign_in_name_key',
        indexdef:
          'CREATE UNIQUE INDEX user_sign_in_name_key ON public."user" USING btree (lower(btrim(name))) WHERE (password_hash IS NOT NULL)',
      },
    ]);
  });

  it('has the same constraints, and the triggers Prisma cannot say', () => {
    const trigger = (row: unknown) => MIGRATION_ONLY_CONSTRAINTS.has((row as { conname: string }).conname);
    expect(fromMigrations.constraints?.filter((row) => !trigger(row))).toEqual(fromSchema.constraints);
    expect(fromMigrations.constraints?.filter(trigger).map((row) => (row as { def: string }).def)).toEqual([
      'TRIGGER DEFERRABLE INITIALLY DEFERRED',
      'TRIGGER DEFERRABLE INITIALLY DEFERRED',
    ]);
  });
});
