/**
 * Bindings as the executor runs them (the binding, its AEI and owner's status, its ADI's columns),
 * kept in memory so a tool call makes no database round trip to find what to run.
 *
 * An entry is dropped when its AEI's config changes: every change that matters to a call (the
 * binding, its AEI, its ADI, the owner's status) bumps the AEI's `config_version` and is announced
 * to the ConfigChangeListener after commit, which this control plane drops synchronously before the
 * change is answered, and to the Redis channel other control planes hear. A gateway also sends the
 * `config_version` it serves with each call: an entry older than that is read again, so a call made
 * after a change the gateway has seen never runs the old binding, whichever control plane answers
 * it and whenever the Redis message arrives. Entries also expire after a while (a bound for callers
 * that send no version, when a message was missed).
 */
import { LRUCache } from 'lru-cache';
import type { BindingCacheMeter } from '../metrics.ts';
import type { Db } from '../domain/context.ts';
import { OWNER_STATUS } from '../accounts/users.ts';
import { columnsOf, registeredKind, type KindColumns, type RegisteredKind } from '../kinds/registry.ts';
import { deepFreeze } from '@bindery/context-ops';

/** How long an entry is trusted without news of a change. */
const ENTRY_TTL_MS = 60_000;

export interface ExecutableBinding {
  id: string;
  aeiId: string;
  adiId: string;
  toolName: string;
  enabled: boolean;
  /** The binding's schema override, or null for the ADI's own schema. */
  inputSchema: Record<string, unknown> | null;
  /** The binding's narrowing of the ADI's output schema, or null: its answers are checked against it. */
  outputSchema: Record<string, unknown> | null;
  aei: {
    name: string;
    userId: string;
    /** The AEI is enabled and its owner is not disabled. */
    live: boolean;
    configVersion: number;
  };
  adi: {
    id: string;
    kind: string;
    columns: KindColumns;
    /** The kind's module, or undefined when this server does not run the kind. */
    module: RegisteredKind | undefined;
  };
}

async function loadBinding(db: Db, id: string): Promise<ExecutableBinding | undefined> {
  const row = await db.aeiBinding.findUnique({
    where: { id },
    include: { aei: { include: OWNER_STATUS }, adi: true },
  });
  if (!row) return undefined;
  return {
    id: row.id,
    aeiId: row.aeiId,
    adiId: row.adiId,
    toolName: row.toolName,
    enabled: row.enabled,
    // Frozen: shared by every call while cached, and validators and checked configs are then
    // found by the object, not by serialising it per call (context-ops freeze.ts).
    inputSchema: deepFreeze((row.inputSchema as Record<string, unknown> | null) ?? null),
    outputSchema: deepFreeze((row.outputSchema as Record<string, unknown> | null) ?? null),
    aei: {
      name: row.aei.name,
      userId: row.aei.userId,
      live: row.aei.status === 'enabled' && row.aei.user.disabledAt === null,
      configVersion: row.aei.configVersion,
    },
    adi: {
      id: row.adi.id,
      kind: row.adi.kind,
      columns: deepFreeze(columnsOf(row.adi)),
      module: registeredKind(row.adi.kind),
    },
  };
}

export class BindingCache {
  readonly #entries: LRUCache<string, ExecutableBinding> | undefined;
  /** Binding ids cached per AEI: what a change of that AEI drops. */
  readonly #byAei = new Map<string, Set<string>>();
  readonly #meter: BindingCacheMeter;
  /**
   * Bumped by every invalidation: a lookup that read the database before a change committed and
   * finishes after it was announced must not cache what it read.
   */
  #epoch = 0;
  /**
   * Reads in flight, by binding id: the calls that miss together (a popular binding expiring under
   * load, a change dropping it) share one database read instead of each making its own.
   */
  readonly #loading = new Map<string, { epoch: number; read: Promise<ExecutableBinding | undefined> }>();

  /** `maxEntries` 0: no caching, every call reads its binding from the database. */
  constructor(maxEntries: number, meter: BindingCacheMeter) {
    this.#meter = meter;
    if (maxEntries <= 0) return;
    this.#entries = new LRUCache<string, ExecutableBinding>({
      max: maxEntries,
      ttl: ENTRY_TTL_MS,
      // Evicted, expired or dropped alike: the AEI's index follows.
      dispose: (entry, id) => {
        const ids = this.#byAei.get(entry.aeiId);
        ids?.delete(id);
        if (ids?.size === 0) this.#byAei.delete(entry.aeiId);
      },
    });
  }

  /**
   * The binding, from memory when cached at `configVersion` or later (any version when the caller
   * sends none), else from the database; undefined when it does not exist.
   */
  async get(db: Db, id: string, configVersion?: number): Promise<ExecutableBinding | undefined> {
    const entries = this.#entries;
    if (!entries) return loadBinding(db, id);
    const hit = entries.get(id);
    if (hit && (configVersion === undefined || hit.aei.configVersion >= configVersion)) {
      this.#meter.hit.inc();
      return hit;
    }
    const epoch = this.#epoch;
    const shared = this.#loading.get(id);
    if (shared && shared.epoch === epoch) {
      const read = await shared.read;
      // Started before the change this caller has seen committed (announced to another control
      // plane only): read again.
      if (!read || configVersion === undefined || read.aei.configVersion >= configVersion) {
        this.#meter.shared.inc();
        return read;
      }
    }
    this.#meter.miss.inc();
    const read = loadBinding(db, id);
    const flight = { epoch, read };
    this.#loading.set(id, flight);
    let loaded: ExecutableBinding | undefined;
    try {
      loaded = await read;
    } finally {
      if (this.#loading.get(id) === flight) this.#loading.delete(id);
    }
    if (loaded && epoch === this.#epoch) {
      entries.set(id, loaded);
      let ids = this.#byAei.get(loaded.aeiId);
      if (!ids) this.#byAei.set(loaded.aeiId, (ids = new Set()));
      ids.add(id);
    }
    this.#meter.entries.set(entries.size);
    return loaded;
  }

  /** Drops the bindings of these AEIs (their config changed). */
  invalidate(aeiIds: Iterable<string>): void {
    this.#epoch += 1;
    const entries = this.#entries;
    if (!entries) return;
    for (const aeiId of aeiIds) {
      for (const id of [...(this.#byAei.get(aeiId) ?? [])]) entries.delete(id);
    }
    this.#meter.entries.set(entries.size);
  }

  /** Drops everything (messages may have been missed, or one named no AEI). */
  clear(): void {
    this.#epoch += 1;
    this.#entries?.clear();
    this.#byAei.clear();
    this.#meter.entries.set(0);
  }
}
