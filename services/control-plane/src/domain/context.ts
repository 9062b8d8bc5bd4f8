/**
 * What every domain service is handed: the database, the listener told when an AEI's exposed
 * configuration or a table's data changed (the gateways' cache invalidation and resources/updated
 * notifications hang off it), the secrets' keyring and
 * the sandbox that checks custom tools' sources.
 */
import type { ErrorCode } from '@bindery/contracts';
import type { Db } from './db.ts';
import type { PrismaClient } from '../generated/prisma/client.ts';

export type { Db };

// The services below are named by what the domain asks of them, so this file (which every domain
// service imports) depends on none of the folders that implement them: the keyring lives in
// secrets/, the context store and table limits in context/, the sandbox in kinds/custom/.

/**
 * How saving a source went: it compiles and exports a function, or why not (with a position).
 * `unchecked` is set when the check itself could not run (the pool refused it, a worker failed):
 * that is no fault of the source, and its code (RATE_LIMITED, INTERNAL) is what to answer.
 */
export type SourceCheck =
  | { ok: true }
  | {
      ok: false;
      message: string;
      details: { field: 'code'; line?: number; column?: number };
      unchecked?: { code: ErrorCode; details?: Record<string, unknown> };
    };

/** What checks a custom tool's source when it is saved (the sandbox the tool will run in). */
export interface SourceChecker {
  checkCustomToolSource(code: string, tenant: string): Promise<SourceCheck>;
}

/** What the database stores of one secret's value. */
export interface SealedValue {
  ciphertext: Uint8Array<ArrayBuffer>;
  iv: Uint8Array<ArrayBuffer>;
  authTag: Uint8Array<ArrayBuffer>;
  keyId: string;
}

/** Whose secret it is and its name: bound into the ciphertext's tag. */
export interface SecretOwner {
  userId: string;
  name: string;
}

/** Seals and opens users' secret values (secrets/secret-keyring.ts). */
export interface SecretSealer {
  seal(value: string, owner: SecretOwner): SealedValue;
  open(sealed: SealedValue, owner: SecretOwner): string;
}

/** How large tables' data may grow (context/table-limits.ts holds the checks). */
export interface TableLimits {
  /** Largest data of one table, in bytes of its compact JSON. */
  maxBytes: number;
  /** Largest change one tool write may store, in bytes of its JSON. */
  maxWriteBytes: number;
}

/**
 * What the admin API's changes to a table's data tell the context store (context/context-store.ts),
 * so that no control plane serves the old data from a cache.
 */
export interface TableDataWatch {
  versions: {
    announce(tableId: string, version: number, tx: Db): Promise<void>;
    deleting(tableId: string, tx: Db): Promise<void>;
    deleted(tableId: string): void;
    settle(tableId: string, version: number): Promise<void>;
  };
  replaced(tableId: string, version: number): Promise<void>;
}

export interface ConfigChangeListener {
  /**
   * Called after commit with the AEIs whose config_version was bumped. A promise it answers is
   * awaited before the change is answered (the gateways being told; the listener bounds the wait).
   */
  configChanged(aeiIds: readonly string[]): void | Promise<void>;
  /**
   * Called after commit when a table's data reached `version` (a tool's write or the admin API's
   * replacement). Synchronous and never awaited on the write's path: the listener sends the
   * signal later (coalesced) and must not throw.
   */
  tableChanged?(tableId: string, version: number): void;
  /**
   * Called after a user's secret was created, replaced or deleted: other control planes drop the
   * values they keep decrypted (this one already has). Never awaited; must not throw.
   */
  secretsChanged?(userId: string): void;
  /**
   * Called when an upstream server announced that a resource some gateway watches changed (a
   * client subscribed to it): the gateways are told, coalesced like table changes. Never awaited;
   * must not throw.
   */
  resourceUpdated?(serverId: string, uri: string): void;
}

export interface DomainContext {
  prisma: PrismaClient;
  listener: ConfigChangeListener;
  /** Encrypts and decrypts users' secrets; absent when no key is configured (PostgreSQL without one). */
  keyring?: SecretSealer | undefined;
  /**
   * Checks custom tools' sources when they are saved (the app's sandbox); absent outside an app
   * (saving a custom tool then answers INTERNAL).
   */
  sandbox?: SourceChecker | undefined;
  /**
   * Reads and writes contexts; told when the admin API replaces or deletes a table's data (so no
   * control plane serves the old data from a cache). Absent outside an app, where nothing caches.
   */
  contexts?: TableDataWatch | undefined;
  /** How large tables' data may grow (TABLE_MAX_BYTES, TABLE_WRITE_MAX_BYTES); the defaults when absent. */
  tableLimits?: TableLimits | undefined;
}

/** The authenticated caller of the admin API. */
export interface Principal {
  userId: string;
  isRoot: boolean;
  /** The admin token the request came with (absent when the system acts for a user). */
  tokenId?: string;
}
