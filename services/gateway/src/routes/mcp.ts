/**
 * The MCP endpoints: `/api/v2/mcp/server/{api_key}`, `/api/v2/mcp/server` with
 * `Authorization: Bearer <api_key>`, the legacy `/api/v1/mcp/server/{api_key}`, and the caller
 * entry `/api/v2/mcp/caller/{caller}` (or `/api/v2/mcp/caller`: initialize's clientInfo.name is
 * tried as the caller) with `Authorization: Bearer <personal key>`, serving the profile the caller
 * maps to. Each request is checked (Origin/Host, rate limit, key, exposure status) before it
 * reaches the MCP transport. A playground key (`bnd_pg_`, the admin console's) is served on the
 * v2 URLs like an api_key; browsers of allowed origins get CORS headers (`http/cors.ts`).
 */
import { randomUUID } from 'node:crypto';
import {
  MCP_AEI_PATH,
  bearerToken,
  isCallerName,
  isWellFormedPersonalKey,
  isWellFormedPlaygroundKey,
  normaliseCallerName,
  pathOfResource,
  resourceOfPath,
} from '@bindery/contracts';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { type ControlPlaneClient } from '../control-plane/client.ts';
import {
  MISSING_KEY,
  PLAYGROUND_KEY_IN_PATH,
  SESSION_NOT_FOUND,
  admitKey,
  originRefusal,
  type Flavor,
} from '../auth/admission.ts';
import { looksLikeJwt, scopeOf, type ResourceServer } from '../auth/oauth-resource.ts';
import { directAnswer, writeDirectAnswer } from '../fast/direct-answer.ts';
import { keepReplyHeaders } from '../http/cors.ts';
import {
  credentialHash,
  keyHash,
  type Credential,
  type Exposure,
  type ExposureCache,
} from '../control-plane/exposure-cache.ts';
import { JSONRPC, answerFault, sendJsonRpcError, writeJsonRpcError } from '../http/jsonrpc-errors.ts';
import { createMcpServer } from '../mcp/server.ts';
import { MCP_ROUTES } from '../http/mcp-paths.ts';
import { protocolVersionRefusal } from '../mcp/protocol-version.ts';
import { RequestIds } from '../mcp/request-ids.ts';
import { envelopeRefusal, guardRequests } from '../mcp/requests.ts';
import { inRequestSpan } from '../http/request-span.ts';
import { eraOf, type Era } from '../mcp/modern/envelope.ts';
import { serveModern } from '../mcp/modern/serve.ts';
import { requestServerDeps } from '../mcp/request-server-deps.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { KeyLimiter, RateLimiter } from '../http/rate-limit.ts';
import type { SessionStateStore } from '../mcp/tools/progressive-sessions.ts';
import type { SessionRegistry } from '../mcp/sessions.ts';

export interface McpRouteDeps {
  store: SessionStateStore;
  executeLimiter: RateLimiter;
  config: GatewayConfig;
  cache: ExposureCache;
  client: ControlPlaneClient;
  sessions: SessionRegistry;
  limiter: KeyLimiter;
  metrics: GatewayMetrics;
  oauth: ResourceServer;
}

/** A keyless URL's request: the bearer token (an OAuth access token) and the URL's path. */
interface TokenEntry {
  kind: 'token';
  token: string | undefined;
  resourcePath: string;
}

function wantsInitialize(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

/** The caller an initialize request's client names itself (`clientInfo.name`, normalised), if any. */
function clientCaller(body: unknown): string | undefined {
  const message = (Array.isArray(body) ? body : [body]).find((m) => isInitializeRequest(m));
  const name = isInitializeRequest(message) ? message.params.clientInfo.name : undefined;
  return typeof name === 'string' ? normaliseCallerName(name) : undefined;
}

/** Between a caller-entry session's id and the caller it serves (in no UUID, in no caller name). */
const CALLER_IN_SESSION_ID = '~';

/** The caller a session id of the caller entry carries, if any. */
function callerInSessionId(sessionId: string): string | undefined {
  const at = sessionId.lastIndexOf(CALLER_IN_SESSION_ID);
  if (at === -1) return undefined;
  const caller = sessionId.slice(at + 1);
  return isCallerName(caller) ? caller : undefined;
}

const BAD_AEI_ID = {
  status: 404,
  code: JSONRPC.INVALID_REQUEST,
  message: 'no exposure has this id: a keyless MCP URL is /api/v2/mcp/aei/{aei_id}',
  bindery: 'NOT_FOUND',
} as const;

const BAD_CALLER = {
  status: 400,
  code: JSONRPC.INVALID_REQUEST,
  message:
    'a caller name is 1-64 characters: lower-case letters, digits, ".", "_" and "-", starting with a letter or digit',
  bindery: 'VALIDATION_FAILED',
} as const;

export async function mcpRoutes(app: FastifyInstance, deps: McpRouteDeps): Promise<void> {
  const { config, cache, sessions, limiter, metrics, oauth } = deps;

  /** The exposure for a key as a route may serve it, or the refusal already sent. */
  async function admit(
    request: FastifyRequest,
    reply: FastifyReply,
    credential: Credential,
    hash: string,
    flavor: Flavor,
  ): Promise<Exposure | undefined> {
    const foreign = originRefusal(config, request.headers);
    if (foreign) {
      sendJsonRpcError(reply, foreign);
      return undefined;
    }
    if (credential.kind === 'api_key' && !credential.apiKey) {
      sendJsonRpcError(reply, MISSING_KEY);
      return undefined;
    }
    const admission = await admitKey(
      { limiter, cache, metrics, log: request.log, oauth },
      credential,
      hash,
      flavor,
      request.ip,
    );
    if (admission.refusal) {
      sendJsonRpcError(reply, admission.refusal);
      return undefined;
    }
    return admission.exposure;
  }

  type Entry = Credential | { kind: 'api_key'; apiKey: string | undefined } | TokenEntry;

  /** Serves one request on an MCP route, in its span when traces are on (mcp/request-span.ts). */
  function handle(request: FastifyRequest, reply: FastifyReply, entry: Entry, flavor: Flavor) {
    return inRequestSpan(request, reply, () => serveRoute(request, reply, entry, flavor));
  }

  async function serveRoute(request: FastifyRequest, reply: FastifyReply, entry: Entry, flavor: Flavor) {
    let era: Era = { era: 'legacy' };
    if (request.method === 'POST') {
      // Part of reading the body, as parsing is: answered before the key is looked at, and no
      // rate-limit token is spent on it (the fast lane does the same).
      const refusal = envelopeRefusal(request.body);
      if (refusal) return sendJsonRpcError(reply, refusal);
      // A modern request's envelope, version and standard headers are checked as its body is.
      era = eraOf(request.body, request.headers);
      if (era.era === 'refused') return sendJsonRpcError(reply, era.refusal, era.id);
    }
    // A header check, answered before the key as the body's are: an MCP-Protocol-Version no
    // supported version is refused on every path alike (the initialize request negotiates instead).
    const unsupported =
      era.era === 'legacy' &&
      protocolVersionRefusal(request.headers, request.method === 'POST' && wantsInitialize(request.body));
    if (unsupported) return sendJsonRpcError(reply, unsupported);
    const sessionHeader = request.headers['mcp-session-id'];
    let credential: Credential;
    if (entry.kind === 'token') {
      const foreign = originRefusal(config, request.headers);
      if (foreign) return sendJsonRpcError(reply, foreign);
      if (!entry.token) return sendJsonRpcError(reply, oauth.unauthorized(entry.resourcePath));
      const verified = await oauth.verify(entry.token, entry.resourcePath);
      if (verified.refusal) return sendJsonRpcError(reply, verified.refusal);
      if (request.method === 'POST') {
        const missing = (Array.isArray(request.body) ? request.body : [request.body])
          .map(scopeOf)
          .find((scope) => scope !== undefined && !verified.scopes.has(scope));
        if (missing)
          return sendJsonRpcError(
            reply,
            oauth.insufficientScope(entry.resourcePath, missing, verified.scopes),
          );
      }
      credential = verified.credential;
    } else if (entry.kind === 'oauth') {
      credential = entry;
    } else if (entry.kind === 'api_key') {
      credential = { kind: 'api_key', apiKey: entry.apiKey ?? '' };
    } else if (entry.caller !== undefined) {
      credential = entry;
    } else {
      // No caller in the URL: the one the session id carries, or on initialize, what the client
      // calls itself (unmapped or absent, the default profile answers).
      const caller =
        era.era === 'modern'
          ? era.envelope.clientInfo && normaliseCallerName(era.envelope.clientInfo.name)
          : typeof sessionHeader === 'string'
            ? callerInSessionId(sessionHeader)
            : request.method === 'POST'
              ? clientCaller(request.body)
              : undefined;
      credential = { ...entry, caller };
    }
    const hash = credentialHash(credential);
    // Sessions, their caps and execute budgets count by the key that opened them: a personal key's
    // callers share the key's.
    const owner = credential.kind === 'personal' ? keyHash(credential.personalKey) : hash;
    const exposure = await admit(request, reply, credential, hash, flavor);
    if (!exposure) return reply;
    const caller = credential.kind === 'personal' ? credential.caller : undefined;
    // A caller entry's log lines say who called.
    const log = credential.kind === 'personal' ? request.log.child({ caller: caller ?? null }) : request.log;
    // Only requests that need an MCP server build one; the direct answer does not.
    const serverDeps = () =>
      requestServerDeps(deps, {
        credential,
        hash,
        owner,
        flavor,
        ip: request.ip,
        log,
        sessionIdHint: typeof sessionHeader === 'string' ? sessionHeader : undefined,
      });
    if (era.era === 'modern') {
      // Stateless: a session id the client sends is not looked at.
      const { message, envelope } = era;
      keepReplyHeaders(reply);
      reply.hijack();
      try {
        await serveModern(reply.raw, request.headers, message, envelope, {
          server: serverDeps(),
          cacheTtlMs: config.cache.ttlMs,
          sessions,
          keyHash: owner,
        });
      } catch (error) {
        answerFault(reply.raw, log, error);
      }
      return reply;
    }
    const held = typeof sessionHeader === 'string' ? sessions.get(sessionHeader, owner) : undefined;
    // A personal key's session serves the caller it was opened for, and no other.
    const known = held && held.caller === caller ? held : undefined;
    // A caller entry's session follows its caller to the profile it maps to now, so the profile's
    // list_changed reaches it.
    if (known && exposure.kind === 'aei') known.aeiId = exposure.config.aei.id;
    const serve = async (): Promise<void> => {
      if (known) {
        if (request.method === 'POST') {
          sessions.busyUntilClosed(known, reply.raw);
          const answer = directAnswer(known, exposure, request.body, request.headers);
          if (answer) {
            writeDirectAnswer(reply.raw, known, await answer);
            return;
          }
          const taken = known.requestIds.claim(request.body, reply.raw);
          if (taken) {
            writeJsonRpcError(reply.raw, taken);
            return;
          }
        }
        // A second GET stream is refused by the transport: the first stays the one to watch.
        if (request.method === 'GET' && known.standing === undefined) {
          // The standing stream: resources/updated waits while its client does not read it.
          const stream = reply.raw;
          known.standing = stream;
          stream.once('close', () => {
            if (known.standing === stream) known.standing = undefined;
          });
        }
        await known.transport.handleRequest(request.raw, reply.raw, request.body);
        // The client ended its session: its id is not served again (MCP session management).
        if (request.method === 'DELETE' && reply.raw.statusCode < 300) sessions.markEnded(known.id);
        return;
      }
      if (request.method === 'POST' && wantsInitialize(request.body)) {
        const room = sessions.reserve(owner);
        if ('refusal' in room) {
          writeJsonRpcError(reply.raw, room.refusal);
          return;
        }
        reply.raw.once('close', room.release);
        const endpoint = createMcpServer({ ...serverDeps(), initial: exposure });
        const server = endpoint.server;
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          // Without a caller in the URL, the session id carries the one the session serves, so
          // its requests reach that profile wherever they land (another replica, after a restart).
          sessionIdGenerator: () =>
            entry.kind === 'personal' && entry.caller === undefined && caller !== undefined
              ? `${randomUUID()}${CALLER_IN_SESSION_ID}${caller}`
              : randomUUID(),
          onsessioninitialized: (id) => {
            sessions.add({
              id,
              keyHash: owner,
              aeiId: exposure.kind === 'aei' ? exposure.config.aei.id : undefined,
              ...(caller !== undefined && { caller }),
              server,
              endpoint,
              transport,
              requestIds,
              lastSeen: Date.now(),
              busy: 0,
            });
            room.release();
          },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.remove(transport.sessionId);
        };
        await server.connect(transport);
        const requestIds = new RequestIds(transport);
        guardRequests(transport);
        await transport.handleRequest(request.raw, reply.raw, request.body);
        return;
      }
      if (
        request.method !== 'POST' ||
        (typeof sessionHeader === 'string' && sessions.wasEnded(sessionHeader))
      ) {
        // A stream (GET) or a close (DELETE) needs a session this replica holds; a session its
        // client ended is gone for good (the client initializes again).
        writeJsonRpcError(reply.raw, SESSION_NOT_FOUND);
        return;
      }
      // A session this replica does not hold (opened on another one, before a restart, or closed
      // here by a cap or the idle sweep): serve this request statelessly; the exposure comes from
      // the shared control plane either way.
      const { server } = createMcpServer(serverDeps());
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      guardRequests(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    };
    // The raw response carries what hooks set on the reply (CORS headers for a browser).
    keepReplyHeaders(reply);
    reply.hijack();
    try {
      await serve();
    } catch (error) {
      // Fastify only logs a failure after hijack; the client still gets an answer.
      answerFault(reply.raw, log, error);
    }
    return reply;
  }

  const methods = ['GET', 'POST', 'DELETE'] as const;
  app.route<{ Params: { api_key: string } }>({
    method: [...methods],
    url: MCP_ROUTES.v2,
    handler: (request, reply) =>
      isWellFormedPlaygroundKey(request.params.api_key)
        ? sendJsonRpcError(reply, PLAYGROUND_KEY_IN_PATH)
        : handle(request, reply, { kind: 'api_key', apiKey: request.params.api_key }, 'v2'),
  });
  app.route({
    method: [...methods],
    url: MCP_ROUTES.bearer,
    handler: (request, reply) =>
      handle(request, reply, { kind: 'api_key', apiKey: bearerToken(request.headers.authorization) }, 'v2'),
  });
  app.route<{ Params: { api_key: string } }>({
    method: [...methods],
    url: MCP_ROUTES.v1,
    handler: (request, reply) =>
      handle(request, reply, { kind: 'api_key', apiKey: request.params.api_key }, 'v1'),
  });
  app.route<{ Params: { aei: string } }>({
    method: [...methods],
    url: MCP_ROUTES.aei,
    handler: (request, reply) => {
      const resource = resourceOfPath(`${MCP_AEI_PATH}/${request.params.aei}`);
      if (!resource) return sendJsonRpcError(reply, BAD_AEI_ID);
      const token = bearerToken(request.headers.authorization);
      return handle(request, reply, { kind: 'token', token, resourcePath: pathOfResource(resource) }, 'v2');
    },
  });
  const personalKey = (request: FastifyRequest) => bearerToken(request.headers.authorization) ?? '';
  /**
   * A caller entry's request: with a personal key as ever, or with an OAuth access token (a JWT,
   * never a personal key's shape); with neither, the 401 names both and where to authorize.
   */
  const callerEntry = (request: FastifyRequest, reply: FastifyReply, caller: string | undefined) => {
    const token = bearerToken(request.headers.authorization);
    const resourcePath = pathOfResource({ kind: 'caller', caller: caller ?? null });
    if (token === undefined || token === '') {
      return handle(request, reply, { kind: 'token', token: undefined, resourcePath }, 'v2');
    }
    if (looksLikeJwt(token) && !isWellFormedPersonalKey(token)) {
      return handle(request, reply, { kind: 'token', token, resourcePath }, 'v2');
    }
    return handle(request, reply, { kind: 'personal', personalKey: personalKey(request), caller }, 'v2');
  };
  app.route<{ Params: { caller: string } }>({
    method: [...methods],
    url: MCP_ROUTES.namedCaller,
    handler: (request, reply) => {
      const caller = request.params.caller;
      if (!isCallerName(caller)) return sendJsonRpcError(reply, BAD_CALLER);
      return callerEntry(request, reply, caller);
    },
  });
  app.route({
    method: [...methods],
    url: MCP_ROUTES.caller,
    handler: (request, reply) => callerEntry(request, reply, undefined),
  });
}
