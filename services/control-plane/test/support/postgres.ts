/**
 * Test databases on the real PostgreSQL server: one template migrated once per run, cloned per
 * test file (`CREATE DATABASE x TEMPLATE t` is fast), dropped afterwards. The databases themselves
 * are made by @bindery/test-support, as for every package's tests.
 */
import { freshDatabase } from '@bindery/test-support';

/** The migrated template of this run (named per run by vitest.config.ts). */
export const TEMPLATE_DB = process.env.BINDERY_TEST_TEMPLATE ?? 'bindery_test_template';

/** Creates an empty database (optionally cloned from a template); returns its name and a dropper. */
export async function createDatabase(
  template?: string,
): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const database = await freshDatabase({ engine: 'postgres', purpose: 't', template });
  return { name: database.name, url: database.url!, drop: database.drop };
}
