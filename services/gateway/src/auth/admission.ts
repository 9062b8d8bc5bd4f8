/**
 * The checks every MCP request passes, shared by the Fastify routes and the fast lane so both
 * refuse alike: Host/Origin, the key, the rate limit, the exposure (cache, else control plane) and
 * its status. Each refusal is a JSON-RPC error answer with its HTTP status.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isWellFormedApiKey, isWellFormedPersonalKey, isWellFormedPlaygroundKey } from '@bindery/contracts';
import type { FastifyBaseLogger } from 'fastify';
import { CircuitOpenError, ControlPlaneError } from '../control-plane/errors.ts';
import {
  LookupsLimitedError,
  keyHash,
  type Credential,
  type Exposure,
  type ExposureCache,
} from '../control-plane/exposure-cache.ts';
import { JSONRPC, type JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';
import type { ResourceServer } from './oauth-resource.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { checkOrigin, type OriginPolicy } from '../http/origin-guard.ts';
import type { KeyLimiter } from '../http/rate-limit.ts';

export type Flavor = 'v2' | 'v1';

export const MISSING_KEY: JsonRpcErrorAnswer = {
  status: 401,
  code: JSONRPC.UNAUTHORIZED,
  message: 'send the api_key in the URL or as "Authorization: Bearer <api_key>"',
  bindery: 'UNAUTHORIZED',
  // RFC 6750 §3.1: a request without credentials gets the scheme and no error code. No
  // `resource_metadata` (RFC 9728): keyed URLs have no OAuth (keyless ones do), and naming none keeps MCP clients
  // from starting an authorization flow.
  headers: { 'www-authenticate': 'Bearer' },
};

/** A stream (GET), a close (DELETE) or a message for a session this replica does not hold. */
export const SESSION_NOT_FOUND: JsonRpcErrorAnswer = {
  status: 404,
  code: JSONRPC.UNAUTHORIZED,
  message:
    'session not found on this gateway (it ended, or was closed); send initialize without a session id to start a new one',
  bindery: 'NOT_FOUND',
};

const UPSTREAM_UNAVAILABLE: JsonRpcErrorAnswer = {
  status: 503,
  code: JSONRPC.UNAVAILABLE,
  message: 'the control plane is unavailable; try again shortly',
  bindery: 'UPSTREAM_FAILED',
  headers: { 'retry-after': '5' },
};

/** DNS-rebinding protection: a refusal when Host or Origin is not allowed. */
export function originRefusal(
  policy: OriginPolicy,
  headers: IncomingHttpHeaders,
): JsonRpcErrorAnswer | undefined {
  const reason = checkOrigin(policy, headers.host, headers.origin);
  return reason === undefined
    ? undefined
    : { status: 403, code: JSONRPC.FORBIDDEN, message: reason, bindery: 'FORBIDDEN' };
}

/** A personal key no user has (or one revoked), or one that cannot be a personal key at all. */
const UNKNOWN_PERSONAL_KEY: JsonRpcErrorAnswer = {
  status: 401,
  code: JSONRPC.UNAUTHORIZED,
  message:
    'unknown personal MCP key (revoked, rotated, or never issued): send a current one as "Authorization: Bearer <key>" (POST /api/v2/mcp-keys makes one)',
  bindery: 'UNAUTHORIZED',
  headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
};

/** A key no exposure has (on this URL), or one that cannot be a key at all. */
const UNKNOWN_KEY: JsonRpcErrorAnswer = {
  status: 401,
  code: JSONRPC.UNAUTHORIZED,
  message: "unknown api_key: check the MCP URL (or the Bearer token) against the exposure's current key",
  bindery: 'UNAUTHORIZED',
  headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
};

/**
 * Whether a v1 URL may serve this exposure: a legacy instance, or an AEI migrated from one (the
 * instance's old URL keeps working with the same key).
 */
function servedOnV1(exposure: Exposure): boolean {
  if (exposure.kind === 'legacy') return true;
  return exposure.kind === 'aei' && typeof exposure.config.aei.legacy_instance_id === 'string';
}

/**
 * Why an exposure may not be served on this URL (the v1 URL serves legacy instances and AEIs
 * migrated from them; the v2 URL serves AEIs and, by fallback, legacy ones), or undefined when it may.
 */
export function refusalFor(exposure: Exposure, flavor: Flavor): JsonRpcErrorAnswer | undefined {
  if (exposure.kind === 'unknown' || (flavor === 'v1' && !servedOnV1(exposure))) return UNKNOWN_KEY;
  const status = exposure.kind === 'aei' ? exposure.config.aei.status : exposure.config.instance.status;
  if (status !== 'enabled') {
    return {
      status: 403,
      code: JSONRPC.FORBIDDEN,
      message: 'this exposure is disabled; its owner can enable it again (status "enabled" in the admin API)',
      bindery: 'FORBIDDEN',
    };
  }
  return undefined;
}

/** What a credential is called in messages. */
export function credentialName(key: string | Credential): string {
  if (typeof key === 'string' || key.kind === 'api_key') return 'api_key';
  return key.kind === 'personal' ? 'personal key' : 'access token';
}

export type Admission = { exposure: Exposure; refusal?: undefined } | { refusal: JsonRpcErrorAnswer };

/**
 * A playground key in a URL's path: it belongs in `Authorization` only, so it stays out of the
 * access logs of proxies in front of the gateway (the gateway's own logs redact paths).
 */
export const PLAYGROUND_KEY_IN_PATH: JsonRpcErrorAnswer = {
  status: 401,
  code: JSONRPC.UNAUTHORIZED,
  message: 'a playground key goes in the Authorization header ("Bearer <key>"), never in the URL',
  bindery: 'UNAUTHORIZED',
  headers: { 'www-authenticate': 'Bearer error="invalid_request"' },
};

/**
 * Whether an api_key (or what stands in its place) has a shape the control plane issues for this
 * URL: an exposure's api_key, or on v2 URLs a playground key (the admin console's short-lived key
 * of an AEI, served like its api_key; v1 URLs never serve one).
 */
function wellFormedKey(key: string, flavor: Flavor): boolean {
  return isWellFormedApiKey(key) || (flavor === 'v2' && isWellFormedPlaygroundKey(key));
}

/**
 * Refuses a key not in the shape the control plane issues as unknown, at once (no lookup, no
 * rate-limit token); spends a rate-limit token, then finds what the key exposes (fresh cache
 * entry, else the control plane, else the last good entry) and checks it may be served on this
 * URL. A key the cache does not know, past a cap on lookups that find nothing (of the client's
 * `address`, or the gateway's), is refused with 429: it is not known to be bad.
 */
export async function admitKey(
  deps: {
    limiter: KeyLimiter;
    cache: ExposureCache;
    metrics: GatewayMetrics;
    log: FastifyBaseLogger;
    /** Present for OAuth credentials: how a refusal of one is said. */
    oauth?: ResourceServer;
  },
  key: string | Credential,
  hash: string,
  flavor: Flavor,
  address: string | undefined,
): Promise<Admission> {
  // An api_key comes as a string (the hot path: no object is made for it).
  const personal = typeof key !== 'string' && key.kind === 'personal';
  // An OAuth credential comes from a token already verified (auth/oauth-resource.ts).
  const wellFormed =
    typeof key === 'string'
      ? wellFormedKey(key, flavor)
      : key.kind === 'personal'
        ? isWellFormedPersonalKey(key.personalKey)
        : key.kind === 'oauth' || wellFormedKey(key.apiKey, flavor);
  if (!wellFormed) {
    deps.metrics.malformedKeys.inc();
    return { refusal: personal ? UNKNOWN_PERSONAL_KEY : UNKNOWN_KEY };
  }
  const taken = deps.limiter.take(
    typeof key !== 'string' && key.kind === 'personal' ? keyHash(key.personalKey) : hash,
  );
  // A promise only when the limit is shared and this gateway's share of it is spent.
  const wait = typeof taken === 'number' ? taken : await taken;
  if (wait > 0) {
    return {
      refusal: {
        status: 429,
        code: JSONRPC.RATE_LIMITED,
        message: `rate limit reached for this ${credentialName(key)}; retry in ${wait} s`,
        bindery: 'RATE_LIMITED',
        headers: { 'retry-after': String(wait) },
      },
    };
  }
  let exposure: Exposure;
  try {
    exposure = (await deps.cache.resolve(key, hash, flavor, address)).exposure;
  } catch (error) {
    if (error instanceof LookupsLimitedError) {
      return {
        refusal: {
          status: 429,
          code: JSONRPC.RATE_LIMITED,
          message: error.message,
          bindery: 'RATE_LIMITED',
          headers: { 'retry-after': String(error.retryAfterSeconds) },
        },
      };
    }
    if (!(error instanceof ControlPlaneError)) throw error;
    // While the breaker is open nothing was sent: that was logged once, when it opened.
    const level = error instanceof CircuitOpenError ? 'debug' : 'warn';
    deps.log[level]({ err: error.message }, 'control plane unavailable and no cached config for this key');
    return { refusal: UPSTREAM_UNAVAILABLE };
  }
  if (personal && exposure.kind === 'unknown') return { refusal: UNKNOWN_PERSONAL_KEY };
  if (typeof key !== 'string' && key.kind === 'oauth' && exposure.kind === 'unknown') {
    return {
      refusal: deps.oauth!.unauthorized(
        key.resourcePath,
        'the grant was revoked, or no longer opens this URL',
      ),
    };
  }
  const refusal = refusalFor(exposure, flavor);
  return refusal ? { refusal } : { exposure };
}
