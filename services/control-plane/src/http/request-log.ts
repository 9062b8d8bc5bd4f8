/**
 * What a request log line says about the request. Fastify's default logs the URL as is, and the
 * gateways' internal config lookups carry a full api_key in the path: here only its display prefix
 * is kept, so keys never reach log files (they are stored nowhere else in clear either).
 */
import { redactApiKeyInUrl } from '@bindery/contracts';
import type { FastifyRequest } from 'fastify';

const CODE_CALLBACKS = ['/api/v2/sign-in/oidc/callback', '/api/v2/upstream-oauth/callback'];

/** Fastify's request serializer with the URL masked. */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    // The external sign-in's and the upstream OAuth callbacks carry a code and state in their
    // query: never logged.
    url: CODE_CALLBACKS.some((path) => request.url.startsWith(path))
      ? `${request.url.split('?')[0]}?…`
      : redactApiKeyInUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
