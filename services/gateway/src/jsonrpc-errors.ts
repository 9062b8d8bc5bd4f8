/**
 * HTTP answers carrying a JSON-RPC error, for everything refused before the MCP layer (wrong key,
 * disabled exposure, bad Origin, malformed JSON, oversized body, rate limit, control plane down).
 */
import type { FastifyReply } from 'fastify';

/** JSON-RPC codes: the spec's, and -32001..-32099 for server-defined errors. */
export const JSONRPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  INTERNAL_ERROR: -32603,
  UNAUTHORIZED: -32001,
  FORBIDDEN: -32003,
  RATE_LIMITED: -32029,
  UNAVAILABLE: -32050,
} as const;

export interface JsonRpcErrorAnswer {
  status: number;
  code: number;
  message: string;
  /** The DESIGN.md error code, for clients that read `data`. */
  bindery: string;
  headers?: Record<string, string>;
}

export function sendJsonRpcError(reply: FastifyReply, answer: JsonRpcErrorAnswer): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  return reply.status(answer.status).send({
    jsonrpc: '2.0',
    id: null,
    error: { code: answer.code, message: answer.message, data: { code: answer.bindery } },
  });
}
