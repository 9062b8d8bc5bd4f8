/**
 * Once per PGlite test run: builds the templates pglite.ts hands out. An empty in-memory database
 * is dumped, migrated with the real migration runner and dumped again (each after a checkpoint, so
 * a database loaded from a dump has no WAL to replay); the migrated dump is also written out as a
 * data directory on disk, for control plane processes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.ts';
import type { PgliteTemplates } from './pglite.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'bindery-pglite-templates-'));
  const templates: PgliteTemplates = {
    emptyDump: join(dir, 'empty.tar'),
    migratedDump: join(dir, 'migrated.tar'),
    migratedDataDir: join(dir, 'migrated'),
  };
  const save = async (path: string, blob: Blob) => writeFile(path, new Uint8Array(await blob.arrayBuffer()));

  const lite = await PGlite.create();
  try {
    await lite.exec('CHECKPOINT');
    await save(templates.emptyDump, await lite.dumpDataDir('none'));
    await migrate({
      exec: async (sql) => void (await lite.exec(sql)),
      query: async <T>(sql: string, params?: unknown[]) => (await lite.query<T>(sql, params)).rows,
    });
    await lite.exec('CHECKPOINT');
    const migrated = await lite.dumpDataDir('none');
    await save(templates.migratedDump, migrated);
    const onDisk = await PGlite.create({ dataDir: templates.migratedDataDir, loadDataDir: migrated });
    await onDisk.close();
  } finally {
    await lite.close();
  }
  project.provide('pgliteTemplates', templates);
  return () => rm(dir, { recursive: true, force: true });
}
