/**
 * The fast lane: a POST on a session this replica holds, or a modern (MCP 2026-07-28) request on
 * the api_key route, for a key whose config is cached and fresh, is served straight from Node's
 * request event, before Fastify. On a two-core machine the
 * framework's per-request work (routing, hooks, reply and logger objects) was a measurable part of
 * what the gateway adds to a tool call, and this is the request every agent sends most.
 *
 * When the headers arrive, the lane predicts from them, without spending a token, whether the
 * routes' checks would pass; if any would refuse (two Host headers, Host/Origin, key, rate limit,
 * cache, exposure status, session), or the body is not plain JSON of a known length within the
 * limit, or it comes from a browser (an Origin header: its answer needs CORS headers), the request
 * goes to Fastify untouched, which produces every refusal. A taken request's body is parsed and
 * checked by the routes' own functions (`http/json-body.ts`, `mcp/requests.ts`); then it runs the
 * same checks for real (`admission.ts`, as the routes do after parsing), since the exposure or
 * session may have changed while it arrived, and is answered directly (`direct-answer.ts`),
 * handed to the session's SDK transport with its parsed body, or served as a modern request
 * (`mcp/modern/serve.ts`) exactly as the routes serve it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken, isWellFormedPlaygroundKey, redactApiKeyInUrl } from '@bindery/contracts';
import { requestFramingProblem } from '@bindery/service-kit';
import type { FastifyBaseLogger } from 'fastify';
import { SESSION_NOT_FOUND, admitKey, originRefusal, refusalFor, type Flavor } from '../auth/admission.ts';
import { acceptsDirectAnswer, directAnswer, writeDirectAnswer } from './direct-answer.ts';
import { keyHash } from '../control-plane/exposure-cache.ts';
import { parseJsonBody } from '../http/json-body.ts';
import { answerFault, writeJsonRpcError } from '../http/jsonrpc-errors.ts';
import { MCP_ROUTES, V1, V2 } from '../http/mcp-paths.ts';
import { envelopeRefusal } from '../mcp/requests.ts';
import { eraOf } from '../mcp/modern/envelope.ts';
import { protocolVersionRefusal } from '../mcp/protocol-version.ts';
import type { KeyLimiter } from '../http/rate-limit.ts';
import { MODERN_PROTOCOL_VERSIONS } from '../mcp/modern/envelope.ts';
import { serveModern } from '../mcp/modern/serve.ts';
import { requestServerDeps, type ServerServices } from '../mcp/request-server-deps.ts';

export interface FastLaneDeps extends ServerServices {
  limiter: KeyLimiter;
  log: FastifyBaseLogger;
}

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
  // Fastify's router refuses parameters over 100 characters (maxParamLength); so does the lane.
  if (raw === '' || raw.length > 100 || raw.includes('/') || raw.includes('%') || raw.includes(';')) {
    return undefined;
  }
  return { flavor, pathKey: raw, route: flavor === 'v2' ? MCP_ROUTES.v2 : MCP_ROUTES.v1 };
}

function isJson(contentType: string | undefined): boolean {
  return contentType === 'application/json' || (contentType?.startsWith('application/json;') ?? false);
}

export interface FastLane {
  /** Takes `req` (and answers it) or answers false and leaves it untouched for Fastify. */
  take(req: IncomingMessage, res: ServerResponse): boolean;
  /** Stops taking requests (the gateway is closing; Fastify answers them from now on). */
  stop(): void;
}

export function createFastLane(deps: FastLaneDeps): FastLane {
  const { config, cache, sessions, limiter, metrics, log } = deps;
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

  /** A taken request, its body read: the routes' checks from the parse on, then the answer. */
  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    text: string,
    call: { apiKey: string; hash: string; sessionId: string | undefined; target: Target },
  ): Promise<void> {
    // Parsed and checked as the routes do (no rate-limit token spent on a refusal).
    const parsed = parseJsonBody(text);
    if (!parsed.ok) {
      writeJsonRpcError(res, { ...parsed.refusal, headers: { connection: 'close' } });
      return;
    }
    const refusal = envelopeRefusal(parsed.value);
    if (refusal) {
      writeJsonRpcError(res, refusal);
      return;
    }
    // The era the body and its headers speak, checked as the routes check it: a modern body under
    // a legacy header is refused (-32020), as the routes refuse it.
    const era = eraOf(parsed.value, req.headers);
    if (era.era === 'refused') {
      writeJsonRpcError(res, era.refusal, era.id);
      return;
    }
    // Taken as modern by its headers, the body is not (an initialize, a batch): refused as the
    // routes refuse a legacy request under a version header no legacy session speaks, before
    // the key is looked at.
    if (call.sessionId === undefined && era.era !== 'modern') {
      writeJsonRpcError(res, protocolVersionRefusal(req.headers, false) ?? SESSION_NOT_FOUND);
      return;
    }
    // Checked again now that the body is here: the exposure may have been disabled, the key
    // rotated or the session closed while it was arriving.
    const admission = await admitKey(
      { limiter, cache, metrics, log },
      call.apiKey,
      call.hash,
      call.target.flavor,
      req.socket.remoteAddress,
    );
    if (admission.refusal) {
      writeJsonRpcError(res, admission.refusal);
      return;
    }
    if (era.era === 'modern') {
      // Stateless (MCP 2026-07-28): served here as the routes serve it, without the framework.
      await serveModern(res, req.headers, era.message, era.envelope, {
        server: requestServerDeps(deps, {
          credential: { kind: 'api_key', apiKey: call.apiKey },
          hash: call.hash,
          owner: call.hash,
          flavor: call.target.flavor,
          ip: req.socket.remoteAddress,
          log,
          sessionIdHint: undefined,
        }),
        cacheTtlMs: config.cache.ttlMs,
        sessions,
        keyHash: call.hash,
      });
      return;
    }
    const session = call.sessionId === undefined ? undefined : sessions.get(call.sessionId, call.hash);
    if (!session) {
      writeJsonRpcError(res, SESSION_NOT_FOUND);
      return;
    }
    const answer = directAnswer(session, admission.exposure, parsed.value, req.headers);
    if (answer) {
      writeDirectAnswer(res, session, await answer);
      return;
    }
    // As on the routes: the transport maps answers by request id, so an id in flight is refused.
    const taken = session.requestIds.claim(parsed.value, res);
    if (taken) {
      writeJsonRpcError(res, taken);
      return;
    }
    await session.transport.handleRequest(req, res, parsed.value);
  }

  function take(req: IncomingMessage, res: ServerResponse): boolean {
    if (!open || req.method !== 'POST') return false;
    const target = targetOf(req.url ?? '');
    if (!target) return false;
    const { headers } = req;
    const header = headers['mcp-session-id'];
    const sessionId = typeof header === 'string' ? header : undefined;
    // A modern request (its version in the header) on the api_key route needs no session; one
    // that keeps its stream open (subscriptions/listen) takes the routes' path.
    const modern =
      sessionId === undefined &&
      target.flavor === 'v2' &&
      MODERN_PROTOCOL_VERSIONS.includes(String(headers['mcp-protocol-version'])) &&
      typeof headers['mcp-method'] === 'string' &&
      // An initialize under a modern header opens a legacy session; a listen stream stays open.
      headers['mcp-method'] !== 'initialize' &&
      headers['mcp-method'] !== 'subscriptions/listen';
    if (
      (sessionId === undefined && !modern) ||
      !isJson(headers['content-type']) ||
      !(headers.accept ?? '').includes('application/json') ||
      (!modern && !acceptsDirectAnswer(headers))
    ) {
      return false;
    }
    // A body the lane can read whole within the limit; chunked or empty ones go to Fastify.
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length) || length <= 0 || length > config.bodyLimitBytes) return false;
    // A browser's request (it sends Origin) needs CORS headers on its answer: the framework's
    // plugin adds them (http/cors.ts), so such requests take the framework's path.
    if (headers.origin !== undefined) return false;
    // Two Host headers (Node keeps the first in `headers.host`): the framework refuses them.
    if (requestFramingProblem(req) !== undefined) return false;
    if (originRefusal(config, headers) !== undefined) return false;
    // A playground key in the path is refused (routes/mcp.ts), never served.
    if (target.pathKey !== undefined && isWellFormedPlaygroundKey(target.pathKey)) return false;
    const apiKey = target.pathKey ?? bearerToken(headers.authorization);
    if (!apiKey) return false;
    // What the checks after the body will find, predicted without spending a token: a refusal
    // here leaves the request to Fastify, which produces it.
    const hash = keyHash(apiKey);
    const session = sessionId === undefined ? undefined : sessions.get(sessionId, hash);
    if ((!modern && !session) || !limiter.available(hash)) return false;
    const exposure = cache.peek(hash);
    if (!exposure || refusalFor(exposure, target.flavor) !== undefined) return false;

    // Busy from now on, body still arriving included: a session cap never closes it under us.
    if (session) sessions.busyUntilClosed(session, res);
    const started = performance.now();
    res.once('finish', () => finished(req, res, target.route, started));
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      serve(req, res, text, { apiKey, hash, sessionId, target }).catch((error: unknown) =>
        answerFault(res, log, error),
      );
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
