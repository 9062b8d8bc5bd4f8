/**
 * The MCP endpoints: `/api/v2/mcp/server/{api_key}`, `/api/v2/mcp/server` with
 * `Authorization: Bearer <api_key>`, and the legacy `/api/v1/mcp/server/{api_key}`. Each request is
 * checked (Origin/Host, rate limit, key, exposure status) before it reaches the MCP transport.
 */
import { randomUUID } from 'node:crypto';
import { bearerToken } from '@bindery/contracts';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { UpstreamError, type ControlPlaneClient } from '../control-plane-client.ts';
import { MISSING_KEY, SESSION_NOT_FOUND, admitKey, originRefusal, type Flavor } from '../admission.ts';
import { directAnswer, writeDirectAnswer } from '../direct-answer.ts';
import { LookupsLimitedError, keyHash, type Exposure, type ExposureCache } from '../exposure-cache.ts';
import { answerFault, sendJsonRpcError, writeJsonRpcError } from '../jsonrpc-errors.ts';
import { createMcpServer } from '../mcp-server.ts';
import { MCP_ROUTES } from '../mcp/paths.ts';
import { protocolVersionRefusal } from '../mcp/protocol-version.ts';
import { RequestIds } from '../mcp/request-ids.ts';
import { envelopeRefusal, guardRequests } from '../mcp/requests.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { RateLimiter } from '../rate-limit.ts';
import type { SessionStateStore } from '../session-state.ts';
import type { SessionRegistry } from '../sessions.ts';

export interface McpRouteDeps {
  store: SessionStateStore;
  executeLimiter: RateLimiter;
  config: GatewayConfig;
  cache: ExposureCache;
  client: ControlPlaneClient;
  sessions: SessionRegistry;
  limiter: RateLimiter;
  metrics: GatewayMetrics;
}

function wantsInitialize(body: unknown): boolean {
  return Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
}

export async function mcpRoutes(app: FastifyInstance, deps: McpRouteDeps): Promise<void> {
  const { config, cache, client, sessions, limiter, metrics, store, executeLimiter } = deps;

  /** The exposure for a key as a route may serve it, or the refusal already sent. */
  async function admit(
    request: FastifyRequest,
    reply: FastifyReply,
    apiKey: string | undefined,
    hash: string,
    flavor: Flavor,
  ): Promise<Exposure | undefined> {
    const foreign = originRefusal(config, request.headers);
    if (foreign) {
      sendJsonRpcError(reply, foreign);
      return undefined;
    }
    if (!apiKey) {
      sendJsonRpcError(reply, MISSING_KEY);
      return undefined;
    }
    const admission = await admitKey(
      { limiter, cache, metrics, log: request.log },
      apiKey,
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

  async function handle(
    request: FastifyRequest,
    reply: FastifyReply,
    apiKey: string | undefined,
    flavor: Flavor,
  ) {
    if (request.method === 'POST') {
      // Part of reading the body, as parsing is: answered before the key is looked at, and no
      // rate-limit token is spent on it (the fast lane does the same).
      const refusal = envelopeRefusal(request.body);
      if (refusal) return sendJsonRpcError(reply, refusal);
    }
    // A header check, answered before the key as the body's are: an MCP-Protocol-Version no
    // supported version is refused on every path alike (the initialize request negotiates instead).
    const unsupported = protocolVersionRefusal(
      request.headers,
      request.method === 'POST' && wantsInitialize(request.body),
    );
    if (unsupported) return sendJsonRpcError(reply, unsupported);
    const hash = apiKey ? keyHash(apiKey) : '';
    const exposure = await admit(request, reply, apiKey, hash, flavor);
    if (!exposure || !apiKey) return reply;
    const sessionHeader = request.headers['mcp-session-id'];
    // Only requests that need an MCP server build one; the direct answer does not.
    const serverDeps = () => ({
      progressive: {
        store,
        executeLimiter,
        keyHash: hash,
        concurrency: config.progressive.concurrency,
        itemTimeoutMs: config.progressive.itemTimeoutMs,
      },
      sessionIdHint: typeof sessionHeader === 'string' ? sessionHeader : undefined,
      subscriptions: sessions.subscriptions,
      client,
      metrics,
      log: request.log,
      toolsPageSize: config.toolsPageSize,
      charge: (exposure: Exposure, bytes: number) => cache.charge(exposure, bytes),
      exposure: async () => {
        let now: Exposure;
        try {
          now = (await cache.resolve(apiKey, hash, flavor, request.ip)).exposure;
        } catch (error) {
          if (!(error instanceof LookupsLimitedError)) throw error;
          throw new UpstreamError(error.message, 'not-sent');
        }
        if (now.kind === 'unknown') throw new UpstreamError('this api_key is no longer valid', 'not-sent');
        return now;
      },
    });
    const known = typeof sessionHeader === 'string' ? sessions.get(sessionHeader, hash) : undefined;
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
        return;
      }
      if (request.method === 'POST' && wantsInitialize(request.body)) {
        const room = sessions.reserve(hash);
        if ('refusal' in room) {
          writeJsonRpcError(reply.raw, room.refusal);
          return;
        }
        reply.raw.once('close', room.release);
        const endpoint = createMcpServer({ ...serverDeps(), initial: exposure });
        const server = endpoint.server;
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.add({
              id,
              keyHash: hash,
              aeiId: exposure.kind === 'aei' ? exposure.config.aei.id : undefined,
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
      if (request.method !== 'POST') {
        // A stream (GET) or a close (DELETE) needs a session this replica holds.
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
    reply.hijack();
    try {
      await serve();
    } catch (error) {
      // Fastify only logs a failure after hijack; the client still gets an answer.
      answerFault(reply.raw, request.log, error);
    }
    return reply;
  }

  const methods = ['GET', 'POST', 'DELETE'] as const;
  app.route<{ Params: { api_key: string } }>({
    method: [...methods],
    url: MCP_ROUTES.v2,
    handler: (request, reply) => handle(request, reply, request.params.api_key, 'v2'),
  });
  app.route({
    method: [...methods],
    url: MCP_ROUTES.bearer,
    handler: (request, reply) => handle(request, reply, bearerToken(request.headers.authorization), 'v2'),
  });
  app.route<{ Params: { api_key: string } }>({
    method: [...methods],
    url: MCP_ROUTES.v1,
    handler: (request, reply) => handle(request, reply, request.params.api_key, 'v1'),
  });
}
