/**
 * The control plane's configuration: read from the environment once at start, validated, and
 * passed down. Nothing else reads `process.env`.
 */
import { resolve } from 'node:path';

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
  /** Log every request and response (LOG_REQUESTS=false turns it off, e.g. for benchmarks). */
  logRequests: boolean;
  /** The gateways' credential for `/internal/*`; without it the internal API refuses every call. */
  internalToken: string | undefined;
  /** Credential for `GET /metrics`; unset = open (as on a local start on loopback). */
  metricsToken: string | undefined;
  /** Largest tool answer, in bytes of JSON (RESULT_TOO_LARGE above). */
  maxResultBytes: number;
  /** Budget of the parsed-context cache, in bytes of JSON (0 turns it off). */
  contextCacheBytes: number;
  /** Base URLs of the gateways told to drop a changed exposure (`POST {url}/cache/invalidate`). */
  gatewayUrls: string[];
  /** The gateways' ops credential, sent with every invalidation; required when gatewayUrls is set. */
  opsToken: string | undefined;
  /** Redis for invalidation fan-out (pub/sub on `bindery:config-invalidate`); unset = HTTP only. */
  redisUrl: string | undefined;
  /** Where MCP clients reach a gateway: the demo's printed URL, the URLs answered with new api_keys. */
  gatewayPublicUrl: string;
  /** Seed the demo on an empty database: true/false forced, undefined = only on embedded PGlite. */
  seedDemo: boolean | undefined;
  /** How long a write's idempotency key is remembered (a retry after that writes again). */
  idempotencyTtlMs: number;
  /** On SIGTERM/SIGINT, how long requests in flight may still run before they are cut. */
  shutdownGraceMs: number;
  /** Wall time of one `query`, in-process slice and worker thread together (LIMIT_EXCEEDED above). */
  queryTimeoutMs: number;
  /** How long a query runs in-process before it moves to a worker thread (0 = always a worker). */
  queryInlineMs: number;
  /** Worker threads for queries that outgrow the in-process slice. */
  queryWorkers: number;
  /** Queries waiting for a worker thread at most (RATE_LIMITED beyond). */
  queryQueue: number;
  /** Queries of one tenant (the user owning the exposure) in the worker pool at once, running or waiting. */
  queryTenantEscalations: number;
  /** Heap cap of each query worker, in MiB. */
  queryWorkerMemoryMb: number;
}

/** Where MCP clients reach a gateway unless GATEWAY_PUBLIC_URL says otherwise. */
export const DEFAULT_GATEWAY_PUBLIC_URL = 'http://127.0.0.1:4100';

/** Defaults of the query settings (tests building their own config fall back to these too). */
export const QUERY_DEFAULTS = {
  queryTimeoutMs: 1_000,
  queryInlineMs: 10,
  queryWorkers: 2,
  queryQueue: 8,
  queryTenantEscalations: 2,
  queryWorkerMemoryMb: 256,
} as const satisfies Partial<Config>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function secret(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name] || undefined;
  if (value !== undefined && value.length < 16) {
    throw new ConfigError(`${name} must be at least 16 characters long`);
  }
  return value;
}

/** An http(s) base URL without a trailing slash (a path prefix is kept: gateways may sit under one). */
function httpUrl(name: string, raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (parsed.search !== '' || parsed.hash !== '') {
    throw new ConfigError(`${name} must be a base URL without query or fragment, got "${raw}"`);
  }
  return parsed.href.replace(/\/+$/, '');
}

function gatewayUrls(env: NodeJS.ProcessEnv): string[] {
  const urls = (env.GATEWAY_URLS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((raw) => httpUrl('GATEWAY_URLS', raw));
  return [...new Set(urls)];
}

function redisUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.REDIS_URL || undefined;
  if (raw === undefined) return undefined;
  let protocol: string | undefined;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    // The URL may carry a password: name the setting, not its value.
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL');
  }
  return raw;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`${name} must be "true" or "false", got "${raw}"`);
}

/** Builds the config from an environment (normally `process.env`); throws ConfigError on bad values. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const adminToken = secret(env, 'BINDERY_ADMIN_TOKEN');
  const internalToken = secret(env, 'INTERNAL_TOKEN');
  const gateways = gatewayUrls(env);
  const opsToken = secret(env, 'OPS_TOKEN');
  if (gateways.length > 0 && opsToken === undefined) {
    throw new ConfigError(
      'OPS_TOKEN must be set when GATEWAY_URLS is: it is the credential the gateways ask for on /cache/invalidate',
    );
  }
  const queryTimeoutMs = integer(env, 'QUERY_TIMEOUT_MS', QUERY_DEFAULTS.queryTimeoutMs, 10, 60_000);
  const queryInlineMs = integer(env, 'QUERY_INLINE_MS', QUERY_DEFAULTS.queryInlineMs, 0, 1_000);
  if (queryInlineMs > queryTimeoutMs) {
    throw new ConfigError(
      `QUERY_INLINE_MS (${queryInlineMs}) must not be larger than QUERY_TIMEOUT_MS (${queryTimeoutMs})`,
    );
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 4000, 0, 65535),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: resolve(env.BINDERY_DATA_DIR || '.bindery'),
    adminToken,
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    logLevel: env.LOG_LEVEL || 'info',
    logRequests: env.LOG_REQUESTS !== 'false',
    internalToken,
    metricsToken: secret(env, 'METRICS_TOKEN'),
    maxResultBytes: integer(env, 'RESULT_LIMIT_BYTES', 1_000_000, 1024, 256 * 1024 * 1024),
    contextCacheBytes: integer(env, 'CONTEXT_CACHE_MB', 64, 0, 64 * 1024) * 1024 * 1024,
    gatewayUrls: gateways,
    opsToken,
    redisUrl: redisUrl(env),
    gatewayPublicUrl: httpUrl('GATEWAY_PUBLIC_URL', env.GATEWAY_PUBLIC_URL || DEFAULT_GATEWAY_PUBLIC_URL),
    seedDemo: flag(env, 'BINDERY_SEED_DEMO'),
    idempotencyTtlMs: integer(env, 'IDEMPOTENCY_TTL_HOURS', 24, 1, 24 * 30) * 3_600_000,
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, 600_000),
    queryTimeoutMs,
    queryInlineMs,
    queryWorkers: integer(env, 'QUERY_WORKERS', QUERY_DEFAULTS.queryWorkers, 1, 64),
    queryQueue: integer(env, 'QUERY_QUEUE', QUERY_DEFAULTS.queryQueue, 0, 10_000),
    queryTenantEscalations: integer(
      env,
      'QUERY_TENANT_ESCALATIONS',
      QUERY_DEFAULTS.queryTenantEscalations,
      1,
      10_000,
    ),
    queryWorkerMemoryMb: integer(
      env,
      'QUERY_WORKER_MEMORY_MB',
      QUERY_DEFAULTS.queryWorkerMemoryMb,
      32,
      64 * 1024,
    ),
  };
}
