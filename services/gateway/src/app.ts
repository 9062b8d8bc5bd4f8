/**
 * The MCP gateway as a Fastify app: MCP endpoints, ops routes, the config cache, sessions, and
 * (with REDIS_URL) the invalidation subscriber. It holds no database: everything comes from the
 * control plane over HTTP. `server.ts` only listens and closes.
 */
import { createServer } from 'node:http';
import { redactApiKeyInUrl, type ErrorCode } from '@bindery/contracts';
import {
  RequestLogController,
  drainIdleWhileClosing,
  loggerOptions,
  refuseConnect,
  requestFramingProblem,
  requestTargetPath,
  subscribeInvalidations,
  tracingOn,
  type Subscription,
} from '@bindery/service-kit';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { GatewayConfig } from './config.ts';
import { ControlPlaneClient } from './control-plane/client.ts';
import { ExposureCache } from './control-plane/exposure-cache.ts';
import { createFastLane, type FastLane } from './fast/fast-lane.ts';
import { registerCors } from './http/cors.ts';
import { errorAnswer } from './http/error-answer.ts';
import { parseJsonBody, BodyRefused } from './http/json-body.ts';
import { answerClientError, sendRestError } from './http/rest-errors.ts';
import { registerUnknownRoutes } from './http/unknown-routes.ts';
import { INTERNAL_ERROR, JSONRPC, sendJsonRpcError } from './http/jsonrpc-errors.ts';
import { lazyChildLogger } from './http/lazy-logger.ts';
import { isMcpPath } from './http/mcp-paths.ts';
import { createMetrics, type GatewayMetrics } from './metrics.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { keyLimits } from './http/shared-rate-limit.ts';
import { mcpRoutes } from './routes/mcp.ts';
import { restRoutes } from './routes/rest.ts';
import { oauthMetadataRoutes } from './routes/oauth-metadata.ts';
import { ResourceServer } from './auth/oauth-resource.ts';
import { invalidate, opsRoutes } from './routes/ops.ts';
import {
  MemorySessionStore,
  RedisSessionStore,
  type SessionStateStore,
} from './mcp/tools/progressive-sessions.ts';
import { SessionRegistry } from './mcp/sessions.ts';

declare module 'fastify' {
  interface FastifyInstance {
    gateway: { cache: ExposureCache; sessions: SessionRegistry; metrics: GatewayMetrics };
  }
}

/** A request refused before any route: a JSON-RPC error on an MCP endpoint, the REST body elsewhere. */
function refuseRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  message: string,
  headers?: Record<string, string>,
): FastifyReply {
  // An absolute-form target is routed by its path: its refusal takes that path's shape.
  return isMcpPath(requestTargetPath(request.url))
    ? sendJsonRpcError(reply, {
        status: 400,
        code: JSONRPC.INVALID_REQUEST,
        message,
        bindery: 'VALIDATION_FAILED',
        ...(headers && { headers }),
      })
    : sendRestError(request, reply, {
        status: 400,
        code: 'VALIDATION_FAILED',
        message,
        ...(headers && { headers }),
      });
}

/**
 * The router's own refusals (a URL whose percent-escapes are not UTF-8, an overlong key), which
 * bypass the error handler: answered in the gateway's shapes rather than Fastify's default one.
 */
function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  refuseRequest(
    request,
    reply,
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'a path parameter is longer than any api_key'
      : 'the URL holds a percent-escape that is not UTF-8',
  );
}

/**
 * Builds the gateway (not listening). Logs go to stdout, or to `logTo` (a stream, for tests), or
 * nowhere with `false`; request URLs are always redacted.
 */
export async function buildGateway(
  config: GatewayConfig,
  logTo?: NodeJS.WritableStream | false,
): Promise<FastifyInstance> {
  const logger: FastifyServerOptions['logger'] =
    logTo === false
      ? false
      : loggerOptions({
          level: config.logLevel,
          // A test's stream gets JSON lines, whatever the terminal.
          format: logTo ? 'json' : config.logFormat,
          name: 'gateway',
          ...(logTo && { destination: logTo }),
          serializeRequest: (req) => ({
            method: req.method,
            url: redactApiKeyInUrl(req.url),
            remoteAddress: req.ip,
          }),
        });
  // The fast lane sees each request first (see fast-lane.ts); it exists once the deps below do.
  const lane: { current?: FastLane } = {};
  const app = Fastify({
    serverFactory: (handler, options) => {
      // A request without Host is refused by the hook below, in the gateway's shapes (Node's own
      // refusal has no body).
      const server = createServer({ requireHostHeader: false }, (req, res) => {
        if (lane.current?.take(req, res) !== true) handler(req, res);
      });
      refuseConnect(server);
      // What Fastify sets on the servers it creates itself.
      server.keepAliveTimeout = options.keepAliveTimeout as number;
      server.requestTimeout = options.requestTimeout as number;
      server.setTimeout(options.connectionTimeout as number);
      return server;
    },
    logger,
    bodyLimit: config.bodyLimitBytes,
    // A request must arrive whole within 30 s (Fastify's default is no limit): a body trickled in
    // slowly cannot hold a connection and its checks open. Streams (GET) are responses, not
    // requests, and are unaffected.
    requestTimeout: 30_000,
    logController: new RequestLogController({ enabled: config.logRequests }),
    childLoggerFactory: lazyChildLogger,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  });
  // JSON only, parsed by the one function the fast lane uses too (depth bound, empty body,
  // prototype poisoning); other media types are refused (415).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    const parsed = parseJsonBody(text as string);
    if (parsed.ok) done(null, parsed.value);
    else done(new BodyRefused(parsed.refusal));
  });
  const metrics = createMetrics();
  const client = new ControlPlaneClient({
    url: config.controlPlaneUrl,
    internalToken: config.internalToken,
    configTimeoutMs: config.configTimeoutMs,
    toolCallTimeoutMs: config.toolCallTimeoutMs,
    batchMax: config.toolCallBatchMax,
    idleProbeMs: config.controlPlaneIdleProbeMs,
    breaker: config.breaker,
    metrics,
    log: app.log,
  });
  const cache = new ExposureCache(client, config.cache, metrics, app.log);
  const sessions = new SessionRegistry(metrics, app.log, config.sessions);
  // Upstream resources a client subscribes to are watched through the control plane.
  sessions.subscriptions.watcher = (aeiId, serverId, uris) =>
    client.upstreamWatch(aeiId, { upstream_server_id: serverId, uris });
  // One budget per key across the gateways with Redis, this gateway's own buckets without.
  const rateLimits = keyLimits(config.rateLimit, config.redisUrl, { metrics, log: app.log });
  const limiter = rateLimits.limiter;
  const executeLimiter = new RateLimiter(
    config.progressive.executePerSecond,
    config.progressive.executeBurst,
  );
  const store: SessionStateStore = config.redisUrl
    ? await RedisSessionStore.connect(config.redisUrl, config.progressive.sessionTtlMs, app.log)
    : new MemorySessionStore(config.progressive.sessionTtlMs, config.progressive.stateMaxBytes);
  app.decorate('gateway', { cache, sessions, metrics });

  // Readiness: health checks until the control plane has answered once, then whenever it has been
  // quiet for a while, so /readyz (routes/ops.ts) never reports a control plane long gone.
  client.watch();

  app.addHook('onResponse', async (request, reply) => {
    metrics.requests.inc({
      route: request.routeOptions.url ?? 'unknown',
      status: String(reply.statusCode),
      lane: 'framework',
    });
  });

  // Two Host headers, none, or a target that is not a path: refused before any route or CORS hook
  // (the fast lane leaves such requests here, see fast-lane.ts), and the connection is closed.
  app.addHook('onRequest', async (request, reply) => {
    const problem = requestFramingProblem(request.raw);
    if (problem !== undefined) return refuseRequest(request, reply, problem, { connection: 'close' });
  });

  // One error handler: on an MCP endpoint a JSON-RPC error answer, elsewhere the REST error body.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const answer = errorAnswer(error, config.bodyLimitBytes);
    if (!answer) request.log.error({ err: error }, 'unhandled error');
    const refusal = answer ?? INTERNAL_ERROR;
    return isMcpPath(request.url)
      ? sendJsonRpcError(reply, refusal)
      : sendRestError(request, reply, {
          status: refusal.status,
          code: refusal.bindery as ErrorCode,
          // The REST body says what the JSON-RPC code's prefix says there.
          message: refusal.message.replace(/^(Parse error|Invalid Request): /, ''),
        });
  });
  registerUnknownRoutes(app);
  const oauth = new ResourceServer({
    publicUrl: config.publicUrl,
    controlPlaneUrl: config.controlPlaneUrl,
    external: config.oauthExternal,
  });

  // What the fast lane and the MCP routes serve with: one set, so both refuse and answer alike.
  const serving = { config, cache, client, sessions, limiter, metrics, store, executeLimiter };
  // With traces on, every request takes the routes' path, where its span is made: the lane exists
  // to skip per-request work, and a span is such work.
  if (!tracingOn()) lane.current = createFastLane({ ...serving, log: app.log });
  app.addHook('preClose', async () => {
    lane.current?.stop();
    sessions.endStandingStreams();
  });
  // Those streams' connections, and those of calls answered meanwhile, close once idle.
  drainIdleWhileClosing(app);
  // The MCP endpoints and the REST entry answer browsers of allowed origins (CORS); ops routes do not.
  await app.register(async (scope) => {
    await registerCors(scope, config);
    await mcpRoutes(scope, { ...serving, oauth });
    await restRoutes(scope, { config, cache, client, limiter, executeLimiter, metrics });
  });
  await app.register(async (scope) => oauthMetadataRoutes(scope, { oauth }));
  await app.register(async (scope) =>
    opsRoutes(scope, {
      opsToken: config.opsToken,
      metricsToken: config.metricsToken,
      cache,
      sessions,
      metrics,
      readiness: () => client.readiness(),
      rateLimits: () => rateLimits.scope(),
    }),
  );

  let subscription: Subscription | undefined;
  if (config.redisUrl) {
    subscription = await subscribeInvalidations(config.redisUrl, app.log, {
      onMessage: (message) => invalidate({ cache, sessions, metrics }, message, 'redis'),
      // Changes announced while Redis was away were missed: every cached config is checked again.
      onResubscribed: () => void cache.invalidate({ all: true }),
    });
  }

  app.addHook('onClose', async () => {
    await sessions.closeAll();
    await subscription?.close();
    await store.close();
    await rateLimits.close();
    await client.close();
  });
  return app;
}
