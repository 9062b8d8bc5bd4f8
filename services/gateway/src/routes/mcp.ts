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
import { directAnswer, refusalFor, writeDirectAnswer, type Flavor } from '../direct-answer.ts';
import { keyHash, type Exposure, type ExposureCache } from '../exposure-cache.ts';
import { MCP_ROUTES } from '../fast-lane.ts';
import { JSONRPC, sendJsonRpcError } from '../jsonrpc-errors.ts';
import { createMcpServer } from '../mcp-server.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { checkOrigin } from '../origin-guard.ts';
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
    const foreign = checkOrigin(config, request.headers.host, request.headers.origin);
    if (foreign) {
      sendJsonRpcError(reply, {
        status: 403,
        code: JSONRPC.FORBIDDEN,
        message: foreign,
        bindery: 'FORBIDDEN',
      });
      return undefined;
    }
    if (!apiKey) {
      sendJsonRpcError(reply, {
        status: 401,
        code: JSONRPC.UNAUTHORIZED,
        message: 'send the api_key in the URL or as "Authorization: Bearer <api_key>"',
        bindery: 'UNAUTHORIZED',
      });
      return undefined;
    }
    const wait = limiter.take(hash);
    if (wait > 0) {
      sendJsonRpcError(reply, {
        status: 429,
        code: JSONRPC.RATE_LIMITED,
        message: `rate limit reached for this api_key; retry in ${wait} s`,
        bindery: 'RATE_LIMITED',
        headers: { 'retry-after': String(wait) },
      });
      return undefined;
    }
    let exposure: Exposure;
    try {
      exposure = (await cache.resolve(apiKey, hash)).exposure;
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      request.log.warn({ err: error.message }, 'control plane unavailable and no cached config for this key');
      sendJsonRpcError(reply, {
        status: 503,
        code: JSONRPC.UNAVAILABLE,
        message: 'the control plane is unavailable; try again shortly',
        bindery: 'UPSTREAM_FAILED',
        headers: { 'retry-after': '5' },
      });
      return undefined;
    }
    const refusal = refusalFor(exposure, flavor);
    if (refusal) {
      sendJsonRpcError(reply, refusal);
      return undefined;
    }
    return exposure;
  }

  async function handle(
    request: FastifyRequest,
    reply: FastifyReply,
    apiKey: string | undefined,
    flavor: Flavor,
  ) {
    const hash = apiKey ? keyHash(apiKey) : '';
    const exposure = await admit(request, reply, apiKey, hash, flavor);
    if (!exposure || !apiKey) return reply;
    const sessionHeader = request.headers['mcp-session-id'];
    // Only requests that need an MCP server build one; the fast path does not.
    const serverDeps = () => ({
      progressive: {
        store,
        executeLimiter,
        keyHash: hash,
        concurrency: config.progressive.concurrency,
        itemTimeoutMs: config.progressive.itemTimeoutMs,
      },
      sessionIdHint: typeof sessionHeader === 'string' ? sessionHeader : undefined,
      client,
      metrics,
      log: request.log,
      toolsPageSize: config.toolsPageSize,
      exposure: async () => {
        const now = (await cache.resolve(apiKey, hash)).exposure;
        if (now.kind === 'unknown') throw new UpstreamError('this api_key is no longer valid');
        return now;
      },
    });
    const known = typeof sessionHeader === 'string' ? sessions.get(sessionHeader, hash) : undefined;
    reply.hijack();
    if (known) {
      const answer =
        request.method === 'POST' ? directAnswer(known, exposure, request.body, request.headers) : undefined;
      if (answer) {
        writeDirectAnswer(reply.raw, known, await answer);
        return reply;
      }
      await known.transport.handleRequest(request.raw, reply.raw, request.body);
      return reply;
    }
    if (request.method === 'POST' && wantsInitialize(request.body)) {
      const endpoint = createMcpServer(serverDeps());
      const server = endpoint.server;
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) =>
          sessions.add({
            id,
            keyHash: hash,
            aeiId: exposure.kind === 'aei' ? exposure.config.aei.id : undefined,
            server,
            endpoint,
            transport,
            lastSeen: Date.now(),
          }),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.remove(transport.sessionId);
      };
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
      return reply;
    }
    if (request.method !== 'POST') {
      // A stream (GET) or a close (DELETE) needs a session this replica holds.
      reply.raw.writeHead(404, { 'content-type': 'application/json' });
      reply.raw.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: { code: JSONRPC.UNAUTHORIZED, message: 'Session not found', data: { code: 'NOT_FOUND' } },
        }),
      );
      return reply;
    }
    // A session this replica does not hold (opened on another one, or before a restart): serve
    // this request statelessly; the exposure comes from the shared control plane either way.
    const { server } = createMcpServer(serverDeps());
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
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
