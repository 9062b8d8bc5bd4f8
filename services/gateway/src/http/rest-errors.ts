/**
 * The gateway's REST error body, `{"error": {code, message, request_id}}`, for every route that is
 * not an MCP endpoint (ops routes, unknown paths, OAuth discovery paths): the same shape the
 * control plane answers, so an operator reads one format whichever service refused.
 */
import type { Socket } from 'node:net';
import type { ErrorBody, ErrorCode } from '@bindery/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';

export function sendRestError(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: { status: number; code: ErrorCode; message: string; headers?: Record<string, string> },
): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  const body: ErrorBody = {
    error: { code: answer.code, message: answer.message, request_id: String(request.id) },
  };
  return reply.status(answer.status).send(body);
}

/**
 * For Fastify's `clientErrorHandler`: a request Node could not parse as HTTP (an unknown method,
 * headers over the size limit, a request that did not arrive in time). There is no request yet, so
 * no request id; the connection is closed after the answer, as Node does.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'the request did not arrive whole in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'the request headers are too large']
        : [400, 'Bad Request', 'the request is not valid HTTP (an unknown method, or malformed)'];
  const body = JSON.stringify({ error: { code: 'VALIDATION_FAILED', message } } satisfies ErrorBody);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
