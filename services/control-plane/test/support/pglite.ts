/**
 * Test databases on embedded PGlite, the counterpart of postgres.ts. A new PGlite runs initdb,
 * which costs seconds (many more on a loaded machine); loading a dumped data directory costs a
 * fraction of that. So the pglite project's global setup (global-setup.pglite.ts) builds two
 * templates once per run, as PostgreSQL's TEMPLATE_DB is built once: an empty database (initdb
 * only) and a migrated one, each dumped to a file, plus the migrated one as a data directory on
 * disk. Tests start from these; the migration tests still migrate for real, from the empty one.
 */
import { readFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';

/** Where this run's templates are (files the global setup wrote, removed after the run). */
export interface PgliteTemplates {
  /** `dumpDataDir` of a database straight after initdb. */
  emptyDump: string;
  /** `dumpDataDir` of a database with every migration applied. */
  migratedDump: string;
  /** A data directory with every migration applied, never opened by a test (copy it). */
  migratedDataDir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplates: PgliteTemplates;
  }
}

const dumps = new Map<string, Promise<Blob>>();

/** A template's dump, read once per test worker. */
function dump(which: 'emptyDump' | 'migratedDump'): Promise<Blob> {
  const path = inject('pgliteTemplates')[which];
  let blob = dumps.get(path);
  if (!blob) {
    blob = readFile(path).then((bytes) => new Blob([bytes]));
    dumps.set(path, blob);
  }
  return blob;
}

/** The dump of the migrated template, for `openDatabase`'s `loadDataDir`. */
export function migratedDump(): Promise<Blob> {
  return dump('migratedDump');
}

/**
 * An empty database (what initdb leaves, as a fresh PostgreSQL database from template1), in memory
 * or in `dataDir` (which must hold no database yet).
 */
export async function emptyPGlite(dataDir?: string): Promise<PGlite> {
  return PGlite.create({ dataDir, loadDataDir: await dump('emptyDump') });
}
