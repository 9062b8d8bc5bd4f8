/**
 * The control plane's configuration: read from the environment once at start, validated against
 * its settings schema (`@bindery/service-kit/settings`, where every variable is declared), and passed
 * down. Nothing else reads `process.env`.
 */
import { resolve } from 'node:path';
import { tracingSettings, type LogFormat, type TracingSettings } from '@bindery/service-kit';
import {
  CONTROL_PLANE_SETTINGS,
  parseSettings,
  settingsProblemsMessage,
} from '@bindery/service-kit/settings';

export interface Config {
  host: string;
  port: number;
  /** PostgreSQL URL; when absent the embedded PGlite database in `dataDir` is used. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** The root admin token to install at start; when absent one is generated once and printed. */
  adminToken: string | undefined;
  bodyLimitBytes: number;
  logLevel: string;
  /** JSON lines, readable lines, or readable on a terminal only (LOG_FORMAT). */
  logFormat: LogFormat;
  /** Log every request and response (LOG_REQUESTS=false turns it off, e.g. for benchmarks). */
  logRequests: boolean;
  /** The gateways' credential for `/internal/*`; without it the internal API refuses every call. */
  internalToken: string | undefined;
  /** Credential for `GET /metrics`; unset = open (as on a local start on loopback). */
  metricsToken: string | undefined;
  /** Largest tool answer, in bytes of JSON (RESULT_TOO_LARGE above). */
  maxResultBytes: number;
  /** Largest data of one table, in bytes of its compact JSON (PAYLOAD_TOO_LARGE above). */
  tableMaxBytes: number;
  /** Largest change one tool write may store, in bytes of its JSON (PAYLOAD_TOO_LARGE above). */
  tableWriteMaxBytes: number;
  /** Budget of the parsed-context cache, in bytes of JSON (0 turns it off). */
  contextCacheBytes: number;
  bindingCacheEntries: number;
  /** Base URLs of the gateways told to drop a changed exposure (`POST {url}/cache/invalidate`). */
  gatewayUrls: string[];
  /** The gateways' ops credential, sent with every invalidation; required when gatewayUrls is set. */
  opsToken: string | undefined;
  /** Redis for invalidation fan-out (pub/sub on `bindery:config-invalidate`); unset = HTTP only. */
  redisUrl: string | undefined;
  /** With Redis on PostgreSQL: the length of a table-version lease (table-version-leases.ts). */
  tableVersionLeaseMs?: number;
  /** Where MCP clients reach a gateway: the demo's printed URL, the URLs answered with new api_keys. */
  gatewayPublicUrl: string;
  /** The OAuth authorization server's issuer (the control plane's public URL); unset: its listening address. */
  oauthIssuer?: string | undefined;
  /** The OAuth signing key is replaced after this long (ms). */
  oauthKeyRotationMs?: number;
  /** OAuth clients the operator registered (OAUTH_CLIENTS): RFC 7591 metadata each. */
  oauthClients?: Record<string, unknown>[];
  /** An external OpenID Connect provider for console sign-in (OIDC_*); unset: passwords only. */
  oidc?: { issuer: string; clientId: string; clientSecret: string | undefined; name: string } | undefined;
  /** Seed the demo on an empty database: true/false forced, undefined = only on embedded PGlite. */
  seedDemo: boolean | undefined;
  /** How long a write's idempotency key is remembered (a retry after that writes again). */
  idempotencyTtlMs: number;
  /** On SIGTERM/SIGINT, how long requests in flight may still run before they are cut. */
  shutdownGraceMs: number;
  /** OpenTelemetry traces (`OTEL_*`): off unless an exporter is asked for. */
  tracing: TracingSettings;
  /** The console's link of a trace id: a URL with `{trace_id}`. */
  traceUrlTemplate: string | undefined;
  /** How long the first audit row queued while none is being written waits for others (0: none). */
  auditFlushMs: number;
  /** Audit rows per INSERT at most. */
  auditBatchMax: number;
  /** Audit rows queued at most; beyond, calls wait for room before queuing theirs. */
  auditQueueMax: number;
  /** Wall time of one `query`, in-process slice and worker thread together (LIMIT_EXCEEDED above). */
  queryTimeoutMs: number;
  /** How long a query runs in-process before it moves to a worker thread (0 = always a worker). */
  queryInlineMs: number;
  /** Worker threads for queries that outgrow the in-process slice. */
  queryWorkers: number;
  /** Queries waiting for a worker thread at most (RATE_LIMITED beyond). */
  queryQueue: number;
  /** How long a query may wait for a worker thread (RATE_LIMITED beyond); 0: twice queryTimeoutMs. */
  queryMaxWaitMs: number;
  /** Queries of one tenant (the user owning the exposure) in the worker pool at once, running or waiting. */
  queryTenantEscalations: number;
  /** Heap cap of each query worker, in MiB. */
  queryWorkerMemoryMb: number;
  /** The key new secrets are encrypted with; unset = generated on embedded PGlite, none on PostgreSQL. */
  secretKey: Uint8Array | undefined;
  /** Earlier secret keys, still used to read secrets written with them. */
  secretOldKeys: Uint8Array[];
  /** Networks outgoing tool and import requests may reach although they are not public (CIDR). */
  httpToolsAllowedNetworks: string[];
  /** Largest OpenAPI document an import takes, as its body or fetched from a URL. */
  openApiImportMaxBytes: number;
  /** Wall time of one custom tool call, host calls included (TIMEOUT above). */
  customToolTimeoutMs: number;
  /** Memory of one custom tool call, in MiB (LIMIT_EXCEEDED above). */
  customToolMemoryMb: number;
  /** Worker threads running custom tools. */
  customToolWorkers: number;
  /** Custom tool calls waiting for a worker thread at most (RATE_LIMITED beyond). */
  customToolQueue: number;
  /** Custom tool calls of one tenant running or waiting at once (RATE_LIMITED beyond). */
  customToolTenantCalls: number;
  /** `ctx.context.write` calls of one custom tool call (LIMIT_EXCEEDED beyond). */
  customToolMaxWrites: number;
  /** `ctx.context.write` calls of one custom tool call per second; later ones wait their turn. */
  customToolWritesPerSecond: number;
  /** Executables stdio upstream servers may run (none: stdio servers refused). */
  upstreamStdioCommands: string[];
  /** How often running upstream servers' tools are listed again, in ms (0: never). */
  upstreamRefreshMs: number;
  /** The largest message an upstream server may send (a JSON body, an SSE event, a stdio line). */
  upstreamMessageMaxBytes: number;
  /** Everything one request to an upstream server may bring back (its progress and result). */
  upstreamCallMaxBytes: number;
}

const settings = CONTROL_PLANE_SETTINGS.settings;

/**
 * Where MCP clients reach a gateway for apps built without a config (tests): what
 * GATEWAY_PUBLIC_URL derives from an environment that sets nothing.
 */
export const DEFAULT_GATEWAY_PUBLIC_URL = loadPublicUrlDefault();

function loadPublicUrlDefault(): string {
  const parsed = parseSettings(CONTROL_PLANE_SETTINGS, {});
  if (!parsed.ok) throw new ConfigError(settingsProblemsMessage(parsed.problems));
  return parsed.values.GATEWAY_PUBLIC_URL;
}

/** Defaults of the query settings (tests building their own config fall back to these too). */
export const QUERY_DEFAULTS = {
  queryTimeoutMs: settings.QUERY_TIMEOUT_MS.fallback({}),
  queryInlineMs: settings.QUERY_INLINE_MS.fallback({}),
  queryWorkers: settings.QUERY_WORKERS.fallback({}),
  queryQueue: settings.QUERY_QUEUE.fallback({}),
  queryMaxWaitMs: settings.QUERY_MAX_WAIT_MS.fallback({}),
  queryTenantEscalations: settings.QUERY_TENANT_ESCALATIONS.fallback({}),
  queryWorkerMemoryMb: settings.QUERY_WORKER_MEMORY_MB.fallback({}),
} as const satisfies Partial<Config>;

/** Defaults of the audit writer's settings (tests building their own config fall back to these too). */
export const AUDIT_DEFAULTS = {
  auditFlushMs: settings.AUDIT_FLUSH_MS.fallback({}),
  auditBatchMax: settings.AUDIT_BATCH_MAX.fallback({}),
  auditQueueMax: settings.AUDIT_QUEUE_MAX.fallback({}),
} as const satisfies Partial<Config>;

/** Defaults of the custom tool sandbox's settings (tests building their own config fall back to these too). */
export const CUSTOM_TOOL_DEFAULTS = {
  customToolTimeoutMs: settings.CUSTOM_TOOL_TIMEOUT_MS.fallback({}),
  customToolMemoryMb: settings.CUSTOM_TOOL_MEMORY_MB.fallback({}),
  customToolWorkers: settings.CUSTOM_TOOL_WORKERS.fallback({}),
  customToolQueue: settings.CUSTOM_TOOL_QUEUE.fallback({}),
  customToolTenantCalls: settings.CUSTOM_TOOL_TENANT_CALLS.fallback({}),
  customToolMaxWrites: settings.CUSTOM_TOOL_MAX_WRITES.fallback({}),
  customToolWritesPerSecond: settings.CUSTOM_TOOL_WRITES_PER_SECOND.fallback({}),
} as const satisfies Partial<Config>;

/** OPENAPI_IMPORT_MAX_BYTES's default (tests building their own config fall back to it too). */
export const DEFAULT_OPENAPI_IMPORT_MAX_BYTES = settings.OPENAPI_IMPORT_MAX_BYTES.fallback({});

/** Every invalid setting of a start, one line each (one problem: just that line). */
/** OAUTH_CLIENTS: a JSON array of objects each with a client_id and redirect_uris. */
function parseClients(text: string | undefined): Record<string, unknown>[] {
  if (text === undefined || text.trim() === '') return [];
  let clients: unknown;
  try {
    clients = JSON.parse(text);
  } catch {
    throw new ConfigError('OAUTH_CLIENTS: not JSON (a JSON array of client metadata)');
  }
  const valid =
    Array.isArray(clients) &&
    clients.every(
      (c) =>
        typeof c === 'object' &&
        c !== null &&
        typeof (c as { client_id?: unknown }).client_id === 'string' &&
        Array.isArray((c as { redirect_uris?: unknown }).redirect_uris),
    );
  if (!valid) throw new ConfigError('OAUTH_CLIENTS: each client needs a client_id and redirect_uris');
  return clients as Record<string, unknown>[];
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const MiB = 1024 * 1024;

/** Builds the config from an environment (normally `process.env`); throws ConfigError on bad values. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const parsed = parseSettings(CONTROL_PLANE_SETTINGS, env);
  if (!parsed.ok) throw new ConfigError(settingsProblemsMessage(parsed.problems));
  const v = parsed.values;
  return {
    host: v.HOST,
    port: v.PORT,
    databaseUrl: v.DATABASE_URL,
    dataDir: resolve(v.BINDERY_DATA_DIR),
    adminToken: v.BINDERY_ADMIN_TOKEN,
    bodyLimitBytes: v.BODY_LIMIT_BYTES,
    logLevel: v.LOG_LEVEL,
    logFormat: v.LOG_FORMAT,
    logRequests: v.LOG_REQUESTS,
    internalToken: v.INTERNAL_TOKEN,
    metricsToken: v.METRICS_TOKEN,
    maxResultBytes: v.RESULT_LIMIT_BYTES,
    tableMaxBytes: v.TABLE_MAX_BYTES,
    tableWriteMaxBytes: v.TABLE_WRITE_MAX_BYTES,
    contextCacheBytes: v.CONTEXT_CACHE_MB * MiB,
    bindingCacheEntries: v.BINDING_CACHE_ENTRIES,
    gatewayUrls: v.GATEWAY_URLS,
    opsToken: v.OPS_TOKEN,
    redisUrl: v.REDIS_URL,
    tableVersionLeaseMs: v.TABLE_VERSION_LEASE_MS,
    gatewayPublicUrl: v.GATEWAY_PUBLIC_URL,
    oauthIssuer: v.OAUTH_ISSUER,
    oauthKeyRotationMs: v.OAUTH_KEY_ROTATION_DAYS * 86_400_000,
    oauthClients: parseClients(v.OAUTH_CLIENTS),
    oidc:
      v.OIDC_ISSUER === undefined
        ? undefined
        : {
            issuer: v.OIDC_ISSUER,
            clientId: v.OIDC_CLIENT_ID ?? '',
            clientSecret: v.OIDC_CLIENT_SECRET,
            name: v.OIDC_NAME,
          },
    seedDemo: v.BINDERY_SEED_DEMO,
    idempotencyTtlMs: v.IDEMPOTENCY_TTL_HOURS * 3_600_000,
    shutdownGraceMs: v.SHUTDOWN_GRACE_MS,
    tracing: tracingSettings(v, 'bindery-control-plane'),
    traceUrlTemplate: v.TRACE_URL_TEMPLATE,
    auditFlushMs: v.AUDIT_FLUSH_MS,
    auditBatchMax: v.AUDIT_BATCH_MAX,
    auditQueueMax: v.AUDIT_QUEUE_MAX,
    queryTimeoutMs: v.QUERY_TIMEOUT_MS,
    queryInlineMs: v.QUERY_INLINE_MS,
    queryWorkers: v.QUERY_WORKERS,
    queryQueue: v.QUERY_QUEUE,
    queryMaxWaitMs: v.QUERY_MAX_WAIT_MS,
    queryTenantEscalations: v.QUERY_TENANT_ESCALATIONS,
    queryWorkerMemoryMb: v.QUERY_WORKER_MEMORY_MB,
    secretKey: v.BINDERY_SECRET_KEY,
    secretOldKeys: v.BINDERY_SECRET_OLD_KEYS,
    httpToolsAllowedNetworks: v.HTTP_TOOLS_ALLOWED_NETWORKS,
    openApiImportMaxBytes: v.OPENAPI_IMPORT_MAX_BYTES,
    customToolTimeoutMs: v.CUSTOM_TOOL_TIMEOUT_MS,
    customToolMemoryMb: v.CUSTOM_TOOL_MEMORY_MB,
    customToolWorkers: v.CUSTOM_TOOL_WORKERS,
    customToolQueue: v.CUSTOM_TOOL_QUEUE,
    customToolTenantCalls: v.CUSTOM_TOOL_TENANT_CALLS,
    customToolMaxWrites: v.CUSTOM_TOOL_MAX_WRITES,
    customToolWritesPerSecond: v.CUSTOM_TOOL_WRITES_PER_SECOND,
    upstreamStdioCommands: v.UPSTREAM_STDIO_COMMANDS,
    upstreamRefreshMs: v.UPSTREAM_REFRESH_S * 1000,
    upstreamMessageMaxBytes: v.UPSTREAM_MESSAGE_MAX_BYTES,
    upstreamCallMaxBytes: v.UPSTREAM_CALL_MAX_BYTES,
  };
}
