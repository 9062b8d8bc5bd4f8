/** The gateway's settings: every environment variable it reads, with kind, default and doc. */
import { GATEWAY_HOST, GATEWAY_PORT, HOST, PORT, localUrl } from './addresses.ts';
import { derived, defineSettings, integer, list, oneOf, secret, string, url } from './schema.ts';
import {
  LOG_FORMAT,
  LOG_LEVEL,
  LOG_REQUESTS,
  METRICS_TOKEN,
  OPS_TOKEN,
  REDIS_URL,
  SHUTDOWN_GRACE_MS,
  TRACING_SETTINGS,
} from './shared.ts';

const MiB = 1024 * 1024;
const HOUR = 3_600_000;

export const GATEWAY_SETTINGS = defineSettings(
  'gateway',
  {
    GATEWAY_HOST,
    GATEWAY_PORT,
    HOST: { ...HOST, doc: 'the control plane’s listening address; `CONTROL_PLANE_URL` follows it' },
    PORT: { ...PORT, doc: 'the control plane’s port; `CONTROL_PLANE_URL` follows it' },
    CONTROL_PLANE_URL: url({
      default: derived('`http://127.0.0.1:$PORT`', (v) => localUrl(v.HOST as string, v.PORT as number)),
      doc: 'where the control plane’s internal API lives; unset = the local control plane (at `HOST` when that names one address)',
    }),
    GATEWAY_PUBLIC_URL: url({
      base: true,
      default: derived('`http://127.0.0.1:$GATEWAY_PORT`', (v) =>
        localUrl(v.GATEWAY_HOST as string, v.GATEWAY_PORT as number),
      ),
      doc:
        'where MCP clients reach this gateway (the same value as the control plane’s): keyless MCP URLs are OAuth ' +
        'resources under it, and access tokens must be for them exactly',
    }),
    OAUTH_EXTERNAL_ISSUER: url({
      doc:
        'external authorization-server mode: the issuer whose access tokens the keyless MCP URLs take instead of the ' +
        'control plane’s (their metadata names it); unset = the control plane’s built-in server',
    }),
    OAUTH_EXTERNAL_JWKS_URL: url({
      doc: 'where OAUTH_EXTERNAL_ISSUER publishes its keys (required with it)',
    }),
    OAUTH_EXTERNAL_AUDIENCE: string({
      doc: 'the audience its tokens carry; unset = the keyless URL itself (RFC 8707), which is safer',
    }),
    OAUTH_EXTERNAL_USER_CLAIM: oneOf({
      values: ['sub', 'email'],
      default: 'sub',
      doc:
        'the claim that names the person: `sub` (linked when they signed in to the console through that provider) or ' +
        '`email` (their verified email)',
    }),
    INTERNAL_TOKEN: secret({
      requiredBecause: 'it is how the gateway reaches the control plane',
      doc: 'credential for the control plane’s `/internal/*` API (the same value on both); `pnpm start` generates one per start',
    }),
    OPS_TOKEN: {
      ...OPS_TOKEN,
      doc: 'credential for `POST /cache/invalidate`; unset = that route refuses everything',
    },
    METRICS_TOKEN,
    ...TRACING_SETTINGS,
    REDIS_URL: {
      ...REDIS_URL,
      doc:
        'Redis for exposure-change messages (channel `bindery:config-invalidate`, each confirmed on ' +
        '`bindery:config-invalidate:ack`), progressive session state and rate limits shared by the ' +
        'gateways; unset = HTTP only, state in memory, limits per gateway',
    },
    LOG_LEVEL,
    LOG_FORMAT,
    LOG_REQUESTS,
    GATEWAY_ALLOWED_HOSTS: list({
      doc: 'Host names the MCP endpoints answer besides localhost, 127.0.0.1 and ::1 (DNS-rebinding protection); `*` = any',
    }),
    GATEWAY_ALLOWED_ORIGINS: list({
      doc: 'browser origins allowed besides those on an allowed host (by the origin check and by CORS on the MCP endpoints and the REST entry: the admin console’s origin when it is on another host); `*` = any',
    }),
    GATEWAY_BODY_LIMIT_BYTES: integer({
      min: 1024,
      max: 256 * MiB,
      unit: 'bytes',
      default: 4 * MiB,
      doc: 'largest MCP request body (413 above)',
    }),
    SHUTDOWN_GRACE_MS,
    CONFIG_CACHE_MAX: integer({
      min: 1,
      max: 10_000_000,
      default: 10_000,
      doc: 'cached api_keys at most (least recently used out first)',
    }),
    CONFIG_CACHE_MAX_BYTES: integer({
      min: MiB,
      max: 64 * 1024 * MiB,
      unit: 'bytes',
      default: 128 * MiB,
      doc: 'cached configs’ estimated heap (2x their JSON) and their `tools/list` answers at most, least recently used out first',
    }),
    CONFIG_CACHE_TTL_MS: integer({
      min: 0,
      max: 24 * HOUR,
      unit: 'ms',
      default: 30_000,
      doc: 'how long a cached config is used before it is revalidated with its ETag',
    }),
    CONFIG_NEGATIVE_TTL_MS: integer({
      min: 0,
      max: HOUR,
      unit: 'ms',
      default: 5_000,
      doc: 'how long an unknown key stays known-unknown',
    }),
    UNKNOWN_KEY_LOOKUPS_PER_SECOND: integer({
      min: 0,
      max: 1_000_000,
      default: 50,
      doc: 'lookups of keys the cache does not know that find nothing, per gateway (429 beyond); 0 = off',
    }),
    UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND: integer({
      min: 0,
      max: 1_000_000,
      default: 10,
      doc: 'the same per client address (behind a proxy every client has the proxy’s address); 0 = off',
    }),
    GATEWAY_MAX_SESSIONS: integer({
      min: 1,
      max: 10_000_000,
      default: 10_000,
      doc: 'open MCP sessions at most; past it the least recently used idle one closes (about 32 KB each)',
    }),
    GATEWAY_MAX_SESSIONS_PER_KEY: integer({
      min: 1,
      max: 10_000_000,
      default: 1_000,
      doc: 'open sessions of one api_key at most, the same way',
    }),
    GATEWAY_SESSION_IDLE_MS: integer({
      min: 1_000,
      max: 7 * 24 * HOUR,
      unit: 'ms',
      default: 30 * 60_000,
      doc: 'a session unused this long closes',
    }),
    BREAKER_FAILURE_THRESHOLD: integer({
      min: 1,
      max: 1_000,
      default: 3,
      doc: 'control-plane failures in a row that open the circuit breaker',
    }),
    BREAKER_COOLDOWN_MS: integer({
      min: 50,
      max: 600_000,
      unit: 'ms',
      default: 500,
      doc: 'wait after the breaker opens before a health probe; doubles after each failed probe',
    }),
    BREAKER_MAX_COOLDOWN_MS: integer({
      min: 50,
      max: 600_000,
      unit: 'ms',
      default: derived('5,000 ms, or `$BREAKER_COOLDOWN_MS` if larger', (v) =>
        Math.max(5_000, v.BREAKER_COOLDOWN_MS as number),
      ),
      doc: 'the longest such wait (not below `BREAKER_COOLDOWN_MS`)',
    }),
    RATE_LIMIT_PER_SECOND: integer({
      min: 0,
      max: 1_000_000,
      default: 50,
      doc: 'per-api_key (and per personal key) token bucket: sustained requests per second (429 with Retry-After above), one budget across the gateways with `REDIS_URL`, per gateway without; 0 = off',
    }),
    RATE_LIMIT_BURST: integer({
      min: 1,
      max: 10_000_000,
      default: 100,
      doc: 'per-api_key token bucket: requests at once',
    }),
    RATE_LIMIT_REDIS_TIMEOUT_MS: integer({
      min: 10,
      max: 10_000,
      unit: 'ms',
      default: 200,
      doc: 'with `REDIS_URL`: a rate-limit check Redis has not answered within this falls back to this gateway’s own limits until Redis answers in time again',
    }),
    TOOL_CALL_TIMEOUT_MS: integer({
      min: 100,
      max: 600_000,
      unit: 'ms',
      default: 30_000,
      doc: 'a tool call slower than this answers `TIMEOUT`',
    }),
    TOOL_CALL_BATCH_MAX: integer({
      min: 0,
      max: 64,
      default: 32,
      doc: 'tool calls sent to the control plane together in one exchange at most, when several arrive at once (each still cut alone when cancelled; 0 or 1 = each alone)',
    }),
    CONFIG_TIMEOUT_MS: integer({
      min: 100,
      max: 60_000,
      unit: 'ms',
      default: 5_000,
      doc: 'a config lookup slower than this fails (retried once on a network fault)',
    }),
    CONTROL_PLANE_IDLE_PROBE_MS: integer({
      min: 100,
      max: HOUR,
      unit: 'ms',
      default: 10_000,
      doc: 'a health check of the control plane after this long without any answer from it, so `/readyz` turns `degraded` while no one calls',
    }),
    TOOLS_PAGE_SIZE: integer({
      min: 1,
      max: 100_000,
      default: 200,
      doc: 'items per page of `tools/list`, `prompts/list` and `resources/list` (`nextCursor` beyond)',
    }),
    CATALOG_SESSION_TTL_MS: integer({
      min: 1_000,
      max: 7 * 24 * HOUR,
      unit: 'ms',
      default: HOUR,
      doc: 'how long a progressive session’s state (its app, catalog answers) lives after its last change',
    }),
    CATALOG_SESSION_MAX_BYTES: integer({
      min: MiB,
      max: 64 * 1024 * MiB,
      unit: 'bytes',
      default: 64 * MiB,
      doc: 'progressive sessions’ state kept in the gateway (without Redis) at most',
    }),
    EXECUTE_RATE_PER_SECOND: integer({
      min: 0,
      max: 1_000_000,
      default: 20,
      doc: '`execute_apis` items per second, per session and per api_key (`RATE_LIMITED` above); 0 = off',
    }),
    EXECUTE_RATE_BURST: integer({
      min: 50,
      max: 10_000_000,
      default: 100,
      doc: '`execute_apis` items at once, per session and per api_key',
    }),
    EXECUTE_CONCURRENCY: integer({
      min: 1,
      max: 256,
      default: 8,
      doc: '`execute_apis` items of one call run at once',
    }),
    EXECUTE_ITEM_TIMEOUT_MS: integer({
      min: 100,
      max: 600_000,
      unit: 'ms',
      default: 30_000,
      doc: 'an `execute_apis` item slower than this fails alone (`TIMEOUT`, or `OUTCOME_UNKNOWN` for a write)',
    }),
  },
  [
    (v) =>
      v.BREAKER_MAX_COOLDOWN_MS < v.BREAKER_COOLDOWN_MS
        ? `BREAKER_MAX_COOLDOWN_MS (${v.BREAKER_MAX_COOLDOWN_MS}) must not be smaller than BREAKER_COOLDOWN_MS (${v.BREAKER_COOLDOWN_MS})`
        : undefined,
  ],
);
