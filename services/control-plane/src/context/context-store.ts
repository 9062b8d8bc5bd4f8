/**
 * Reading and writing one context (the subtree of a table's data at a JSON Pointer).
 *
 * Reads: the table's latest version comes from TableVersions (in-process, announced through Redis
 * or PostgreSQL's NOTIFY; the database only when none can say), the node from the context cache when it holds that version, else an
 * older cached node is brought forward by the patches written since (kept in memory, or fetched),
 * else the subtree is read from the database (snapshot and patches, table-data.ts). A read sees
 * one version: all of a write or none of it.
 *
 * Writes: queued per table in this process, then under the table row's lock for one transaction,
 * so writers through any control plane never lose an update; each write stores its edits as the
 * next version's patch (what it changed, not the whole context) and the snapshot is brought up to
 * date in the background (table-folds.ts).
 */
import {
  advanceContext,
  applyChanges,
  diffChanges,
  jsonBytesDelta,
  type DataChange,
  type JsonValue,
  type VersionChanges,
} from '@bindery/context-ops';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import { trackWrite, type WriteMeter } from '../metrics.ts';
import type { CachedContext, ContextCache } from './context-cache.ts';
import type { Db } from '../domain/db.ts';
import { RecentChanges } from './recent-changes.ts';
import {
  appendPatches,
  dataBytes,
  lockTable,
  measureData,
  patchesAfter,
  readNode,
  tableVersion,
} from './table-data.ts';
import { TableFolds, type FoldPolicy } from './table-folds.ts';
import { checkTableBytes, checkWriteBytes, DEFAULT_TABLE_LIMITS, type TableLimits } from './table-limits.ts';
import type { TableVersions } from './table-versions.ts';
import { canonicalPath, checkRules, storedRules, type CompiledRules, type Writer } from './table-rules.ts';

// Generous: writers on one hot table queue, and a pool slot may be busy.
const WRITE_TRANSACTION = { maxWait: 30_000, timeout: 120_000 } as const;
/** Writes committed in one transaction at most. */
const MAX_BATCH = 64;

export interface ContextLocation {
  tableId: string;
  tokens: string[];
  pointer: string;
  /** The tool reading or writing it, named when its context is missing. */
  toolName?: string;
}

/** The tool's context is gone from its table (the data was edited since the tool was saved). */
function contextMissing(at: ContextLocation, tableName: string): DomainError {
  const tool = at.toolName === undefined ? 'the tool' : `tool "${at.toolName}"`;
  return new DomainError(
    'NOT_FOUND',
    `${tool}: table "${tableName}" (${at.tableId}) has no data at "${at.pointer}" (the tool's json_path) ` +
      "any more; the tool's owner must restore the data there or change the tool's json_path",
    {
      ...(at.toolName !== undefined && { tool_name: at.toolName }),
      table_id: at.tableId,
      table_name: tableName,
      json_path: at.pointer,
    },
  );
}

function tableMissing(at: ContextLocation): DomainError {
  return new DomainError('NOT_FOUND', `table ${at.tableId} not found`, { table_id: at.tableId });
}

/**
 * Thrown by a write hook to end the write without changing anything because nothing needs doing
 * (a retry answered from its first outcome): the transaction rolls back like a failure, but the
 * write is metered as skipped, not failed.
 */
export class SkippedWrite extends Error {
  override name = 'SkippedWrite';
}

/** Work a write does inside its transaction besides the change itself. */
export interface WriteHooks<T> {
  /** Under the row lock, before the change; throwing rolls the transaction back, nothing written. */
  beforeChange?(tx: Db): Promise<void>;
  /** After the change is stored, before commit: it commits with the write, or neither does. */
  afterChange?(tx: Db, written: { result: T; version: number }): Promise<void>;
  /** Who writes, as the table's rules see it (table-rules.ts); a tool when absent. */
  by?: Writer;
}

export interface ContextStoreOptions {
  prisma: PrismaClient;
  cache: ContextCache;
  versions: TableVersions;
  log: { warn(details: object, message: string): void };
  fold?: FoldPolicy;
  /** How large a table may grow and one write may be (the settings' defaults when absent). */
  limits?: TableLimits;
  /**
   * Told after each commit that changed a table's data (a batch of writes, a replacement), with
   * the version it reached; synchronously, so it must only note the change (it is not awaited).
   */
  changed?: (tableId: string, version: number) => void;
}

export class ContextStore {
  readonly #prisma: PrismaClient;
  readonly #cache: ContextCache;
  readonly #versions: TableVersions;
  readonly #recent = new RecentChanges();
  readonly #folds: TableFolds;
  readonly #log: ContextStoreOptions['log'];
  readonly #changed: ContextStoreOptions['changed'];
  readonly #limits: TableLimits;
  /** Writes waiting per table in this process (one batch of a table commits at a time). */
  readonly #queues = new Map<string, QueuedWrite<unknown>[]>();

  constructor(options: ContextStoreOptions) {
    this.#prisma = options.prisma;
    this.#cache = options.cache;
    this.#versions = options.versions;
    this.#folds = new TableFolds(options.prisma, options.log, options.fold);
    this.#log = options.log;
    this.#changed = options.changed;
    this.#limits = options.limits ?? DEFAULT_TABLE_LIMITS;
  }

  /** Where reads learn tables' versions (also told by the admin API's writes). */
  get versions(): TableVersions {
    return this.#versions;
  }

  /** The context node at the table's latest version. */
  async read(at: ContextLocation): Promise<CachedContext> {
    const mark = this.#versions.mark();
    let version = await this.#versions.latest(at.tableId);
    if (version === undefined) {
      version = await tableVersion(this.#prisma, at.tableId);
      if (version === undefined) throw tableMissing(at);
      this.#versions.observed(at.tableId, version, mark);
    }
    return this.#nodeAt(this.#prisma, at, version, mark);
  }

  /** The node at `version` or later (a newer node is a committed one too), read through `db`. */
  async #nodeAt(
    db: Db,
    at: ContextLocation,
    version: number,
    mark = this.#versions.mark(),
  ): Promise<CachedContext> {
    const cached = this.#cache.get(at.tableId, at.pointer);
    if (cached !== undefined) {
      if (cached.version >= version) {
        this.#cache.counted('hit');
        return cached;
      }
      const brought = await this.#bringForward(db, at, cached, version);
      if (brought !== undefined) {
        this.#cache.counted('forward');
        return brought;
      }
    }
    this.#cache.counted('miss');
    const stored = await readNode(db, at.tableId, at.tokens);
    if (stored === undefined) throw tableMissing(at);
    this.#versions.observed(at.tableId, stored.version, mark);
    if (stored.node === undefined) throw contextMissing(at, stored.name);
    return this.#cache.set(at.tableId, at.pointer, stored.version, stored.node, stored.text);
  }

  /**
   * `cached` with the patches up to `version` (or later) applied, or undefined when they are gone
   * (folded away, the data replaced) or may have moved the context: it is read again then.
   */
  async #bringForward(
    db: Db,
    at: ContextLocation,
    cached: CachedContext,
    version: number,
  ): Promise<CachedContext | undefined> {
    let patches = this.#recent.between(at.tableId, cached.version, version);
    if (patches === undefined) {
      const fetched = await patchesAfter(db, at.tableId, cached.version);
      if (!unbroken(fetched, cached.version, version)) return undefined;
      for (const patch of fetched) this.#recent.add(at.tableId, patch, JSON.stringify(patch.changes).length);
      patches = fetched;
    }
    const advanced = advanceContext(cached.node, at.tokens, patches);
    if ('rereadFrom' in advanced || advanced.state === undefined) return undefined;
    const last = patches.at(-1)?.version ?? cached.version;
    if (advanced.state === cached.node) {
      // No patch reached it (writes elsewhere in the table): the same node, text and size.
      return this.#cache.set(at.tableId, at.pointer, last, cached.node, cached.knownText, cached.bytes);
    }
    const grown = patches.reduce((sum, p) => sum + JSON.stringify(p.changes).length, 0);
    return this.#cache.set(
      at.tableId,
      at.pointer,
      last,
      advanced.state as JsonValue,
      undefined,
      cached.bytes + grown,
    );
  }

  /**
   * Runs `change` on the context node under the table's row lock and stores what it changed;
   * answers what `change` answered plus the table's new version. With `expectedVersion`, a table
   * that has moved on is CONFLICT and nothing is written. `meter` follows the write through its
   * lock.
   *
   * Writes to one context that queue up in this process commit together (group commit): one
   * transaction, one lock, each write its own version and patch, in order. A write that fails
   * (its change refused, a hook throwing) leaves the others be; hooks run inside a savepoint.
   */
  write<T>(
    at: ContextLocation,
    expectedVersion: number | undefined,
    change: (node: JsonValue) => { context: JsonValue; result: T },
    meter: WriteMeter,
    hooks: WriteHooks<T> = {},
  ): Promise<{ result: T; version: number }> {
    return new Promise((resolve, reject) => {
      const queued: QueuedWrite<T> = {
        at,
        expectedVersion,
        change,
        hooks,
        tracked: trackWrite(meter),
        settle: (outcome) => (outcome.ok ? resolve(outcome.value) : reject(outcome.error)),
      };
      const queue = this.#queues.get(at.tableId);
      if (queue === undefined) {
        const started = [queued as QueuedWrite<unknown>];
        this.#queues.set(at.tableId, started);
        // After the current job: writes started in the same turn (a custom tool's round of host
        // calls) join the first batch instead of waiting for its transaction to end.
        queueMicrotask(() => void this.#drain(at.tableId, started));
      } else queue.push(queued as QueuedWrite<unknown>);
    });
  }

  /** Commits the table's queued writes, a batch (of one context) at a time, until none is left. */
  async #drain(tableId: string, queue: QueuedWrite<unknown>[]): Promise<void> {
    try {
      while (queue.length > 0) {
        const pointer = (queue[0] as QueuedWrite<unknown>).at.pointer;
        const batch: QueuedWrite<unknown>[] = [];
        for (let i = 0; i < queue.length && batch.length < MAX_BATCH;) {
          const queued = queue[i] as QueuedWrite<unknown>;
          if (queued.at.pointer === pointer) {
            batch.push(queued);
            queue.splice(i, 1);
          } else i += 1;
        }
        await this.#commit(batch);
      }
    } finally {
      // Synchronously after the last batch: a write queued from now on starts a new drain.
      this.#queues.delete(tableId);
    }
  }

  /** One transaction for `batch` (writes to one context); settles every write in it, never throws. */
  async #commit(batch: QueuedWrite<unknown>[]): Promise<void> {
    const at = (batch[0] as QueuedWrite<unknown>).at;
    const failures = new Map<QueuedWrite<unknown>, unknown>();
    let written: AppliedBatch;
    try {
      written = await this.#prisma.$transaction(
        (tx) => this.#apply(tx, at, batch, failures),
        WRITE_TRANSACTION,
      );
    } catch (error) {
      // Nothing of the batch was written.
      for (const queued of batch) settleFailed(queued, failures.get(queued) ?? error);
      return;
    }
    // Only after commit: a rolled-back write must never be served.
    try {
      this.#keep(at, written);
    } catch (error) {
      // Committed whatever happened here: reads then go to the database.
      this.#log.warn({ err: error, table_id: at.tableId }, 'keeping a committed write in memory failed');
    }
    const last = written.accepted.at(-1);
    if (last !== undefined) {
      // Acknowledged, and told to the gateways, only once every control plane that may answer
      // from memory knows it.
      await this.#versions.settle(at.tableId, last.patch.version);
      this.#tell(at.tableId, last.patch.version);
    }
    for (const { queued, result, patch } of written.accepted) {
      queued.tracked.committed(undefined);
      queued.settle({ ok: true, value: { result, version: patch.version } });
    }
    for (const [queued, error] of failures) settleFailed(queued, error);
  }

  /** What this process keeps of a committed batch: the version, the patches, the new node. */
  #keep(at: ContextLocation, written: AppliedBatch): void {
    const last = written.accepted.at(-1);
    if (last === undefined) return;
    this.#versions.committed(at.tableId, last.patch.version);
    let bytes = 0;
    for (const { patch, text } of written.accepted) {
      this.#recent.add(at.tableId, patch, text.length);
      this.#folds.wrote(at.tableId);
      bytes += text.length;
    }
    this.#cache.set(
      at.tableId,
      at.pointer,
      last.patch.version,
      written.node,
      undefined,
      written.bytes + bytes,
    );
  }

  /**
   * Inside the batch's transaction: locks the table, runs each write on the node the previous one
   * left, and stores the patches of those that succeeded (failures go to `failures`).
   */
  async #apply(
    tx: Db,
    at: ContextLocation,
    batch: readonly QueuedWrite<unknown>[],
    failures: Map<QueuedWrite<unknown>, unknown>,
  ): Promise<AppliedBatch> {
    const locked = await lockTable(tx, at.tableId);
    if (locked === undefined) throw tableMissing(at);
    for (const queued of batch) queued.tracked.locked();
    const before = await this.#nodeAt(tx, at, locked.version);
    if (before.version !== locked.version) throw staleNode(at, before.version, locked.version);
    // The table's size, kept by every write; measured once for a table stored before it was.
    let bytes = locked.bytes ?? (await measureData(tx, at.tableId));
    if (bytes === undefined) throw tableMissing(at);
    let node = before.node;
    let version = locked.version;
    const rules = storedRules(locked.rules);
    // Rules compare paths as the data writes them: a context at "/items/-1" is judged at its index.
    const judged =
      rules === undefined
        ? at.tokens
        : await canonicalPath(at.tokens, async (prefix) => (await readNode(tx, at.tableId, prefix))?.node);
    const schema = await this.#schemaAbove(tx, { ...at, tokens: judged }, rules, locked.version);
    const accepted: AppliedBatch['accepted'] = [];
    for (const queued of batch) {
      const { hooks } = queued;
      // Hooks run SQL: a failing one must leave no trace, and not end the whole transaction.
      const guarded = hooks.beforeChange !== undefined || hooks.afterChange !== undefined;
      if (guarded) await tx.$executeRawUnsafe('SAVEPOINT context_write');
      try {
        await hooks.beforeChange?.(tx);
        if (queued.expectedVersion !== undefined && queued.expectedVersion !== version) {
          throw new DomainError(
            'CONFLICT',
            `the data changed since version ${queued.expectedVersion} (now ${version}); read it again and retry`,
            { expected_version: queued.expectedVersion, current_version: version },
          );
        }
        const { context, result } = queued.change(node);
        const changes = diffChanges(node, context, at.tokens);
        // The edits as the rules read them: from the context's path as the data writes it.
        const seen = judged === at.tokens ? changes : rebasedOnto(changes, at.tokens.length, judged);
        // The schema's subtree after this write, when it lies above the context.
        let schemaAfter: JsonValue | undefined;
        const afterAbove =
          schema && (() => (schemaAfter = applyChanges(schema.node, rebased(seen, schema.depth))));
        checkRules(
          rules,
          { at: judged, before: node, after: context, changes: seen, by: hooks.by ?? 'tool' },
          at.tableId,
          afterAbove,
        );
        const text = JSON.stringify(changes);
        checkWriteBytes(this.#limits, dataBytes(text), at.tableId);
        // What the write adds to the table: measured on what it changed, not on the table.
        const grown = jsonBytesDelta(node, context);
        checkTableBytes(this.#limits, bytes + grown, { tableId: at.tableId, grows: grown > 0 });
        await hooks.afterChange?.(tx, { result, version: version + 1 });
        if (guarded) await tx.$executeRawUnsafe('RELEASE SAVEPOINT context_write');
        version += 1;
        node = context;
        bytes += grown;
        if (schema) schema.node = schemaAfter ?? applyChanges(schema.node, rebased(seen, schema.depth));
        accepted.push({ queued, result, patch: { version, changes }, text });
      } catch (error) {
        if (guarded) {
          await tx.$executeRawUnsafe('ROLLBACK TO SAVEPOINT context_write');
          await tx.$executeRawUnsafe('RELEASE SAVEPOINT context_write');
        }
        failures.set(queued, error);
      }
    }
    await appendPatches(
      tx,
      at.tableId,
      accepted.map((a) => ({ version: a.patch.version, changes: a.text })),
      bytes,
    );
    if (accepted.length > 0) await this.#versions.announce(at.tableId, version, tx);
    return { accepted, node, bytes: before.bytes };
  }

  /**
   * When the table's rules hold a schema for a subtree above the context `at`: that subtree at
   * `version` (the writes of a batch carry it forward), for checking the schema after each write.
   */
  async #schemaAbove(
    tx: Db,
    at: ContextLocation,
    rules: CompiledRules | undefined,
    version: number,
  ): Promise<{ node: JsonValue; depth: number } | undefined> {
    const schema = rules?.schema;
    if (schema === undefined || schema.tokens.length >= at.tokens.length) return undefined;
    if (!schema.tokens.every((token, i) => at.tokens[i] === token)) return undefined;
    const above = await this.#nodeAt(
      tx,
      { tableId: at.tableId, tokens: schema.tokens, pointer: schema.pointer },
      version,
    );
    return { node: above.node, depth: schema.tokens.length };
  }

  /**
   * After the commit of a wholesale replacement of the table's data (PUT) at `version`; resolves
   * once it may be acknowledged.
   */
  async replaced(tableId: string, version: number): Promise<void> {
    this.#versions.committed(tableId, version);
    await this.#versions.settle(tableId, version);
    this.#tell(tableId, version);
  }

  /** Every commit that changed a table's data comes here: the gateways hear of it (not awaited). */
  #tell(tableId: string, version: number): void {
    try {
      this.#changed?.(tableId, version);
    } catch (error) {
      // Committed whatever happens here: subscribers miss one notification, the write stands.
      this.#log.warn({ err: error, table_id: tableId }, 'announcing a table change failed');
    }
  }

  /** Stops folding patches (waiting for the folds under way) and lets go of the versions' connections. */
  async close(): Promise<void> {
    await this.#folds.close();
    await this.#versions.close();
  }
}

/** A write waiting in its table's queue, and how to answer its caller. */
interface QueuedWrite<T> {
  at: ContextLocation;
  expectedVersion: number | undefined;
  change: (node: JsonValue) => { context: JsonValue; result: T };
  hooks: WriteHooks<T>;
  tracked: ReturnType<typeof trackWrite>;
  settle(outcome: { ok: true; value: { result: T; version: number } } | { ok: false; error: unknown }): void;
}

/** What a batch's transaction wrote: its writes that succeeded, in order, and the node they left. */
interface AppliedBatch {
  accepted: { queued: QueuedWrite<unknown>; result: unknown; patch: VersionChanges; text: string }[];
  node: JsonValue;
  /** The JSON size of the node the batch started from (the cache's estimate grows from it). */
  bytes: number;
}

function settleFailed(queued: QueuedWrite<unknown>, error: unknown): void {
  try {
    if (error instanceof SkippedWrite) queued.tracked.skipped(error);
    else queued.tracked.failed(error);
  } catch {
    // Both rethrow the error by design (they fit a promise's `then`): it goes to the caller here.
  }
  queued.settle({ ok: false, error });
}

/** `changes` under a context of `depth` tokens, moved under `onto` (the same context, spelt canonically). */
function rebasedOnto(changes: readonly DataChange[], depth: number, onto: readonly string[]): DataChange[] {
  return changes.map((change) => ({ ...change, path: [...onto, ...change.path.slice(depth)] }));
}

/** `changes` with their paths made relative to the node `depth` tokens below the table's root. */
export function rebased(changes: readonly DataChange[], depth: number): DataChange[] {
  return changes.map((change) => ({ ...change, path: change.path.slice(depth) }));
}

/** Whether `patches` are the versions after `after`, without a gap, up to `upTo` at least. */
function unbroken(patches: readonly VersionChanges[], after: number, upTo: number): boolean {
  const last = patches.at(-1)?.version;
  if (last === undefined || last < upTo) return false;
  return patches.every((patch, i) => patch.version === after + 1 + i);
}

function staleNode(at: ContextLocation, found: number, locked: number): DomainError {
  return new DomainError(
    'INTERNAL',
    `table ${at.tableId}: read version ${found} under the lock of version ${locked}`,
  );
}
