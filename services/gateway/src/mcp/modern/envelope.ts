/**
 * Which era a POST speaks, and whether a modern one may be served (MCP 2026-07-28,
 * `basic/versioning.mdx`, `basic/transports/streamable-http.mdx`).
 *
 * A request whose `_meta` carries `io.modelcontextprotocol/protocolVersion` is modern: served
 * statelessly, once its envelope, version and standard headers hold. Everything else is legacy
 * (an `initialize` opens a session, exactly as before), so both eras share one endpoint. The order
 * of the checks is the reference SDK's (`classifyInboundRequest`), which the conformance suite
 * follows: envelope, header against body, version, then the method and name headers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { LoggingLevel, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JSONRPC, type JsonRpcErrorAnswer } from '../../http/jsonrpc-errors.ts';
import { LOG_LEVELS, decodeHeaderValue, isLogLevel, undecodableHeader } from '@bindery/contracts';

/** The modern revisions the gateway serves, newest first. */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];

/** The `_meta` keys of the modern era. */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The modern era's own error codes. */
export const MODERN_ERRORS = {
  HEADER_MISMATCH: -32020,
  MISSING_REQUIRED_CLIENT_CAPABILITY: -32021,
  UNSUPPORTED_PROTOCOL_VERSION: -32022,
} as const;

/** What a modern request says of its client, lifted from its `_meta`. */
export interface Envelope {
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientInfo?: { name: string; version?: string };
  /** The level of log messages it wants on its own stream; none without it. */
  logLevel?: LoggingLevel;
}

export interface ModernRequest {
  jsonrpc: '2.0';
  /** Absent for a notification. */
  id?: RequestId;
  method: string;
  params: Record<string, unknown> & { _meta: Record<string, unknown> };
}

export type Era =
  | { era: 'legacy' }
  | { era: 'modern'; message: ModernRequest; envelope: Envelope }
  | { era: 'refused'; id: RequestId | null; refusal: JsonRpcErrorAnswer };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A claim to the modern era: `_meta` names a protocol version. */
function claimsModern(message: unknown): boolean {
  if (!isObject(message) || !isObject(message.params)) return false;
  const meta = message.params._meta;
  return isObject(meta) && meta[META.protocolVersion] !== undefined;
}

/** The header's one value (a repeated header is not one). */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** Whether a version string names the modern era or later (they are dates). */
const modernOrLater = (version: string) => /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= '2026-07-28';

const shown = (value: string) => (value.length > 60 ? `${value.slice(0, 60)}...` : value);

function refusal(
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
): JsonRpcErrorAnswer {
  return { status, code, message, bindery: 'VALIDATION_FAILED', ...(data && { data }) };
}

/** The envelope of a modern request's `_meta`, or what is wrong with it. */
function envelopeOf(meta: Record<string, unknown>): Envelope | string {
  const version = meta[META.protocolVersion];
  if (typeof version !== 'string' || version === '') return `${META.protocolVersion} must be a string`;
  const capabilities = meta[META.clientCapabilities];
  if (!isObject(capabilities)) return `${META.clientCapabilities} must be an object ({} for none)`;
  const envelope: Envelope = { protocolVersion: version, clientCapabilities: capabilities };
  const info = meta[META.clientInfo];
  if (info !== undefined) {
    if (!isObject(info) || typeof info.name !== 'string') return `${META.clientInfo} must name the client`;
    envelope.clientInfo = {
      name: info.name,
      ...(typeof info.version === 'string' && { version: info.version }),
    };
  }
  const level = meta[META.logLevel];
  if (level !== undefined) {
    if (!isLogLevel(level)) return `${META.logLevel} must be one of ${LOG_LEVELS.join(', ')}`;
    envelope.logLevel = level;
  }
  return envelope;
}

/** The header a method's name travels in, and the param it must equal. */
const NAMED: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  // The tasks extension routes by task (SEP-2663, "Streamable HTTP: Routing Headers").
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** The era of a POST's parsed body (a JSON-RPC message or batch), and the modern request if it is one. */
export function eraOf(body: unknown, headers: IncomingHttpHeaders): Era {
  if (Array.isArray(body)) {
    if (!body.some(claimsModern)) return { era: 'legacy' };
    return {
      era: 'refused',
      id: null,
      refusal: refusal(400, JSONRPC.INVALID_REQUEST, 'Invalid Request: a batch cannot carry modern requests'),
    };
  }
  const versionHeader = header(headers, 'mcp-protocol-version');
  if (!isObject(body) || typeof body.method !== 'string') return { era: 'legacy' };
  const id = (
    typeof body.id === 'string' || typeof body.id === 'number' ? body.id : null
  ) as RequestId | null;
  if (!claimsModern(body)) {
    // A modern version in the header of a request without the modern envelope is neither era's.
    if (versionHeader !== undefined && modernOrLater(versionHeader) && body.method !== 'initialize') {
      return {
        era: 'refused',
        id,
        refusal: refusal(
          400,
          JSONRPC.INVALID_PARAMS,
          `Invalid params: MCP-Protocol-Version ${shown(versionHeader)} needs _meta["${META.protocolVersion}"] in the request`,
        ),
      };
    }
    return { era: 'legacy' };
  }
  const params = body.params as ModernRequest['params'];
  const envelope = envelopeOf(params._meta);
  if (typeof envelope === 'string') {
    return {
      era: 'refused',
      id,
      refusal: refusal(400, JSONRPC.INVALID_PARAMS, `Invalid params: ${envelope}`),
    };
  }
  const mismatch = (message: string) => ({
    era: 'refused' as const,
    id,
    refusal: refusal(400, MODERN_ERRORS.HEADER_MISMATCH, `Header mismatch: ${message}`),
  });
  if (versionHeader !== envelope.protocolVersion) {
    return mismatch(
      versionHeader === undefined
        ? 'the MCP-Protocol-Version header is missing'
        : `MCP-Protocol-Version header value '${shown(versionHeader)}' does not match body value '${shown(envelope.protocolVersion)}'`,
    );
  }
  if (!MODERN_PROTOCOL_VERSIONS.includes(envelope.protocolVersion)) {
    return {
      era: 'refused',
      id,
      refusal: refusal(400, MODERN_ERRORS.UNSUPPORTED_PROTOCOL_VERSION, 'Unsupported protocol version', {
        supported: [...MODERN_PROTOCOL_VERSIONS],
        requested: envelope.protocolVersion,
      }),
    };
  }
  // Mcp-Method is compared as sent: only Mcp-Name and Mcp-Param-* may use the Base64 wrapping.
  const method = header(headers, 'mcp-method');
  if (method !== body.method) {
    return mismatch(
      method === undefined
        ? 'the Mcp-Method header is missing'
        : `Mcp-Method header value '${shown(method)}' does not match body value '${shown(body.method)}'`,
    );
  }
  const named = NAMED[body.method];
  if (named !== undefined) {
    const sent = header(headers, 'mcp-name');
    if (sent === undefined) return mismatch('the Mcp-Name header is missing');
    // The spec's value encoding, shared with Mcp-Param-*: plain (visible ASCII, space, tab), or
    // canonical Base64 of UTF-8 in `=?base64?...?=`; anything else is refused, not read leniently.
    const name = decodeHeaderValue(sent);
    if (name === undefined) return mismatch(undecodableHeader('Mcp-Name'));
    const value = params[named];
    if (name !== value) {
      return mismatch(
        `Mcp-Name header value '${shown(name)}' does not match body value '${shown(String(value))}'`,
      );
    }
  }
  return { era: 'modern', message: body as unknown as ModernRequest, envelope };
}
