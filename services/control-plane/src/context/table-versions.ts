/**
 * Where a read learns a table's latest version without asking the database, so that a read served
 * from the context cache makes no database round trip. Never stale after an acknowledged write,
 * whichever control plane made it:
 * - `local` (embedded PGlite): this process is the only writer (the data directory is locked to
 *   it), so the versions its own writes committed are the truth; a table it has not seen yet is
 *   read from the database once.
 * - `redis` (PostgreSQL with REDIS_URL, any number of control planes): Redis holds each table's
 *   latest version. A writer raises it (set-if-greater) before its transaction commits, and a
 *   write that cannot raise it is refused, so no acknowledged write is ever missing from Redis.
 *   The same step announces the version to the other control planes and waits until each has
 *   applied it or its lease has ended (table-version-leases.ts). So while its lease runs, a
 *   control plane answers reads from the versions it knows, with no round trip; a table it does
 *   not know yet, or any table while its lease has lapsed, it GETs from Redis (one round trip).
 *   When Redis has no value or cannot answer, the version comes from the database.
 * - `notify` (PostgreSQL without REDIS_URL, any number of control planes): the same leases, with
 *   PostgreSQL's LISTEN/NOTIFY carrying the announcements (table-version-notify.ts): the write's
 *   transaction announces its version, and the writer waits after the commit, before the write is
 *   acknowledged, for the members whose lease may still run. A table not known, or any table while
 *   the lease has lapsed, takes its version from the database.
 * - `database` (PostgreSQL with no URL to listen on: only apps built without one): every read asks
 *   the database for the version (one indexed query), which is right with any number of control
 *   planes.
 * A version above the committed one (a write raised it, then rolled back) is harmless: readers
 * find no cached node at that version and read the database, which has the committed one.
 */
import { createRedisClient } from '@bindery/service-kit';
import { LRUCache } from 'lru-cache';
import { DomainError } from '../domain/errors.ts';
import { RAISE_VERSION_LUA, VersionLeases } from './table-version-leases.ts';
import type { Db } from '../domain/db.ts';
import type { TableVersionMeter } from '../metrics.ts';

export type TableVersionSource = 'local' | 'redis' | 'notify' | 'database';

export interface TableVersions {
  readonly source: TableVersionSource;
  /**
   * The table's latest version, or undefined when the caller must read it from the database
   * (then tell `observed`).
   */
  latest(tableId: string): Promise<number | undefined>;
  /**
   * Taken before a read of the database; `observed` keeps what that read found only if nothing
   * was missed since (a version announced while the process could not hear it).
   */
  mark(): number;
  /** A version read from the database (monotonic: an older one changes nothing). */
  observed(tableId: string, version: number, mark: number): void;
  /**
   * Inside the transaction of the write that makes `version`, before its commit: throws (and the
   * write must roll back) when the version cannot be made known to every reader.
   */
  announce(tableId: string, version: number, tx: Db): Promise<void>;
  /** After that commit. */
  committed(tableId: string, version: number): void;
  /**
   * After that commit, before the write is acknowledged: resolves once every reader that may
   * answer from memory knows `version` (never throws).
   */
  settle(tableId: string, version: number): Promise<void>;
  /** Inside the transaction of the table's deletion (throws like `announce`). */
  deleting(tableId: string, tx: Db): Promise<void>;
  /** After that commit (then `settle(tableId, DELETED)`). */
  deleted(tableId: string): void;
  close(): Promise<void>;
}

/**
 * A deleted table's version: above any real one, so every reader goes to the database (and finds
 * the table gone), and never lowered by a read that started before the deletion.
 */
export const DELETED = 2 ** 31;

// Tables whose version is remembered in-process at most (a table not remembered is read once).
const LOCAL_TABLES = 100_000;

/** The versions this process knows (its own writes, what it read), newest wins. */
export class KnownVersions {
  readonly #versions = new LRUCache<string, number>({ max: LOCAL_TABLES });

  get(tableId: string): number | undefined {
    return this.#versions.get(tableId);
  }

  clear(): void {
    this.#versions.clear();
  }

  raise(tableId: string, version: number): void {
    const known = this.#versions.get(tableId);
    if (known === undefined || version > known) this.#versions.set(tableId, version);
  }
}

/** `local`: the only control plane on its database knows every version it wrote. */
export class LocalTableVersions implements TableVersions {
  readonly source = 'local';
  readonly #known = new KnownVersions();

  async latest(tableId: string): Promise<number | undefined> {
    return this.#known.get(tableId);
  }

  mark(): number {
    return 0;
  }

  observed(tableId: string, version: number): void {
    this.#known.raise(tableId, version);
  }

  async announce(): Promise<void> {}

  committed(tableId: string, version: number): void {
    this.#known.raise(tableId, version);
  }

  async settle(): Promise<void> {}

  async deleting(): Promise<void> {}

  deleted(tableId: string): void {
    this.#known.raise(tableId, DELETED);
  }

  async close(): Promise<void> {}
}

/** `database`: every read asks PostgreSQL (several control planes, no Redis to share versions). */
export class DatabaseTableVersions implements TableVersions {
  readonly source = 'database';
  async latest(): Promise<undefined> {
    return undefined;
  }
  mark(): number {
    return 0;
  }
  observed(): void {}
  async announce(): Promise<void> {}
  committed(): void {}
  async settle(): Promise<void> {}
  async deleting(): Promise<void> {}
  deleted(): void {}
  async close(): Promise<void> {}
}

const KEY_PREFIX = 'bindery:table-version:';
/**
 * How long Redis keeps a table's version after its last write or read from the database (a table
 * unused that long is read from the database once, then remembered again).
 */
const KEY_TTL_MS = 7 * 24 * 3_600_000;

export interface RedisTableVersionsOptions {
  url: string;
  /** Budget of one Redis command; a read falls back to the database after it (default 500 ms). */
  timeoutMs?: number;
  /** The database's identity: control planes of one database share leases (table-version-leases.ts). */
  scope: () => Promise<string>;
  /** Length of a table-version lease in ms (default 2,000). */
  leaseMs?: number;
  /** Counts where reads found tables' versions. */
  meter?: TableVersionMeter;
  log: { warn(details: object, message: string): void; info(details: object, message: string): void };
}

function createVersionsClient(url: string, timeoutMs: number) {
  return createRedisClient({
    url,
    // A command while Redis is away fails at once: a read then asks the database instead, a write
    // is refused, rather than waiting for Redis to come back.
    disableOfflineQueue: true,
    commandOptions: { timeout: timeoutMs },
    socket: {
      connectTimeout: timeoutMs,
      reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 5_000),
    },
  });
}

/** Where reads found tables' versions (the controlplane_table_version_lookups_total series). */

/** `redis`: Redis holds every table's latest version for all control planes; leases spare the reads. */
export class RedisTableVersions implements TableVersions {
  readonly source = 'redis';
  readonly #client: ReturnType<typeof createVersionsClient>;
  readonly #log: RedisTableVersionsOptions['log'];
  readonly #known = new KnownVersions();
  readonly #timeoutMs: number;
  readonly #leases: VersionLeases;
  readonly #meter: TableVersionMeter | undefined;
  #warned = false;

  constructor(options: RedisTableVersionsOptions) {
    this.#log = options.log;
    this.#timeoutMs = options.timeoutMs ?? 500;
    this.#meter = options.meter;
    this.#leases = new VersionLeases({
      url: options.url,
      scope: options.scope,
      timeoutMs: this.#timeoutMs,
      ...(options.leaseMs !== undefined && { leaseMs: options.leaseMs }),
      log: options.log,
      onVersion: (tableId, version) => this.#known.raise(tableId, version),
      onLapse: () => this.#known.clear(),
    });
    this.#client = createVersionsClient(options.url, this.#timeoutMs);
    this.#client.on('ready', () => {
      if (this.#warned) this.#log.info({}, 'redis reachable again; table versions come from it');
      this.#warned = false;
    });
    this.#client.on('error', (error: unknown) => this.#outage(error));
    // connect() settles once connected (or when closed); reconnects are the client's own.
    this.#client.connect().catch(() => undefined);
  }

  async latest(tableId: string): Promise<number | undefined> {
    if (this.#leases.valid) {
      const known = this.#known.get(tableId);
      if (known !== undefined) {
        this.#meter?.memory.inc();
        return known;
      }
    }
    if (!this.#client.isReady) {
      this.#meter?.database.inc();
      return undefined;
    }
    const generation = this.#leases.generation;
    let value: string | null;
    try {
      value = await this.#client.get(KEY_PREFIX + tableId);
      this.#meter?.redis.inc();
    } catch (error) {
      this.#meter?.database.inc();
      this.#outage(error);
      return undefined;
    }
    if (value === null) return undefined;
    const version = Number(value);
    // Lower than a version this process has seen: Redis lost writes (restored, failed over);
    // the database knows, and `observed` puts the right version back.
    const known = this.#known.get(tableId);
    if (!Number.isSafeInteger(version) || (known !== undefined && version < known)) return undefined;
    // Kept for the next reads unless announcements may have been missed since it was asked.
    if (generation === this.#leases.generation) this.#known.raise(tableId, version);
    return version;
  }

  mark(): number {
    return this.#leases.generation;
  }

  observed(tableId: string, version: number, mark: number): void {
    if (mark === this.#leases.generation) this.#known.raise(tableId, version);
    if (!this.#client.isReady) return;
    // Best effort: a reader that finds no value puts the database's back, never lowering one.
    this.#raise(tableId, version).catch((error: unknown) => this.#outage(error));
  }

  async announce(tableId: string, version: number): Promise<void> {
    try {
      // Just started, or reconnecting: worth a short wait rather than refusing the write.
      await this.#leases.announce(tableId, version, KEY_PREFIX + tableId, KEY_TTL_MS);
    } catch (error) {
      this.#outage(error);
      // Redis is what this write depends on here: refused (nothing written) rather than
      // acknowledged while other control planes could go on serving the old data.
      throw new DomainError(
        'UPSTREAM_FAILED',
        'the data cannot be written right now: the other control planes cannot be told about the write ' +
          '(Redis is unreachable); nothing was written, retry shortly',
        { reason: 'redis_unreachable', retry_after_seconds: 1 },
      );
    }
  }

  committed(tableId: string, version: number): void {
    this.#known.raise(tableId, version);
  }

  // Announced and confirmed before the commit.
  async settle(): Promise<void> {}

  async deleting(tableId: string): Promise<void> {
    await this.announce(tableId, DELETED);
  }

  deleted(tableId: string): void {
    this.#known.raise(tableId, DELETED);
  }

  async close(): Promise<void> {
    await this.#leases.close();
    if (!this.#client.isOpen) return;
    if (this.#client.isReady) await this.#client.close();
    else this.#client.destroy();
  }

  async #raise(tableId: string, version: number): Promise<void> {
    await this.#client.eval(RAISE_VERSION_LUA, {
      keys: [KEY_PREFIX + tableId],
      arguments: [String(version), String(KEY_TTL_MS)],
    });
  }

  #outage(error: unknown): void {
    // node-redis emits one error per reconnect attempt: say it once per outage.
    if (this.#warned) return;
    this.#warned = true;
    this.#log.warn(
      { error: error instanceof Error ? error.message : String(error) },
      'redis unreachable: reads take table versions from the database, writes are refused until it is back',
    );
  }
}
