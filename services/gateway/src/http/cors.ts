/**
 * CORS for browsers on the MCP endpoints and the REST entry (never the ops routes), so a page such
 * as the admin console (served by the control plane at its own origin) can call the gateway with
 * the MCP SDK's client or fetch. `@fastify/cors` answers preflights and adds the headers; the
 * origins it allows are exactly those the origin guard lets through (`checkOrigin` with the
 * gateway's policy: an origin on an allowed host, or one listed in GATEWAY_ALLOWED_ORIGINS), so
 * CORS and the guard never disagree:
 * - an allowed origin's preflight is answered 204 by the plugin's hook, before any route (the
 *   guard, the key and the rate limit are for the actual request, which a preflight never is);
 * - a refused origin gets no CORS headers at all (the browser refuses to send or read), its
 *   preflight is the path's usual 405, and the guard still refuses its actual request (403).
 * Credentials are headers (`Authorization: Bearer`), never cookies, so no
 * `Access-Control-Allow-Credentials`. Hijacked answers (the MCP routes write to the raw response)
 * carry the headers through `keepReplyHeaders`. Browser requests never take the fast lane, which
 * answers before the framework (see fast-lane.ts).
 */
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import { CALLER_HEADER, REST_PATH } from '@bindery/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isMcpPath } from './mcp-paths.ts';
import { checkOrigin, type OriginPolicy } from './origin-guard.ts';

/** What a browser may send besides the CORS-safelisted headers. */
export const CORS_ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  // The modern era's standard headers (2026-07-28).
  'mcp-method',
  'mcp-name',
  'last-event-id',
  CALLER_HEADER,
];
/** What a browser's script may read of an answer besides the safelisted headers. */
export const CORS_EXPOSED_HEADERS = [
  'mcp-session-id',
  'mcp-protocol-version',
  'www-authenticate',
  'retry-after',
];
const METHODS = ['GET', 'POST', 'DELETE'];
/** How long a browser may reuse a preflight's answer (browsers cap it lower: Chromium at 2 h). */
const PREFLIGHT_MAX_AGE_S = 600;

/** True for a path the CORS rules cover: the MCP endpoints and the REST entry. */
export function isCorsPath(url: string): boolean {
  if (isMcpPath(url)) return true;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.startsWith(`${REST_PATH}/`);
}

const DISABLED: FastifyCorsOptions = { origin: false };

/**
 * Registers the plugin on `scope` (an encapsulated context holding the MCP and REST routes: its
 * hook runs for their requests only, and for preflights on any path, which it answers only on
 * theirs).
 */
export async function registerCors(scope: FastifyInstance, policy: OriginPolicy): Promise<void> {
  const allowed: FastifyCorsOptions = {
    // Reflects the request's Origin (only an allowed one gets here).
    origin: true,
    methods: METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_S,
    strictPreflight: false,
  };
  await scope.register(cors, {
    delegator: (request: FastifyRequest, callback) => {
      const origin = request.headers.origin;
      const ok =
        origin !== undefined &&
        isCorsPath(request.url) &&
        checkOrigin(policy, request.headers.host, origin) === undefined;
      callback(null, ok ? allowed : DISABLED);
    },
  });
}

/**
 * Copies the headers set on the reply so far (CORS's, by the plugin's hook) onto the raw response,
 * for a route that hijacks the reply and writes the raw response itself.
 */
export function keepReplyHeaders(reply: FastifyReply): void {
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) reply.raw.setHeader(name, value);
  }
}
