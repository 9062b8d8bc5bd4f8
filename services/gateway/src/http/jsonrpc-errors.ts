/**
 * HTTP answers carrying a JSON-RPC error, for everything refused before the MCP layer (wrong key,
 * disabled exposure, bad Origin, malformed JSON, oversized body, rate limit, control plane down).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';

/** JSON-RPC codes: the spec's, and -32001..-32099 for server-defined errors. */
export const JSONRPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  UNAUTHORIZED: -32001,
  FORBIDDEN: -32003,
  /** MCP's code for a resource that does not exist. */
  RESOURCE_NOT_FOUND: -32002,
  RATE_LIMITED: -32029,
  UNAVAILABLE: -32050,
} as const;

export interface JsonRpcErrorAnswer {
  status: number;
  code: number;
  message: string;
  /** The DESIGN.md error code, for clients that read `data`. */
  bindery: string;
  /** More for `data`, beside `code` (such as the supported protocol versions). */
  data?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** Malformed JSON in a request body. */
export const PARSE_ERROR: JsonRpcErrorAnswer = {
  status: 400,
  code: JSONRPC.PARSE_ERROR,
  message: 'Parse error: the body is not valid JSON',
  bindery: 'VALIDATION_FAILED',
};

/** A failure of the gateway itself (logged where it happens). */
export const INTERNAL_ERROR: JsonRpcErrorAnswer = {
  status: 500,
  code: JSONRPC.INTERNAL_ERROR,
  message: 'internal error in the gateway (it is logged); try again, and report it if it persists',
  bindery: 'INTERNAL',
};

/**
 * The JSON-RPC error object of an answer: no request id when it is refused before one is known,
 * the request's own where it is (the modern era's refusals).
 */
export function jsonRpcErrorBody(answer: JsonRpcErrorAnswer, id: string | number | null = null) {
  return {
    jsonrpc: '2.0',
    id,
    error: { code: answer.code, message: answer.message, data: { ...answer.data, code: answer.bindery } },
  } as const;
}

export function sendJsonRpcError(
  reply: FastifyReply,
  answer: JsonRpcErrorAnswer,
  id: string | number | null = null,
): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  return reply.status(answer.status).send(jsonRpcErrorBody(answer, id));
}

/** The same answer on a raw Node response (the routes' fast lane, which bypasses Fastify). */
export function writeJsonRpcError(
  res: ServerResponse,
  answer: JsonRpcErrorAnswer,
  id: string | number | null = null,
): void {
  res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
  res.end(JSON.stringify(jsonRpcErrorBody(answer, id)));
}

/**
 * A gateway fault while serving a request outside Fastify's reply (fast lane, hijacked routes):
 * logged, and answered with INTERNAL_ERROR unless the answer had already begun (then the
 * connection is cut, which the client sees as a failed request).
 */
export function answerFault(res: ServerResponse, log: FastifyBaseLogger, error: unknown): void {
  log.error({ err: error }, 'unhandled error');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  writeJsonRpcError(res, INTERNAL_ERROR);
}
