/**
 * The `MCP-Protocol-Version` header (Streamable HTTP transport, 2025-06-18 and later): after
 * initialize a client sends the version it negotiated with every request. A request whose header
 * names a version the MCP SDK does not support is refused with 400; a request without the header
 * is taken as 2025-03-26, the version before the header existed. The initialize request itself is
 * not checked: its body negotiates the version (an unknown one gets the latest back).
 *
 * The SDK's transport makes the same check, but only on the requests that reach it; the gateway
 * makes it in front of every path (fast lane, direct answer, SDK transport with or without a
 * session), so each answers alike, in the gateway's refusal shape. The list of versions is the
 * SDK's own.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { JSONRPC, type JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';

/** The version a request without the header is taken to speak. */
export const ASSUMED_PROTOCOL_VERSION = DEFAULT_NEGOTIATED_PROTOCOL_VERSION;

/** True when the request's header is absent or names a version the SDK supports. */
export function speaksSupportedVersion(headers: IncomingHttpHeaders): boolean {
  const version = headers['mcp-protocol-version'];
  return version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(String(version));
}

/**
 * The 400 refusal of a request whose `MCP-Protocol-Version` header names no supported version;
 * undefined when it may go on. `initialize`: the request is an initialize (not checked).
 */
export function protocolVersionRefusal(
  headers: IncomingHttpHeaders,
  initialize: boolean,
): JsonRpcErrorAnswer | undefined {
  if (initialize || speaksSupportedVersion(headers)) return undefined;
  const version = String(headers['mcp-protocol-version']);
  // Echoed in the message: bounded, so a long header does not make a long answer.
  const shown = version.length > 40 ? `${version.slice(0, 40)}...` : version;
  return {
    status: 400,
    code: JSONRPC.INVALID_REQUEST,
    message:
      `Invalid Request: unsupported MCP-Protocol-Version ${JSON.stringify(shown)}; supported versions: ` +
      `${SUPPORTED_PROTOCOL_VERSIONS.join(', ')} (without the header, ${ASSUMED_PROTOCOL_VERSION} is assumed)`,
    bindery: 'VALIDATION_FAILED',
    data: { supported_versions: [...SUPPORTED_PROTOCOL_VERSIONS] },
  };
}
