/**
 * The MCP endpoints: `/api/v2/mcp/server/{api_key}`, `/api/v2/mcp/server` with
 * `Authorization: Bearer <api_key>`, and the legacy `/api/v1/mcp/server/{api_key}`. Each request is
 * checked (Origin/Host, rate limit, key, exposure status) before it reaches the MCP transport.
 */
import { randomUUID } from 'node:crypto';
import { bearerToken } from '@bindery/contracts';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { UpstreamError, type ControlPlaneClient } from '../control-plane-client.ts';
import { keyHash, type Exposure, type ExposureCache } from '../exposure-cache.ts';
import { JSONRPC, sendJsonRpcError } from '../jsonrpc-errors.ts';
import { createMcpServer } from '../mcp-server.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { checkOrigin } from '../origin-guard.ts';
import type { RateLimiter } from '../rate-limit.ts';
import type { SessionStateStore } from '../session-state.ts';
import type { Session, SessionRegistry } from '../sessions.ts';

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

type Flavor = 'v2' | 'v1';

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
    const refusal = checkOrigin(config, request.headers.host, request.headers.origin);
    if (refusal) {
      sendJsonRpcError(reply, {
        status: 403,
        code: JSONRPC.FORBIDDEN,
        message: refusal,
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
    // The v1 URL serves legacy instances only; the v2 URL serves AEIs and, by fallback, legacy ones.
    if (exposure.kind === 'unknown' || (flavor === 'v1' && exposure.kind !== 'legacy')) {
      sendJsonRpcError(reply, {
        status: 401,
        code: JSONRPC.UNAUTHORIZED,
        message: 'unknown api_key',
        bindery: 'UNAUTHORIZED',
      });
      return undefined;
    }
    const status = exposure.kind === 'aei' ? exposure.config.aei.status : exposure.config.instance.status;
    if (status !== 'enabled') {
      sendJsonRpcError(reply, {
        status: 403,
        code: JSONRPC.FORBIDDEN,
        message: 'this exposure is disabled by its owner',
        bindery: 'FORBIDDEN',
      });
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
      if (request.method === 'POST' && (await answerDirectly(known, exposure, request, reply))) return reply;
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

  /**
   * The fast path: a single tools/call or tools/list on a session this replica holds, from a client
   * that accepts JSON and asked for no log stream, is answered with one plain JSON response by the
   * session's own handlers, skipping the SDK transport's web-standard adaption and SSE framing
   * (most of the gateway's latency). Anything else answers false and takes the SDK path, which
   * also produces every protocol error.
   */
  async function answerDirectly(
    session: Session,
    exposure: Exposure,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<boolean> {
    const message = request.body as {
      jsonrpc?: unknown;
      id?: unknown;
      method?: unknown;
      params?: unknown;
    } | null;
    if (!message || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0')
      return false;
    const id = message.id;
    if ((typeof id !== 'string' && typeof id !== 'number') || session.endpoint.wantsLogs()) return false;
    if (!String(request.headers.accept ?? '').includes('application/json')) return false;
    const version = request.headers['mcp-protocol-version'];
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return false;
    const params = (message.params ?? {}) as Record<string, unknown>;
    if (typeof params !== 'object' || Array.isArray(params)) return false;
    if (params._meta !== undefined) return false; // progress tokens and the like: the SDK handles them
    let run: () => Promise<unknown>;
    if (
      message.method === 'tools/list' &&
      (params.cursor === undefined || typeof params.cursor === 'string')
    ) {
      run = () => session.endpoint.listTools(params.cursor as string | undefined, exposure);
    } else if (
      message.method === 'tools/call' &&
      typeof params.name === 'string' &&
      (params.arguments === undefined ||
        (typeof params.arguments === 'object' &&
          params.arguments !== null &&
          !Array.isArray(params.arguments)))
    ) {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      run = () =>
        session.endpoint.callTool(params.name as string, args, {
          sessionId: session.id,
          requestId: `${session.id}:${String(id)}`,
          known: exposure,
        });
    } else {
      return false;
    }
    let body: unknown;
    try {
      body = { jsonrpc: '2.0', id, result: await run() };
    } catch (error) {
      if (!(error instanceof McpError)) throw error;
      body = { jsonrpc: '2.0', id, error: { code: error.code, message: error.message, data: error.data } };
    }
    reply.raw.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': session.id });
    reply.raw.end(JSON.stringify(body));
    return true;
  }

  const methods = ['GET', 'POST', 'DELETE'] as const;
  app.route<{ Params: { api_key: string } }>({
    method: [...methods],
    url: '/api/v2/mcp/server/:api_key',
    handler: (request, reply) => handle(request, reply, request.params.api_key, 'v2'),
  });
  app.route({
    method: [...methods],
    url: '/api/v2/mcp/server',
    handler: (request, reply) => handle(request, reply, bearerToken(request.headers.authorization), 'v2'),
  });
  app.route<{ Params: { api_key: string } }>({
    method: [...methods],
    url: '/api/v1/mcp/server/:api_key',
    handler: (request, reply) => handle(request, reply, request.params.api_key, 'v1'),
  });
}
