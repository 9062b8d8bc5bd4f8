/**
 * Once per PostgreSQL test run: (re)create the template database and migrate it with the real
 * migration runner, so every test file starts from a clone of a freshly migrated schema.
 */
import { databaseUrl, withAdmin } from '@bindery/test-support';
import { openDatabase } from '../../src/db/database.ts';
import { TEMPLATE_DB } from './postgres.ts';

export default async function setup(): Promise<() => Promise<void>> {
  await withAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${TEMPLATE_DB}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${TEMPLATE_DB}"`);
  });
  const db = await openDatabase({ kind: 'postgres', url: databaseUrl(TEMPLATE_DB) });
  await db.close();
  return async () => {
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${TEMPLATE_DB}" WITH (FORCE)`));
  };
}
