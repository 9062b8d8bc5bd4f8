/**
 * The gateway's configuration, read from the environment once at start, validated, and passed
 * down. Nothing else reads `process.env`.
 */

export interface GatewayConfig {
  host: string;
  port: number;
  /** Where the control plane's internal API lives. */
  controlPlaneUrl: string;
  /** Credential for the control plane's `/internal/*` API. */
  internalToken: string;
  /** Credential ops use for `POST /cache/invalidate`; unset = that route refuses everything. */
  opsToken: string | undefined;
  /** Credential for `GET /metrics`; unset = open (as on a local start on loopback). */
  metricsToken: string | undefined;
  redisUrl: string | undefined;
  logLevel: string;
  logRequests: boolean;
  /** Hostnames (Host header, port ignored) the MCP endpoints answer; `*` allows any. */
  allowedHosts: string[];
  /** Extra browser origins allowed besides those on an allowed host; `*` allows any. */
  allowedOrigins: string[];
  bodyLimitBytes: number;
  /** On SIGTERM/SIGINT, how long tool calls in flight may still run before they are cut. */
  shutdownGraceMs: number;
  cache: {
    maxEntries: number;
    /** Estimated heap bytes of all cached configs (see exposure-cache.ts for the estimate). */
    maxBytes: number;
    ttlMs: number;
    negativeTtlMs: number;
    /** Lookups that find no exposure, per second, this gateway sends at most; 0 = no cap. */
    unknownKeyLookupsPerSecond: number;
    /** The same, for requests from one client address; 0 = no cap. */
    unknownKeyLookupsPerAddressPerSecond: number;
  };
  /** Open MCP sessions: at most `max` in all and `maxPerKey` per api_key; idle ones close after `idleMs`. */
  sessions: { max: number; maxPerKey: number; idleMs: number };
  /** The circuit breaker in front of the control plane (upstream/circuit-breaker.ts). */
  breaker: { failureThreshold: number; cooldownMs: number; maxCooldownMs: number };
  /** Per api_key: sustained requests per second and burst; 0 turns the limit off. */
  rateLimit: { perSecond: number; burst: number };
  toolCallTimeoutMs: number;
  configTimeoutMs: number;
  /** A health check of the control plane after this long without any answer from it (readiness). */
  controlPlaneIdleProbeMs: number;
  toolsPageSize: number;
  /** Progressive mode: session state lifetime, execute_apis limits. */
  progressive: {
    sessionTtlMs: number;
    /** Estimated heap bytes of all progressive session states kept in this process (without Redis). */
    stateMaxBytes: number;
    executePerSecond: number;
    executeBurst: number;
    concurrency: number;
    itemTimeoutMs: number;
  };
}

export class GatewayConfigError extends Error {
  override name = 'GatewayConfigError';
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new GatewayConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function url(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http');
    return parsed.origin;
  } catch {
    throw new GatewayConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
}

function secret(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name] || undefined;
  if (value !== undefined && value.length < 16) {
    throw new GatewayConfigError(`${name} must be at least 16 characters long`);
  }
  return value;
}

const MiB = 1024 * 1024;

function breaker(env: NodeJS.ProcessEnv): GatewayConfig['breaker'] {
  const cooldownMs = integer(env, 'BREAKER_COOLDOWN_MS', 500, 50, 600_000);
  return {
    failureThreshold: integer(env, 'BREAKER_FAILURE_THRESHOLD', 3, 1, 1_000),
    cooldownMs,
    maxCooldownMs: integer(env, 'BREAKER_MAX_COOLDOWN_MS', Math.max(5_000, cooldownMs), cooldownMs, 600_000),
  };
}

/** Builds the config from an environment (normally `process.env`); throws GatewayConfigError on bad values. */
export function loadGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const internalToken = secret(env, 'INTERNAL_TOKEN');
  if (internalToken === undefined) {
    throw new GatewayConfigError(
      'INTERNAL_TOKEN must be set: it is how the gateway reaches the control plane',
    );
  }
  return {
    host: env.GATEWAY_HOST || '127.0.0.1',
    port: integer(env, 'GATEWAY_PORT', 4100, 0, 65535),
    controlPlaneUrl: url(env, 'CONTROL_PLANE_URL', 'http://127.0.0.1:4000'),
    internalToken,
    opsToken: secret(env, 'OPS_TOKEN'),
    metricsToken: secret(env, 'METRICS_TOKEN'),
    redisUrl: env.REDIS_URL || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    logRequests: env.LOG_REQUESTS !== 'false',
    allowedHosts: ['localhost', '127.0.0.1', '::1', ...list(env.GATEWAY_ALLOWED_HOSTS)],
    allowedOrigins: list(env.GATEWAY_ALLOWED_ORIGINS),
    bodyLimitBytes: integer(env, 'GATEWAY_BODY_LIMIT_BYTES', 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, 600_000),
    cache: {
      maxEntries: integer(env, 'CONFIG_CACHE_MAX', 10_000, 1, 10_000_000),
      maxBytes: integer(env, 'CONFIG_CACHE_MAX_BYTES', 128 * MiB, MiB, 64 * 1024 * MiB),
      ttlMs: integer(env, 'CONFIG_CACHE_TTL_MS', 30_000, 0, 24 * 3600_000),
      negativeTtlMs: integer(env, 'CONFIG_NEGATIVE_TTL_MS', 5_000, 0, 3600_000),
      unknownKeyLookupsPerSecond: integer(env, 'UNKNOWN_KEY_LOOKUPS_PER_SECOND', 50, 0, 1_000_000),
      unknownKeyLookupsPerAddressPerSecond: integer(
        env,
        'UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND',
        10,
        0,
        1_000_000,
      ),
    },
    sessions: {
      max: integer(env, 'GATEWAY_MAX_SESSIONS', 10_000, 1, 10_000_000),
      maxPerKey: integer(env, 'GATEWAY_MAX_SESSIONS_PER_KEY', 1_000, 1, 10_000_000),
      idleMs: integer(env, 'GATEWAY_SESSION_IDLE_MS', 30 * 60_000, 1_000, 7 * 24 * 3_600_000),
    },
    breaker: breaker(env),
    rateLimit: {
      perSecond: integer(env, 'RATE_LIMIT_PER_SECOND', 50, 0, 1_000_000),
      burst: integer(env, 'RATE_LIMIT_BURST', 100, 1, 10_000_000),
    },
    toolCallTimeoutMs: integer(env, 'TOOL_CALL_TIMEOUT_MS', 30_000, 100, 600_000),
    configTimeoutMs: integer(env, 'CONFIG_TIMEOUT_MS', 5_000, 100, 60_000),
    controlPlaneIdleProbeMs: integer(env, 'CONTROL_PLANE_IDLE_PROBE_MS', 10_000, 100, 3_600_000),
    toolsPageSize: integer(env, 'TOOLS_PAGE_SIZE', 500, 1, 100_000),
    progressive: {
      sessionTtlMs: integer(env, 'CATALOG_SESSION_TTL_MS', 3_600_000, 1_000, 7 * 24 * 3_600_000),
      stateMaxBytes: integer(env, 'CATALOG_SESSION_MAX_BYTES', 64 * MiB, MiB, 64 * 1024 * MiB),
      executePerSecond: integer(env, 'EXECUTE_RATE_PER_SECOND', 20, 0, 1_000_000),
      executeBurst: integer(env, 'EXECUTE_RATE_BURST', 100, 50, 10_000_000),
      concurrency: integer(env, 'EXECUTE_CONCURRENCY', 8, 1, 256),
      itemTimeoutMs: integer(env, 'EXECUTE_ITEM_TIMEOUT_MS', 30_000, 100, 600_000),
    },
  };
}
