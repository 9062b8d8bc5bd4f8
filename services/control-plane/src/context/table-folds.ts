/**
 * Folds tables' patches into their snapshots in the background (table-data.ts `foldPatches`), so
 * a table's patch log stays short. A fold rewrites the whole snapshot, so it waits for enough
 * patches to pay for it: at least `patches`, and at least one per `bytesPerPatch` of snapshot (a
 * 10 MB table is folded every 10,000 writes, costing each write about 1 KB of rewriting). On the
 * embedded database a fold holds the database for its duration (seconds for 10 MB), which is why
 * large snapshots wait longer. Writes never wait for a fold, on PostgreSQL not even for its lock.
 */
import type { PrismaClient } from '../generated/prisma/client.ts';
import { foldPatches } from './table-data.ts';

export interface FoldPolicy {
  /** Patches written before a table's first fold is considered (and between later checks). */
  patches: number;
  /** A fold waits for one patch per this many bytes of snapshot. */
  bytesPerPatch: number;
}

export const DEFAULT_FOLD_POLICY: FoldPolicy = { patches: 1_000, bytesPerPatch: 1_024 };

interface Pending {
  /** Patches this process wrote to the table since it last considered a fold. */
  patches: number;
  /** The fold (or the check for one) under way. */
  running: Promise<void> | undefined;
}

export class TableFolds {
  readonly #prisma: PrismaClient;
  readonly #policy: FoldPolicy;
  readonly #log: { warn(details: object, message: string): void };
  readonly #tables = new Map<string, Pending>();
  #closed = false;

  constructor(
    prisma: PrismaClient,
    log: { warn(details: object, message: string): void },
    policy = DEFAULT_FOLD_POLICY,
  ) {
    this.#prisma = prisma;
    this.#log = log;
    this.#policy = policy;
  }

  /** A patch was written to the table. */
  wrote(tableId: string): void {
    if (this.#closed) return;
    let pending = this.#tables.get(tableId);
    if (!pending) {
      pending = { patches: 0, running: undefined };
      this.#tables.set(tableId, pending);
    }
    pending.patches += 1;
    this.#consider(tableId, pending);
  }

  /**
   * Starts a fold when enough patches were written and none is under way. A fold that ends
   * considers again: patches written while it ran would otherwise wait for the table's next write
   * (an idle table would keep them unfolded).
   */
  #consider(tableId: string, pending: Pending): void {
    if (this.#closed || pending.patches < this.#policy.patches || pending.running) return;
    pending.patches = 0;
    const { patches, bytesPerPatch } = this.#policy;
    pending.running = foldPatches(this.#prisma, tableId, (bytes) => Math.max(patches, bytes / bytesPerPatch))
      .then(
        () => undefined,
        (error: unknown) => {
          // The patches stay, reads replay them, and the next check folds them.
          this.#log.warn({ err: error, table_id: tableId }, 'folding patches into the snapshot failed');
        },
      )
      .finally(() => {
        pending.running = undefined;
        if (pending.patches === 0) this.#tables.delete(tableId);
        else this.#consider(tableId, pending);
      });
  }

  /** Stops folding and waits for the folds under way (patches left are folded by later writes). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#tables.values()].map((pending) => pending.running));
  }
}
