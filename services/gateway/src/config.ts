/**
 * The gateway's configuration, read from the environment once at start, validated against its
 * settings schema (`@bindery/service-kit/settings`, where every variable is declared), and passed
 * down. Nothing else reads `process.env`.
 */
import { tracingSettings, type LogFormat, type TracingSettings } from '@bindery/service-kit';
import { GATEWAY_SETTINGS, parseSettings, settingsProblemsMessage } from '@bindery/service-kit/settings';

export interface GatewayConfig {
  host: string;
  port: number;
  /** Where the control plane's internal API lives. */
  controlPlaneUrl: string;
  /** Credential for the control plane's `/internal/*` API. */
  internalToken: string;
  /** Where MCP clients reach this gateway: the keyless URLs (OAuth resources) are under it. */
  publicUrl: string;
  /** External authorization-server mode (OAUTH_EXTERNAL_*); undefined: the control plane's built-in one. */
  oauthExternal: ExternalAuthorizationServer | undefined;
  /** Credential ops use for `POST /cache/invalidate`; unset = that route refuses everything. */
  opsToken: string | undefined;
  /** Credential for `GET /metrics`; unset = open (as on a local start on loopback). */
  metricsToken: string | undefined;
  redisUrl: string | undefined;
  logLevel: string;
  /** JSON lines, readable lines, or readable on a terminal only (LOG_FORMAT). */
  logFormat: LogFormat;
  logRequests: boolean;
  /** Hostnames (Host header, port ignored) the MCP endpoints answer; `*` allows any. */
  allowedHosts: string[];
  /** Extra browser origins allowed besides those on an allowed host; `*` allows any. */
  allowedOrigins: string[];
  bodyLimitBytes: number;
  /** On SIGTERM/SIGINT, how long tool calls in flight may still run before they are cut. */
  shutdownGraceMs: number;
  /** OpenTelemetry traces (`OTEL_*`): off unless an exporter is asked for. */
  tracing: TracingSettings;
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
  /** The circuit breaker in front of the control plane (control-plane/circuit-breaker.ts). */
  breaker: { failureThreshold: number; cooldownMs: number; maxCooldownMs: number };
  /**
   * Per api_key: sustained requests per second and burst; 0 turns the limit off. With `redisUrl`
   * one budget across the gateways, each falling back to its own when Redis is slower than
   * `redisTimeoutMs`.
   */
  rateLimit: { perSecond: number; burst: number; redisTimeoutMs: number };
  toolCallTimeoutMs: number;
  /** Context tool calls sent together in one exchange at most (0 or 1: each alone). */
  toolCallBatchMax: number;
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

/** An authorization server other than the control plane's, whose tokens the keyless URLs take. */
export interface ExternalAuthorizationServer {
  issuer: string;
  jwksUrl: string;
  /** The audience its tokens carry (undefined: the keyless URL itself). */
  audience: string | undefined;
  /** The claim naming the person. */
  userClaim: 'sub' | 'email';
}

function externalServer(
  issuer: string | undefined,
  jwksUrl: string | undefined,
  audience: string | undefined,
  userClaim: 'sub' | 'email',
): ExternalAuthorizationServer | undefined {
  if (issuer === undefined) return undefined;
  if (jwksUrl === undefined) {
    throw new GatewayConfigError(
      'OAUTH_EXTERNAL_JWKS_URL: required with OAUTH_EXTERNAL_ISSUER (where its keys are)',
    );
  }
  return { issuer, jwksUrl, audience, userClaim };
}

/** Every invalid setting of a start, one line each (one problem: just that line). */
export class GatewayConfigError extends Error {
  override name = 'GatewayConfigError';
}

/** Builds the config from an environment (normally `process.env`); throws GatewayConfigError on bad values. */
export function loadGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const parsed = parseSettings(GATEWAY_SETTINGS, env);
  if (!parsed.ok) throw new GatewayConfigError(settingsProblemsMessage(parsed.problems));
  const v = parsed.values;
  return {
    host: v.GATEWAY_HOST,
    port: v.GATEWAY_PORT,
    // The client joins absolute paths to it: only the origin counts.
    controlPlaneUrl: new URL(v.CONTROL_PLANE_URL).origin,
    internalToken: v.INTERNAL_TOKEN,
    publicUrl: v.GATEWAY_PUBLIC_URL,
    oauthExternal: externalServer(
      v.OAUTH_EXTERNAL_ISSUER,
      v.OAUTH_EXTERNAL_JWKS_URL,
      v.OAUTH_EXTERNAL_AUDIENCE,
      v.OAUTH_EXTERNAL_USER_CLAIM,
    ),
    opsToken: v.OPS_TOKEN,
    metricsToken: v.METRICS_TOKEN,
    redisUrl: v.REDIS_URL,
    logLevel: v.LOG_LEVEL,
    logFormat: v.LOG_FORMAT,
    logRequests: v.LOG_REQUESTS,
    allowedHosts: ['localhost', '127.0.0.1', '::1', ...v.GATEWAY_ALLOWED_HOSTS],
    allowedOrigins: v.GATEWAY_ALLOWED_ORIGINS,
    bodyLimitBytes: v.GATEWAY_BODY_LIMIT_BYTES,
    shutdownGraceMs: v.SHUTDOWN_GRACE_MS,
    tracing: tracingSettings(v, 'bindery-gateway'),
    cache: {
      maxEntries: v.CONFIG_CACHE_MAX,
      maxBytes: v.CONFIG_CACHE_MAX_BYTES,
      ttlMs: v.CONFIG_CACHE_TTL_MS,
      negativeTtlMs: v.CONFIG_NEGATIVE_TTL_MS,
      unknownKeyLookupsPerSecond: v.UNKNOWN_KEY_LOOKUPS_PER_SECOND,
      unknownKeyLookupsPerAddressPerSecond: v.UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND,
    },
    sessions: {
      max: v.GATEWAY_MAX_SESSIONS,
      maxPerKey: v.GATEWAY_MAX_SESSIONS_PER_KEY,
      idleMs: v.GATEWAY_SESSION_IDLE_MS,
    },
    breaker: {
      failureThreshold: v.BREAKER_FAILURE_THRESHOLD,
      cooldownMs: v.BREAKER_COOLDOWN_MS,
      maxCooldownMs: v.BREAKER_MAX_COOLDOWN_MS,
    },
    rateLimit: {
      perSecond: v.RATE_LIMIT_PER_SECOND,
      burst: v.RATE_LIMIT_BURST,
      redisTimeoutMs: v.RATE_LIMIT_REDIS_TIMEOUT_MS,
    },
    toolCallTimeoutMs: v.TOOL_CALL_TIMEOUT_MS,
    toolCallBatchMax: v.TOOL_CALL_BATCH_MAX,
    configTimeoutMs: v.CONFIG_TIMEOUT_MS,
    controlPlaneIdleProbeMs: v.CONTROL_PLANE_IDLE_PROBE_MS,
    toolsPageSize: v.TOOLS_PAGE_SIZE,
    progressive: {
      sessionTtlMs: v.CATALOG_SESSION_TTL_MS,
      stateMaxBytes: v.CATALOG_SESSION_MAX_BYTES,
      executePerSecond: v.EXECUTE_RATE_PER_SECOND,
      executeBurst: v.EXECUTE_RATE_BURST,
      concurrency: v.EXECUTE_CONCURRENCY,
      itemTimeoutMs: v.EXECUTE_ITEM_TIMEOUT_MS,
    },
  };
}
