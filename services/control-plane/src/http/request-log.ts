/**
 * What a request log line says about the request. Fastify's default logs the URL as is, and the
 * gateways' internal config lookups carry a full api_key in the path: here only its display prefix
 * is kept, so keys never reach log files (they are stored nowhere else in clear either).
 */
import { redactApiKeyInUrl } from '@bindery/contracts';
import type { FastifyRequest } from 'fastify';

/** Fastify's request serializer with the URL masked. */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    // The external sign-in's callback carries a code and state in its query: never logged.
    url: request.url.startsWith('/api/v2/sign-in/oidc/callback')
      ? '/api/v2/sign-in/oidc/callback?…'
      : redactApiKeyInUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
