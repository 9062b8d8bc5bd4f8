/**
 * Test databases on the real PostgreSQL server: one template migrated once per run, cloned per
 * test file (`CREATE DATABASE x TEMPLATE t` is fast), dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A connection URL to the server's maintenance database, from TEST_DATABASE_URL or the default. */
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
/** The migrated template of this run (named per run by vitest.config.ts). */
export const TEMPLATE_DB = process.env.BINDERY_TEST_TEMPLATE ?? 'bindery_test_template';

/** The URL of another database on the same server. */
export function urlFor(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database (optionally cloned from a template); returns its name and a dropper. */
export async function createDatabase(
  template?: string,
): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `bindery_t_${randomBytes(6).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`));
  return {
    name,
    url: urlFor(name),
    drop: () =>
      withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
