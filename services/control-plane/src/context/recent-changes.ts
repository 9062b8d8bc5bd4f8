/**
 * The patches of each table's latest versions, kept in memory: this control plane's own writes
 * and the patches it fetched, so a cached context is brought forward without asking the database.
 * Each table keeps an unbroken run of versions; anything older is fetched again (or the context
 * read again) when needed. A version without a patch (the data replaced wholesale, PUT) breaks the
 * run, so nothing is ever brought forward across it.
 */
import type { VersionChanges } from '@bindery/context-ops';
import { LRUCache } from 'lru-cache';

/** Versions kept per table at most. */
const PER_TABLE = 1_024;
/** JSON size of a table's kept patches at most. */
const PER_TABLE_BYTES = 4 * 1024 * 1024;
/** JSON size of all kept patches at most (tables least recently written go first). */
const TOTAL_BYTES = 64 * 1024 * 1024;

interface Run {
  /** Consecutive versions, oldest first. */
  versions: VersionChanges[];
  bytes: number[];
  total: number;
}

export class RecentChanges {
  readonly #runs = new LRUCache<string, Run>({
    maxSize: TOTAL_BYTES,
    sizeCalculation: (run) => Math.max(1, run.total),
  });

  /** Keeps the patch of `version` (its JSON size `bytes`). */
  add(tableId: string, patch: VersionChanges, bytes: number): void {
    if (bytes > PER_TABLE_BYTES) {
      // Too large to keep: what came before cannot be brought past it from memory.
      this.#runs.delete(tableId);
      return;
    }
    const run = this.#runs.get(tableId);
    const last = run?.versions.at(-1)?.version;
    if (run === undefined || last === undefined || patch.version > last + 1) {
      this.#runs.set(tableId, { versions: [patch], bytes: [bytes], total: bytes });
      return;
    }
    if (patch.version <= last) return;
    run.versions.push(patch);
    run.bytes.push(bytes);
    run.total += bytes;
    while (run.versions.length > PER_TABLE || run.total > PER_TABLE_BYTES) {
      run.versions.shift();
      run.total -= run.bytes.shift() ?? 0;
    }
    // Set again so the cache counts the new size.
    this.#runs.set(tableId, run);
  }

  /**
   * The patches of the versions after `after` up to `upTo`, or undefined unless every one of them
   * is kept.
   */
  between(tableId: string, after: number, upTo: number): VersionChanges[] | undefined {
    if (upTo <= after) return [];
    const versions = this.#runs.get(tableId)?.versions;
    const first = versions?.[0]?.version;
    const last = versions?.at(-1)?.version;
    if (versions === undefined || first === undefined || last === undefined) return undefined;
    if (first > after + 1 || last < upTo) return undefined;
    return versions.slice(after + 1 - first, upTo + 1 - first);
  }
}
