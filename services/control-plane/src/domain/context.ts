/**
 * What every domain service is handed: the database, the listener told when an AEI's exposed
 * configuration or a table's data changed (the gateways' cache invalidation and resources/updated
 * notifications hang off it), the secrets' keyring and
 * the sandbox that checks custom tools' sources.
 */
import type { Db } from '../db/client.ts';
import type { CustomToolSandbox } from '../execution/sandbox/index.ts';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { ContextStore } from './context-store.ts';
import type { SecretKeyring } from './secret-keyring.ts';
import type { TableLimits } from './table-limits.ts';

export type { Db };

/** What checks a custom tool's source when it is saved (the sandbox the tool will run in). */
export type SourceChecker = Pick<CustomToolSandbox, 'checkCustomToolSource'>;

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
}

export interface DomainContext {
  prisma: PrismaClient;
  listener: ConfigChangeListener;
  /** Encrypts and decrypts users' secrets; absent when no key is configured (PostgreSQL without one). */
  keyring?: SecretKeyring | undefined;
  /**
   * Checks custom tools' sources when they are saved (the app's sandbox); absent outside an app
   * (saving a custom tool then answers INTERNAL).
   */
  sandbox?: SourceChecker | undefined;
  /**
   * Reads and writes contexts; told when the admin API replaces or deletes a table's data (so no
   * control plane serves the old data from a cache). Absent outside an app, where nothing caches.
   */
  contexts?: ContextStore | undefined;
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
