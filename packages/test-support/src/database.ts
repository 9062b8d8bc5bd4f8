/**
 * Databases for a control plane under test: a new database on the PostgreSQL test server (empty,
 * or cloned from a migrated template with `CREATE DATABASE ... TEMPLATE`), or a new embedded PGlite
 * data directory (empty, or a copy of a template directory). Each comes with the environment that
 * points a control plane at it and a way to drop it.
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type Engine = 'postgres' | 'pglite';

/** The maintenance database of the PostgreSQL test server: TEST_DATABASE_URL, or the local default. */
export const ADMIN_DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

/** The engine of this test run: BINDERY_TEST_DB (set per vitest project), PostgreSQL unless `pglite`. */
export function testEngine(): Engine {
  return process.env.BINDERY_TEST_DB === 'pglite' ? 'pglite' : 'postgres';
}

/** The URL of database `name` on the PostgreSQL test server. */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `fn` with a connection to the server's maintenance database, closed afterwards. */
export function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  return withConnection(ADMIN_DATABASE_URL, fn);
}

/** Runs `fn` with a connection to the database at `url`, closed afterwards. */
export async function withConnection<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  engine: Engine;
  /** The PostgreSQL database's name, or the PGlite data directory. */
  name: string;
  /** The PostgreSQL URL (undefined on PGlite). */
  url: string | undefined;
  /** What points a control plane at it: DATABASE_URL or BINDERY_DATA_DIR. */
  env: Record<string, string>;
  /** Drops the database (or removes the directory). */
  drop(): Promise<void>;
}

export interface DatabaseOptions {
  /** The engine; the run's (`testEngine()`) by default. */
  engine?: Engine;
  /** A word in the name, telling whose database a leftover is (`bindery_<purpose>_<random>`). */
  purpose?: string;
  /** PostgreSQL: the database to clone (a migrated template); an empty database without. */
  template?: string;
  /** PGlite: a data directory to copy (a migrated template); an empty directory without. */
  dataDirTemplate?: string;
}

/** A new database, empty or cloned from a template, on the engine asked for. */
export async function freshDatabase(options: DatabaseOptions = {}): Promise<TestDatabase> {
  const engine = options.engine ?? testEngine();
  const purpose = options.purpose ?? 'test';
  if (engine === 'pglite') {
    const dir = await mkdtemp(join(tmpdir(), `bindery-${purpose}-`));
    if (options.dataDirTemplate) await cp(options.dataDirTemplate, dir, { recursive: true });
    return {
      engine,
      name: dir,
      url: undefined,
      env: { BINDERY_DATA_DIR: dir },
      drop: () => rm(dir, { recursive: true, force: true }),
    };
  }
  const name = `bindery_${purpose}_${randomBytes(6).toString('hex')}`;
  const template = options.template ? ` TEMPLATE "${options.template}"` : '';
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}"${template}`));
  const url = databaseUrl(name);
  return {
    engine,
    name,
    url,
    env: { DATABASE_URL: url },
    drop: () =>
      withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
