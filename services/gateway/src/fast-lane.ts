/**
 * The fast lane: a POST on a session this replica holds, for a key whose config is cached and
 * fresh, is served straight from Node's request event, before Fastify. On a two-core machine the
 * framework's per-request work (routing, hooks, reply and logger objects) was a measurable part of
 * what the gateway adds to a tool call, and this is the request every agent sends most.
 *
 * The lane makes the same checks as the routes, in the same order, and takes a request only when
 * every one of them passes; anything it does not take (an unknown session, a stale cache entry,
 * a refused Origin, a rate limit, an odd body) goes to Fastify untouched, which produces every
 * refusal. Once taken, a request is answered directly (`direct-answer.ts`) or handed to the
 * session's SDK transport with its parsed body, exactly as the routes do.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken, redactApiKeyInUrl } from '@bindery/contracts';
import type { FastifyBaseLogger } from 'fastify';
import sjson from 'secure-json-parse';
import type { GatewayConfig } from './config.ts';
import {
  acceptsDirectAnswer,
  directAnswer,
  refusalFor,
  writeDirectAnswer,
  type Flavor,
} from './direct-answer.ts';
import { keyHash, type Exposure, type ExposureCache } from './exposure-cache.ts';
import { INTERNAL_ERROR, PARSE_ERROR, writeJsonRpcError } from './jsonrpc-errors.ts';
import type { GatewayMetrics } from './metrics.ts';
import { checkOrigin } from './origin-guard.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Session, SessionRegistry } from './sessions.ts';

export interface FastLaneDeps {
  config: GatewayConfig;
  cache: ExposureCache;
  sessions: SessionRegistry;
  limiter: RateLimiter;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
}

const V2 = '/api/v2/mcp/server';
const V1 = '/api/v1/mcp/server';

/** The MCP route patterns, as Fastify names them in metrics. */
export const MCP_ROUTES = { bearer: V2, v2: `${V2}/:api_key`, v1: `${V1}/:api_key` } as const;

interface Target {
  flavor: Flavor;
  /** The key in the path; undefined on the bearer route. */
  pathKey: string | undefined;
  route: string;
}

/** Which MCP route a URL names, as Fastify would route it; undefined when unsure. */
function targetOf(url: string): Target | undefined {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === V2) return { flavor: 'v2', pathKey: undefined, route: MCP_ROUTES.bearer };
  let flavor: Flavor;
  let raw: string;
  if (path.startsWith(`${V2}/`)) {
    flavor = 'v2';
    raw = path.slice(V2.length + 1);
  } else if (path.startsWith(`${V1}/`)) {
    flavor = 'v1';
    raw = path.slice(V1.length + 1);
  } else {
    return undefined;
  }
  if (raw === '' || raw.includes('/') || raw.includes('%') || raw.includes(';')) return undefined;
  return { flavor, pathKey: raw, route: flavor === 'v2' ? MCP_ROUTES.v2 : MCP_ROUTES.v1 };
}

function isJson(contentType: string | undefined): boolean {
  return contentType === 'application/json' || (contentType?.startsWith('application/json;') ?? false);
}

/** Fastify's own JSON parsing rules: prototype poisoning is refused, as a parse error. */
function parseBody(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }) };
  } catch {
    return { ok: false };
  }
}

export interface FastLane {
  /** Takes `req` (and answers it) or answers false and leaves it untouched for Fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean;
  /** Stops taking requests (the gateway is closing; Fastify answers them from now on). */
  stop(): void;
}

export function createFastLane(deps: FastLaneDeps): FastLane {
  const { config, cache, sessions, limiter, metrics, log } = deps;
  const cacheHit = metrics.cache.labels('hit');
  let open = true;

  function finished(req: IncomingMessage, res: ServerResponse, route: string, started: number): void {
    metrics.requests.inc({ route, status: String(res.statusCode), lane: 'fast' });
    if (config.logRequests) {
      log.info(
        {
          req: {
            method: req.method,
            url: redactApiKeyInUrl(req.url ?? ''),
            remoteAddress: req.socket.remoteAddress,
          },
          res: { statusCode: res.statusCode },
          responseTime: performance.now() - started,
        },
        'request completed',
      );
    }
  }

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    text: string,
    session: Session,
    exposure: Exposure,
    route: string,
    started: number,
  ): Promise<void> {
    const parsed = parseBody(text);
    if (!parsed.ok) {
      writeJsonRpcError(res, PARSE_ERROR);
      finished(req, res, route, started);
      return;
    }
    let viaTransport = false;
    try {
      const answer = directAnswer(session, exposure, parsed.value, req.headers);
      if (answer) {
        writeDirectAnswer(res, session, await answer);
        finished(req, res, route, started);
        return;
      }
      viaTransport = true;
      res.once('close', () => finished(req, res, route, started));
      await session.transport.handleRequest(req, res, parsed.value);
    } catch (error) {
      log.error({ err: error }, 'unhandled error');
      if (res.headersSent) {
        res.destroy();
        return;
      }
      writeJsonRpcError(res, INTERNAL_ERROR);
      if (!viaTransport) finished(req, res, route, started);
    }
  }

  function take(req: IncomingMessage, res: ServerResponse): boolean {
    if (!open || req.method !== 'POST') return false;
    const target = targetOf(req.url ?? '');
    if (!target) return false;
    const { headers } = req;
    const sessionId = headers['mcp-session-id'];
    if (typeof sessionId !== 'string' || !isJson(headers['content-type']) || !acceptsDirectAnswer(headers)) {
      return false;
    }
    // A body the lane can read whole within the limit; chunked or empty ones go to Fastify.
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length) || length <= 0 || length > config.bodyLimitBytes) return false;
    if (checkOrigin(config, headers.host, headers.origin) !== undefined) return false;
    const apiKey = target.pathKey ?? bearerToken(headers.authorization);
    if (!apiKey) return false;
    const hash = keyHash(apiKey);
    const session = sessions.get(sessionId, hash);
    if (!session) return false;
    const exposure = cache.peek(hash);
    if (!exposure || refusalFor(exposure, target.flavor) !== undefined) return false;
    if (limiter.take(hash) > 0) return false; // nothing taken: Fastify answers 429
    cacheHit.inc();

    const started = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      void serve(req, res, text, session, exposure, target.route, started);
    });
    return true;
  }

  return {
    take,
    stop: () => {
      open = false;
    },
  };
}
