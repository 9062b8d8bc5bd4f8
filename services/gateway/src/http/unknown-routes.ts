/**
 * Answers for requests no route takes: an unknown path is 404 `NOT_FOUND`, a known path with
 * another method 405 with `Allow` (Fastify itself answers both with its own 404 body). OAuth
 * discovery paths (`/.well-known/oauth-protected-resource`, `/.well-known/oauth-authorization-server`,
 * `/.well-known/openid-configuration`, with or without a path suffix) are unknown paths like any
 * other: the gateway has no OAuth, and a 404 tells a client to stop looking, with no key lookup
 * and no rate-limit token spent.
 */
import { redactApiKeyInUrl } from '@bindery/contracts';
import type { FastifyInstance } from 'fastify';
import { isMcpPath } from './mcp-paths.ts';
import { sendJsonRpcError, JSONRPC } from './jsonrpc-errors.ts';
import { sendRestError } from './rest-errors.ts';

/** A route pattern (`/api/v1/mcp/server/:api_key`) as a matcher of concrete paths. */
function matcherOf(pattern: string): RegExp {
  const escaped = pattern
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}$`);
}

/**
 * Registers the not-found handler; call before the routes are registered, so that every route
 * (and the methods it takes) is known to the 405 answer.
 */
export function registerUnknownRoutes(app: FastifyInstance): void {
  const routes = new Map<string, { matcher: RegExp; methods: Set<string> }>();
  app.addHook('onRoute', (route) => {
    const entry = routes.get(route.url) ?? { matcher: matcherOf(route.url), methods: new Set<string>() };
    for (const method of [route.method].flat()) entry.methods.add(method);
    routes.set(route.url, entry);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    // The path may hold a key (an OAuth probe with the MCP URL as suffix): echoed only redacted.
    const shown = redactApiKeyInUrl(path);
    const allowed = [...routes.values()].find((r) => r.matcher.test(path))?.methods;
    if (allowed) {
      const allow = [...allowed].sort().join(', ');
      const message = `${request.method} is not served at this path; it takes ${allow}`;
      // An MCP endpoint refuses in JSON-RPC, as everything else it answers.
      return isMcpPath(path)
        ? sendJsonRpcError(reply, {
            status: 405,
            code: JSONRPC.INVALID_REQUEST,
            message,
            bindery: 'VALIDATION_FAILED',
            headers: { allow },
          })
        : sendRestError(request, reply, {
            status: 405,
            code: 'VALIDATION_FAILED',
            message,
            headers: { allow },
          });
    }
    const message = path.startsWith('/.well-known/')
      ? `no route ${request.method} ${shown}: keyed MCP URLs have no OAuth (keyless ones, /api/v2/mcp/aei/{aei_id}, do); authenticate with the api_key in the URL or as "Authorization: Bearer <api_key>"`
      : `no route ${request.method} ${shown}`;
    return sendRestError(request, reply, { status: 404, code: 'NOT_FOUND', message });
  });
}
