/**
 * The 2026-07-28 era as the relay sees it: which client requests are modern (their `_meta` names a
 * protocol version, as the gateway decides too), and, for a gateway that only speaks the 2025 era,
 * how a modern request becomes a request on a legacy session and its answer a modern one.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/client';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { RpcError } from './connection.ts';

/** The modern revision the relay serves. */
export const MODERN_VERSION = '2026-07-28';

/** JSON-RPC codes of the modern era's refusals. */
const METHOD_NOT_FOUND = -32601;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** Methods the modern era removed: a modern request for one is answered -32601. */
const REMOVED_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
]);

/** What a modern request says of its client in `params._meta`. */
export interface Envelope {
  version: string;
  capabilities: Record<string, unknown>;
  clientInfo: { name: string; version: string } | undefined;
}

const metaOf = (request: JSONRPCRequest) =>
  (request.params as { _meta?: Record<string, unknown> } | undefined)?._meta;

/** The request's modern envelope, or undefined for a 2025-era request. */
export function envelopeOf(request: JSONRPCRequest): Envelope | undefined {
  const meta = metaOf(request);
  const version = meta?.[PROTOCOL_VERSION_META_KEY];
  if (typeof version !== 'string') return undefined;
  const capabilities = meta?.[CLIENT_CAPABILITIES_META_KEY];
  const info = meta?.[CLIENT_INFO_META_KEY] as { name?: unknown; version?: unknown } | undefined;
  return {
    version,
    capabilities:
      capabilities && typeof capabilities === 'object' ? (capabilities as Record<string, unknown>) : {},
    clientInfo:
      typeof info?.name === 'string' && typeof info.version === 'string'
        ? { name: info.name, version: info.version }
        : undefined,
  };
}

/** The `_meta` of the relay's own `server/discover`, naming the client it relays for. */
export function probeMeta(envelope: Envelope): Record<string, unknown> {
  return {
    [PROTOCOL_VERSION_META_KEY]: MODERN_VERSION,
    [CLIENT_CAPABILITIES_META_KEY]: envelope.capabilities,
    ...(envelope.clientInfo && { [CLIENT_INFO_META_KEY]: envelope.clientInfo }),
  };
}

/** Whether a `server/discover` result offers the modern revision the relay serves. */
export function offersModern(result: Record<string, unknown>): boolean {
  const versions = result.supportedVersions;
  return Array.isArray(versions) && versions.includes(MODERN_VERSION);
}

// Bridging a modern client to a 2025-era gateway ------------------------------------------------

/**
 * The refusal of a modern request a legacy session cannot carry, in the order the gateway checks:
 * a version the relay does not serve (-32022), then a method the modern era removed (-32601).
 */
export function bridgeRefusal(request: JSONRPCRequest, envelope: Envelope): RpcError | undefined {
  if (envelope.version !== MODERN_VERSION) {
    return {
      code: UNSUPPORTED_PROTOCOL_VERSION,
      message: `Unsupported protocol version: ${envelope.version.slice(0, 100)}`,
      data: { supported: [MODERN_VERSION], requested: envelope.version },
    };
  }
  if (REMOVED_METHODS.has(request.method)) {
    return { code: METHOD_NOT_FOUND, message: `Method not found: ${request.method.slice(0, 100)}` };
  }
  return undefined;
}

/** The initialize a legacy session is opened with on behalf of a modern client. */
export function bridgeInitialize(envelope: Envelope): JSONRPCRequest {
  return {
    jsonrpc: '2.0',
    id: 'bindery-mcp-bridge',
    method: 'initialize',
    params: {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: envelope.capabilities,
      clientInfo: envelope.clientInfo ?? { name: 'bindery-mcp', version: '0.1.0' },
    },
  };
}

/** The request as a legacy session takes it: the envelope's keys left out of `_meta`. */
export function withoutEnvelope(request: JSONRPCRequest): JSONRPCRequest {
  const meta = metaOf(request);
  if (!meta) return request;
  const {
    [PROTOCOL_VERSION_META_KEY]: _version,
    [CLIENT_CAPABILITIES_META_KEY]: _capabilities,
    [CLIENT_INFO_META_KEY]: _info,
    ...rest
  } = meta;
  const { _meta: _dropped, ...params } = request.params as Record<string, unknown>;
  return { ...request, params: { ...params, ...(Object.keys(rest).length > 0 && { _meta: rest }) } };
}

/** `server/discover` answered from the legacy session's initialize result (not to be cached). */
export function discoverFromInitialize(initialized: Record<string, unknown>): Record<string, unknown> {
  const capabilities = { ...(initialized.capabilities as Record<string, unknown> | undefined) };
  // Neither can be delivered to a modern client (it would need subscriptions/listen).
  delete capabilities.logging;
  for (const name of ['tools', 'prompts', 'resources'] as const) {
    const capability = capabilities[name] as Record<string, unknown> | undefined;
    if (capability) {
      const { listChanged: _listChanged, subscribe: _subscribe, ...rest } = capability;
      capabilities[name] = rest;
    }
  }
  return {
    supportedVersions: [MODERN_VERSION],
    capabilities,
    ...(typeof initialized.instructions === 'string' && { instructions: initialized.instructions }),
    resultType: 'complete',
    ttlMs: 0,
    cacheScope: 'private',
    _meta: { [SERVER_INFO_META_KEY]: initialized.serverInfo },
  };
}

/** Results a modern client may cache (`ttlMs` and `cacheScope` are required on them). */
const CACHEABLE: ReadonlySet<string> = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/**
 * The legacy session's result of `method` as a modern client expects it. A cacheable one may not
 * be cached (ttlMs 0): without the session's notifications the relay cannot tell when it changes.
 */
export function modernResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
  return {
    ...result,
    resultType: 'complete',
    ...(CACHEABLE.has(method) && { ttlMs: 0, cacheScope: 'private' }),
  };
}
