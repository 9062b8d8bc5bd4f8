/**
 * A real control plane for tests: its own database (a clone of the run's migrated template, on
 * PostgreSQL or in-memory PGlite per BINDERY_TEST_DB), listening on a loopback port, driven over HTTP with fetch.
 */
import { testEngine } from '@bindery/test-support';
import { buildApp, type AppOptions } from '../../src/app.ts';
import type { AUDIT_DEFAULTS, CUSTOM_TOOL_DEFAULTS, QUERY_DEFAULTS } from '../../src/config.ts';
import { openDatabase, type Database, type DatabaseTarget } from '../../src/db/database.ts';
import type { AuditStreamOptions } from '../../src/audit/audit-stream.ts';
import type { ConfigChangeListener } from '../../src/domain/context.ts';
import type { FoldPolicy } from '../../src/context/table-folds.ts';
import type { AdminApp } from '../../src/http/admin-app.ts';
import { SecretKeyring } from '../../src/secrets/secret-keyring.ts';
import { ensureRootToken } from '../../src/accounts/users.ts';
import { migratedDump } from './pglite.ts';
import { createDatabase, TEMPLATE_DB } from './postgres.ts';

export const ROOT_TOKEN = 'bnd_admin_root-token-for-tests-only';
export const INTERNAL_TOKEN = 'internal-token-for-tests-only';
export const engine = testEngine();
/** The secrets' key of test apps unless a test gives its own (32 bytes). */
export const TEST_SECRET_KEY = new Uint8Array(32).fill(7);

export interface TestApp {
  app: AdminApp;
  database: Database;
  /** The PostgreSQL URL (undefined on PGlite). */
  databaseUrl: string | undefined;
  baseUrl: string;
  /** Aei ids the config-change listener heard, in order. */
  configChanges: string[][];
  /** Sends a request; `token` defaults to the root token, `null` sends none. */
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  /** Creates a user through the API and returns its id and token. */
  newUser(name?: string): Promise<{ id: string; token: string }>;
  close(): Promise<void>;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** Raw body text, sent as application/json as is (for malformed JSON). */
  raw?: string;
  headers?: Record<string, string>;
  /** Answers a redirect as it is instead of following it. */
  manualRedirects?: boolean;
}

export interface CallResult {
  status: number;
  headers: Headers;
  // Tests read arbitrary JSON answers; each asserts the fields it cares about.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export async function startTestApp(
  options: {
    bodyLimitBytes?: number;
    maxResultBytes?: number;
    /** Puts `/metrics` behind this bearer token (open without). */
    metricsToken?: string;
    sameDatabaseAs?: TestApp;
    /** A database the test prepared (it is migrated on open); `drop` runs on close. */
    existingDatabase?: { target: DatabaseTarget; drop(): Promise<void> };
    /** Also told about every config change (after `configChanges` records it). */
    listener?: ConfigChangeListener;
    /** GATEWAY_PUBLIC_URL: where the answers of new api_keys say clients connect. */
    gatewayPublicUrl?: string;
    /** Query settings (QUERY_TIMEOUT_MS, ...); the defaults otherwise. */
    query?: Partial<Record<keyof typeof QUERY_DEFAULTS, number>>;
    /** Custom tool sandbox settings (CUSTOM_TOOL_TIMEOUT_MS, ...); the defaults otherwise. */
    customTool?: Partial<Record<keyof typeof CUSTOM_TOOL_DEFAULTS, number>>;
    /** Audit writer settings (AUDIT_FLUSH_MS, ...); the defaults otherwise. */
    audit?: Partial<Record<keyof typeof AUDIT_DEFAULTS, number>>;
    /** TABLE_MAX_BYTES and TABLE_WRITE_MAX_BYTES; the defaults otherwise. */
    tables?: { tableMaxBytes?: number; tableWriteMaxBytes?: number };
    /** HTTP_TOOLS_ALLOWED_NETWORKS (none otherwise): loopback CIDRs a test's local server is on. */
    allowedNetworks?: string[];
    /** BINDERY_SECRET_KEY and BINDERY_SECRET_OLD_KEYS; `null` = no key (PostgreSQL without one). */
    secretKeys?: { key: Uint8Array; oldKeys?: Uint8Array[] } | null;
    /** Receives every log line of the app, at level trace (no logging otherwise). */
    logStream?: { write(line: string): void };
    /** Sees every route as the app adds it. */
    onRoute?: AppOptions['onRoute'];
    /** OPENAPI_IMPORT_MAX_BYTES (the default otherwise). */
    openApiImportMaxBytes?: number;
    /**
     * REDIS_URL: the app hears other control planes' exposure changes there, and on PostgreSQL
     * shares tables' versions through it (reads them from the database otherwise).
     */
    redisUrl?: string;
    /** BINDING_CACHE_ENTRIES (the default otherwise). */
    bindingCacheEntries?: number;
    /** How eagerly tables' patches are folded into their snapshots (the app's default otherwise). */
    foldPolicy?: FoldPolicy;
    /** CONTEXT_CACHE_MB in bytes; 0 turns the context cache off (every read goes to the database). */
    contextCacheBytes?: number;
    /** UPSTREAM_STDIO_COMMANDS (none otherwise: stdio upstream servers refused). */
    upstreamStdioCommands?: string[];
    /** How often upstream instances are pinged (30 s otherwise). */
    upstreamPingEveryMs?: number;
    /** UPSTREAM_CALL_MAX_BYTES (the default otherwise). */
    upstreamCallMaxBytes?: number;
    /** The console build served at /console (services/console/dist otherwise). */
    consoleDir?: string;
    /** The live audit streams' settings (the app's defaults otherwise). */
    auditStreams?: Partial<AuditStreamOptions>;
  } = {},
): Promise<TestApp> {
  let dropDatabase = async () => {};
  let database: Database;
  let databaseUrl: string | undefined;
  if (options.existingDatabase) {
    const { target, drop } = options.existingDatabase;
    databaseUrl = target.kind === 'postgres' ? target.url : undefined;
    database = await openDatabase(target);
    dropDatabase = drop;
  } else if (options.sameDatabaseAs) {
    // A second control plane on the first one's PostgreSQL database (replicas share nothing else).
    databaseUrl = options.sameDatabaseAs.databaseUrl;
    if (!databaseUrl) throw new Error('only PostgreSQL test apps can share a database');
    database = await openDatabase({ kind: 'postgres', url: databaseUrl });
  } else if (engine === 'postgres') {
    const created = await createDatabase(TEMPLATE_DB);
    dropDatabase = created.drop;
    databaseUrl = created.url;
    database = await openDatabase({ kind: 'postgres', url: created.url });
  } else {
    // In memory, from the run's migrated template (still migrated on open: a no-op).
    database = await openDatabase({ kind: 'pglite', dataDir: undefined, loadDataDir: await migratedDump() });
  }
  await ensureRootToken(database.prisma, ROOT_TOKEN);
  const configChanges: string[][] = [];
  const secretKeys = options.secretKeys === undefined ? { key: TEST_SECRET_KEY } : options.secretKeys;
  const app = await buildApp({
    config: {
      bodyLimitBytes: options.bodyLimitBytes ?? 1024 * 1024,
      logLevel: options.logStream ? 'trace' : 'silent',
      internalToken: INTERNAL_TOKEN,
      maxResultBytes: options.maxResultBytes ?? 1_000_000,
      metricsToken: options.metricsToken,
      gatewayPublicUrl: options.gatewayPublicUrl,
      httpToolsAllowedNetworks: options.allowedNetworks ?? [],
      ...(options.openApiImportMaxBytes !== undefined && {
        openApiImportMaxBytes: options.openApiImportMaxBytes,
      }),
      ...(options.redisUrl !== undefined && { redisUrl: options.redisUrl }),
      // On PostgreSQL, tables' versions travel over the database's LISTEN/NOTIFY without Redis.
      ...(databaseUrl !== undefined && { databaseUrl }),
      ...(options.bindingCacheEntries !== undefined && { bindingCacheEntries: options.bindingCacheEntries }),
      ...(options.contextCacheBytes !== undefined && { contextCacheBytes: options.contextCacheBytes }),
      ...(options.upstreamStdioCommands !== undefined && {
        upstreamStdioCommands: options.upstreamStdioCommands,
      }),
      ...(options.upstreamCallMaxBytes !== undefined && {
        upstreamCallMaxBytes: options.upstreamCallMaxBytes,
      }),
      ...options.query,
      ...options.customTool,
      ...options.audit,
      ...options.tables,
    },
    engine: database.kind,
    ...(options.foldPolicy && { foldPolicy: options.foldPolicy }),
    pool: database.pool,
    sql: database.sql,
    domain: {
      prisma: database.prisma,
      listener: {
        configChanged: (ids) => {
          configChanges.push([...ids]);
          // As in the real app, a change is answered once the listener is done (or its bound).
          return options.listener?.configChanged(ids) ?? Promise.resolve();
        },
        tableChanged: (tableId, version) => options.listener?.tableChanged?.(tableId, version),
      },
      keyring: secretKeys ? new SecretKeyring(secretKeys.key, secretKeys.oldKeys) : undefined,
    },
    ...(options.logStream ? { logStream: options.logStream } : { logger: false }),
    ...(options.onRoute && { onRoute: options.onRoute }),
    ...(options.upstreamPingEveryMs !== undefined && { upstreamPingEveryMs: options.upstreamPingEveryMs }),
    ...(options.consoleDir !== undefined && { consoleDir: options.consoleDir }),
    ...(options.auditStreams !== undefined && { auditStreams: options.auditStreams }),
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });

  const call: TestApp['call'] = async (method, path, opts = {}) => {
    const token = opts.token === undefined ? ROOT_TOKEN : opts.token;
    const headers: Record<string, string> = { ...opts.headers };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body,
      ...(opts.manualRedirects && { redirect: 'manual' as const }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };

  return {
    app,
    database,
    databaseUrl,
    baseUrl,
    configChanges,
    call,
    async newUser(name = 'someone') {
      const res = await call('POST', '/api/v2/users', { body: { name } });
      if (res.status !== 201)
        throw new Error(`could not create user: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.id, token: res.body.token };
    },
    async close() {
      await app.close();
      await database.close();
      await dropDatabase();
    },
  };
}
