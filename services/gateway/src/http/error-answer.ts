/**
 * What a failure met while reading a request (its body, its schema) answers, whichever shape
 * carries it (a JSON-RPC error on an MCP endpoint, the REST body elsewhere), or undefined for a
 * failure of the gateway itself.
 */
import type { FastifyError } from 'fastify';
import { JSONRPC, PARSE_ERROR, type JsonRpcErrorAnswer } from './jsonrpc-errors.ts';
import { BodyRefused } from './json-body.ts';

export function errorAnswer(error: FastifyError, bodyLimitBytes: number): JsonRpcErrorAnswer | undefined {
  if (error instanceof BodyRefused) return error.answer;
  if (
    error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    (error instanceof SyntaxError && error.statusCode === 400)
  ) {
    return PARSE_ERROR;
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return {
      status: 413,
      code: JSONRPC.INVALID_REQUEST,
      message: `request body over ${bodyLimitBytes} bytes (GATEWAY_BODY_LIMIT_BYTES)`,
      bindery: 'PAYLOAD_TOO_LARGE',
    };
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return {
      status: 415,
      code: JSONRPC.INVALID_REQUEST,
      message: 'send the body as application/json',
      bindery: 'VALIDATION_FAILED',
    };
  }
  if (error.validation) {
    return {
      status: 400,
      code: JSONRPC.INVALID_REQUEST,
      message: error.message,
      bindery: 'VALIDATION_FAILED',
    };
  }
  return undefined;
}
