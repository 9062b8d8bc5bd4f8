/**
 * The control plane as a Fastify plugin tree: OpenAPI, the error handler, the admin API under
 * `/api/v2` and the legacy admin API under `/api/v1`. `server.ts` only opens the database and
 * listens; tests build the app themselves on their own database.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  RequestLogController,
  drainIdleWhileClosing,
  invalidatesConfig,
  loggerOptions,
  subscribeInvalidations,
} from '@bindery/service-kit';
import Fastify, { type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify';
import { localUrl } from '@bindery/service-kit/settings';
import {
  AUDIT_DEFAULTS,
  CUSTOM_TOOL_DEFAULTS,
  DEFAULT_GATEWAY_PUBLIC_URL,
  DEFAULT_OPENAPI_IMPORT_MAX_BYTES,
  QUERY_DEFAULTS,
  type Config,
} from './config.ts';
import { forgetAllSecrets, forgetSecrets } from './secrets/secret-references.ts';
import type { DomainContext } from './domain/context.ts';
import type { AdminApp } from './http/admin-app.ts';
import { requireAdmin } from './http/auth.ts';
import { DEFAULT_CONSOLE_DIR, consoleRoutes } from './http/console.ts';
import { frameworkErrorAnswer, registerErrorHandler } from './http/error-handler.ts';
import { registerJsonBody } from './http/json-body.ts';
import { refuseAmbiguousFraming } from './http/request-framing.ts';
import { lazySerializers } from './http/lazy-serializers.ts';
import { requestValidatorCompiler } from './http/request-validation.ts';
import { refuseDotSegments } from './http/static-paths.ts';
import { refuseUnstorableInput } from './http/unstorable-input.ts';
import { DEFAULT_LIMITS } from '@bindery/context-ops';
import { UPSTREAM_CAPS, type ErrorBody } from '@bindery/contracts';
import { BindingCache } from './execution/binding-cache.ts';
import { AuditWriter, type AuditSql } from './execution/audit-writer.ts';
import { AuditStreamHub, type AuditStreamOptions } from './audit/audit-stream.ts';
import { ContextCache } from './context/context-cache.ts';
import { ContextStore } from './context/context-store.ts';
import type { FoldPolicy } from './context/table-folds.ts';
import { DEFAULT_TABLE_LIMITS, type TableLimits } from './context/table-limits.ts';
import {
  DatabaseTableVersions,
  LocalTableVersions,
  RedisTableVersions,
  type TableVersions,
} from './context/table-versions.ts';
import { NotifyTableVersions } from './context/table-version-notify.ts';
import { purgeExpiredOutcomes } from './kinds/idempotency.ts';
import { QueryPool } from './kinds/context/query-pool.ts';
import { CustomToolSandbox } from './kinds/custom/sandbox/index.ts';
import { OpenApiConverter } from './kinds/http/openapi/openapi-conversion.ts';
import { createGuardedDispatcher } from './outbound/ssrf-guard.ts';
import { requireInternal } from './http/internal-auth.ts';
import { serializeRequest } from './http/request-log.ts';
import { adiRoutes } from './routes/adis.ts';
import { auditRoutes } from './routes/audit.ts';
import { internalRoutes } from './routes/internal.ts';
import {
  authorizationServerRoutes,
  externalSignInRoutes,
  oauthGrantRoutes,
  oauthInternalRoutes,
} from './routes/oauth.ts';
import { ExternalSignIn } from './oauth/external-sign-in.ts';
import { AuthorizationServer } from './oauth/authorization-server.ts';
import { aeiRoutes } from './routes/aeis.ts';
import { bindingRoutes } from './routes/bindings.ts';
import { callerRoutes } from './routes/callers.ts';
import { promptRoutes } from './routes/prompts.ts';
import { exportImportRoutes } from './routes/export-import.ts';
import { gatewayRoutes } from './routes/gateways.ts';
import { healthRoutes } from './routes/health.ts';
import { legacyInstanceRoutes } from './routes/legacy-instances.ts';
import { createMetrics, type PoolCounts } from './metrics.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { openApiImportRoutes } from './routes/openapi-imports.ts';
import { projectRoutes } from './routes/projects.ts';
import { secretRoutes } from './routes/secrets.ts';
import { sidebarRoutes } from './routes/sidebar.ts';
import { Sidebar, type ToolResult } from './sidebar/sidebar.ts';
import { DomainError } from './domain/errors.ts';
import { tableRoutes } from './routes/tables.ts';
import { tokenRoutes } from './routes/tokens.ts';
import { signInRoutes, userRoutes } from './routes/users.ts';
import { upstreamOAuthRoutes, upstreamServerRoutes } from './routes/upstream-servers.ts';
import { UpstreamOAuth } from './kinds/mcp/oauth/broker.ts';
import { syncUpstreamServer } from './kinds/mcp/upstream-servers.ts';
import { UpstreamRegistry } from './kinds/mcp/registry.ts';
import { TaskHandles } from './execution/task-handles.ts';
import { RequestStates } from './execution/request-state.ts';

type QuerySettings = keyof typeof QUERY_DEFAULTS;
type AuditSettings = keyof typeof AUDIT_DEFAULTS;
type CustomToolSettings = keyof typeof CUSTOM_TOOL_DEFAULTS;

export interface AppOptions {
  config: Pick<Config, 'bodyLimitBytes' | 'logLevel' | 'internalToken' | 'maxResultBytes'> &
    Partial<
      Pick<
        Config,
        | 'logRequests'
        | 'logFormat'
        | 'httpToolsAllowedNetworks'
        | 'openApiImportMaxBytes'
        | 'contextCacheBytes'
        | 'bindingCacheEntries'
        | 'redisUrl'
        | 'metricsToken'
        | 'idempotencyTtlMs'
        | 'gatewayPublicUrl'
        | 'oauthIssuer'
        | 'oauthKeyRotationMs'
        | 'oidc'
        | 'oauthClients'
        | 'gatewayUrls'
        | 'upstreamStdioCommands'
        | 'upstreamRefreshMs'
        | 'upstreamMessageMaxBytes'
        | 'upstreamCallMaxBytes'
        | 'traceUrlTemplate'
        | 'tableVersionLeaseMs'
        | 'databaseUrl'
        | 'tableMaxBytes'
        | 'tableWriteMaxBytes'
        | QuerySettings
        | AuditSettings
        | CustomToolSettings
      >
    >;
  domain: DomainContext;
  /**
   * The database the app runs on. On embedded PGlite this process is the only writer, so tables'
   * versions are kept in-process; on PostgreSQL control planes share them through Redis (with
   * `config.redisUrl`), else through the database's LISTEN/NOTIFY (with `config.databaseUrl`), else
   * every read asks the database (when this is absent too); each is right with any number of
   * control planes.
   */
  engine?: 'postgres' | 'pglite';
  /** How often tables' patches are folded into their snapshots (tests make it eager or lazy). */
  foldPolicy?: FoldPolicy;
  /** The PostgreSQL connection pool, for its metrics (absent on embedded PGlite). */
  pool?: PoolCounts | undefined;
  /**
   * Plain statements on the app's database without Prisma (Database.sql), for the audit trail's
   * INSERT; absent, they go through Prisma's raw queries.
   */
  sql?: AuditSql | undefined;
  logger?: FastifyServerOptions['logger'];
  /** Where the app's own logger writes (stdout otherwise); tests read what it logs. */
  logStream?: { write(line: string): void };
  /** Sees every route as it is added (a test compiles every route's schemas). */
  onRoute?: (route: RouteOptions) => void;
  /** Start the query worker pool (all its threads) at once; otherwise at the first long query. */
  warmQueryWorkers?: boolean;
  /** Start the custom tool sandbox's threads at once; otherwise at the first custom tool call or save. */
  warmCustomToolWorkers?: boolean;
  /** How often upstream instances are pinged (30 s; tests make it shorter). */
  upstreamPingEveryMs?: number;
  /** The console's build (services/console/dist by default); without its index.html, /console answers 503. */
  consoleDir?: string;
  /** The live audit streams' poll interval and limits (tests make them small). */
  auditStreams?: Partial<AuditStreamOptions>;
}

const DEFAULT_CONTEXT_CACHE_BYTES = 64 * 1024 * 1024;
const DEFAULT_BINDING_CACHE_ENTRIES = 20_000;
const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const DEFAULT_UPSTREAM_REFRESH_MS = 300_000;
/** How often expired idempotency records are deleted (each replica does it; deleting twice is harmless). */
const IDEMPOTENCY_PURGE_EVERY_MS = 15 * 60_000;

function definedOnly<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** Builds the control-plane app (not listening). */
export async function buildApp(options: AppOptions): Promise<AdminApp> {
  const app = Fastify({
    logger:
      options.logger ??
      loggerOptions({
        level: options.config.logLevel,
        format: options.config.logFormat ?? 'json',
        name: 'control-plane',
        serializeRequest,
        ...(options.logStream && { destination: options.logStream }),
      }),
    bodyLimit: options.config.bodyLimitBytes,
    logController: new RequestLogController({ enabled: options.config.logRequests !== false }),
    frameworkErrors: frameworkErrorAnswer,
    // A request without Host is refused by refuseAmbiguousFraming, in the one error body.
    http: { requireHostHeader: false },
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  drainIdleWhileClosing(app);
  app.setValidatorCompiler(requestValidatorCompiler());
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  const metrics = createMetrics({ pool: options.pool });
  const sandbox = customToolSandbox(options, app.log.child({ component: 'custom-tools' }), metrics);
  const contexts = contextStore(options, app.log.child({ component: 'contexts' }), metrics);
  // onClose runs once the requests in flight are answered: their writes finish first.
  app.addHook('onClose', () => contexts.close());
  const bindings = new BindingCache(
    options.config.bindingCacheEntries ?? DEFAULT_BINDING_CACHE_ENTRIES,
    metrics.bindingCache,
  );
  const listener = options.domain.listener;
  // Domain services check custom tools' sources in the sandbox that will run them, and tell the
  // context store about tables' data they replace or delete. An exposure change drops the
  // bindings it touched before it is answered (and before the gateways hear).
  app.decorate('domain', {
    ...options.domain,
    sandbox,
    contexts,
    tableLimits: tableLimits(options),
    listener: {
      configChanged(aeiIds) {
        bindings.invalidate(aeiIds);
        return listener.configChanged(aeiIds);
      },
      tableChanged: (tableId, version) => listener.tableChanged?.(tableId, version),
      secretsChanged: (userId) => listener.secretsChanged?.(userId),
      resourceUpdated: (serverId, uri) => listener.resourceUpdated?.(serverId, uri),
    },
  });
  await hearOtherControlPlanes(app, options.config.redisUrl, bindings);
  registerErrorHandler(app);
  refuseAmbiguousFraming(app);
  closeConnectionsWhenClosing(app);
  app.addHook('onRequest', async (_request, reply) => {
    metrics.requestsInFlight.inc();
    // The answer's 'close' comes once for every request: answered, or its connection gone.
    reply.raw.once('close', () => metrics.requestsInFlight.dec());
  });
  registerJsonBody(app);
  refuseUnstorableInput(app);
  refuseDotSegments(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Bindery control plane',
        version: '0.1.0',
        description:
          'Admin API: users and admin tokens, contexts (tables), tools (ADIs), exposures (AEIs), ' +
          'their bindings and the secrets tools use, personal MCP keys and the caller map. ' +
          'Errors are always {"error": {"code", "message", "details", "request_id"}}.',
      },
      components: {
        securitySchemes: {
          adminToken: { type: 'http', scheme: 'bearer', description: 'an admin token' },
          internalToken: { type: 'http', scheme: 'bearer', description: 'INTERNAL_TOKEN (gateways only)' },
          sidebarToken: {
            type: 'http',
            scheme: 'bearer',
            description: "a sidebar session's token (its own session only)",
          },
        },
      },
    },
  });
  // The internal API is for gateways: the public document (/docs, /openapi.json) leaves it out;
  // the whole document is at /internal/openapi.json, behind INTERNAL_TOKEN.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    transformSpecification: (document) => publicDocument(document),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => publicDocument(app.swagger()));
  await consoleRoutes(app, { dir: options.consoleDir ?? DEFAULT_CONSOLE_DIR });

  // Every request a tool or an import sends out goes through this one guarded dispatcher.
  const outbound = createGuardedDispatcher({
    allowedNetworks: options.config.httpToolsAllowedNetworks ?? [],
  });
  const converter = new OpenApiConverter();
  app.addHook('onClose', () => converter.close());
  const upstreams = upstreamRegistry(app, options, outbound, metrics);
  // Servers that require OAuth: this control plane is each person's OAuth client of them.
  upstreams.oauth = new UpstreamOAuth({
    ctx: () => app.domain,
    outbound,
    publicUrl: () => options.config.oauthIssuer ?? listeningUrl(app),
    changed: (serverId, connected) =>
      void upstreams
        .connectionChanged(serverId, connected)
        .catch((error: unknown) => app.log.warn({ err: error, serverId }, 'upstream pool not restarted')),
  });
  await app.register(upstreamOAuthRoutes({ registry: upstreams }));
  const gatewayPublicUrl = options.config.gatewayPublicUrl ?? DEFAULT_GATEWAY_PUBLIC_URL;
  // A grant that goes: every gateway looks its person's exposures up afresh, and its tokens stop.
  const grantGone = async (userId: string) => {
    const aeis = await app.domain.prisma.aei.findMany({ where: { userId }, select: { id: true } });
    if (aeis.length > 0) await app.domain.listener.configChanged(aeis.map((aei) => aei.id));
  };
  // The control plane's public URL: the authorization server's issuer, the sign-in callback's base.
  const publicUrl = () => options.config.oauthIssuer ?? listeningUrl(app);
  const keyring = options.domain.keyring;
  const authorization =
    keyring &&
    new AuthorizationServer({
      db: app.domain.prisma,
      keyring,
      issuer: () => publicUrl(),
      gatewayPublicUrl,
      internalToken: options.config.internalToken,
      outbound,
      grantGone,
      keyRotationMs: options.config.oauthKeyRotationMs ?? DEFAULT_KEY_ROTATION_MS,
      clients: options.config.oauthClients ?? [],
      log: app.log.child({ component: 'oauth' }),
    });
  if (authorization) app.addHook('onClose', () => authorization.close());
  const external =
    options.config.oidc && new ExternalSignIn(options.config.oidc, options.config.internalToken);
  await app.register(externalSignInRoutes({ external, publicUrl }));
  await app.register(
    authorizationServerRoutes({
      server: authorization,
      gatewayPublicUrl,
      consoleDir: options.consoleDir ?? DEFAULT_CONSOLE_DIR,
    }),
  );
  // The upstream connections first: a dispatcher closes once its requests end, and an upstream's
  // listen stream (a subscription) never ends by itself.
  app.addHook('onClose', async () => {
    await upstreams.close();
    await outbound.close();
  });
  const auditStreams = new AuditStreamHub(
    app.domain.prisma,
    { ...options.auditStreams, traceUrl: options.config.traceUrlTemplate },
    app.log.child({ component: 'audit-stream' }),
  );
  app.decorate('auditStreams', auditStreams);
  // Open streams would keep the server from closing: they end first (clients reconnect elsewhere).
  app.addHook('preClose', async () => auditStreams.close());

  await app.register(healthRoutes);
  await app.register(metricsRoutes(metrics, options.config.metricsToken));
  // The one admin route without a token: sign-in answers one.
  await app.register(signInRoutes, { prefix: '/api/v2' });
  await app.register(
    async (v2: AdminApp) => {
      requireAdmin(v2);
      await v2.register(userRoutes);
      await v2.register(tokenRoutes);
      await v2.register(projectRoutes);
      await v2.register(tableRoutes);
      await v2.register(adiRoutes, { outbound });
      await v2.register(aeiRoutes({ gatewayPublicUrl }));
      await v2.register(
        oauthGrantRoutes({
          gatewayPublicUrl,
          gone: grantGone,
          registered: (clientId) => authorization?.registered(clientId) ?? false,
        }),
      );
      await v2.register(callerRoutes({ gatewayPublicUrl }));
      await v2.register(gatewayRoutes({ gatewayUrls: options.config.gatewayUrls ?? [], gatewayPublicUrl }));
      await v2.register(bindingRoutes);
      await v2.register(promptRoutes);
      await v2.register(auditRoutes(auditStreams, options.config.traceUrlTemplate));
      await v2.register(exportImportRoutes);
      await v2.register(secretRoutes);
      await v2.register(upstreamServerRoutes({ registry: upstreams }));
      await v2.register(
        openApiImportRoutes({
          outbound,
          converter,
          maxDocumentBytes: options.config.openApiImportMaxBytes ?? DEFAULT_OPENAPI_IMPORT_MAX_BYTES,
        }),
      );
    },
    { prefix: '/api/v2' },
  );
  await app.register(
    async (v1: AdminApp) => {
      requireAdmin(v1);
      await v1.register(legacyInstanceRoutes);
    },
    { prefix: '/api/v1' },
  );
  const query = { ...QUERY_DEFAULTS, ...definedOnly(options.config) };
  const idempotencyTtlMs = options.config.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS;
  const queries = new QueryPool({
    timeoutMs: query.queryTimeoutMs,
    inlineMs: query.queryInlineMs,
    threads: query.queryWorkers,
    queue: query.queryQueue,
    maxWaitMs: query.queryMaxWaitMs,
    perTenant: query.queryTenantEscalations,
    workerMemoryMb: query.queryWorkerMemoryMb,
    log: app.log.child({ component: 'query-pool' }),
    meter: metrics.queryPool,
  });
  if (options.warmQueryWorkers) queries.warm();
  // The worker threads must not outlive the app (a test's app, or a server shutting down).
  app.addHook('onClose', () => queries.close());
  const audit = auditWriter(app, options, metrics);
  const limits = { ...DEFAULT_LIMITS, maxResultBytes: options.config.maxResultBytes, query: queries.budget };
  const sidebar = new Sidebar({
    db: app.domain.prisma,
    contexts,
    queries,
    limits,
    writes: metrics.writes,
    // Through the executor's own route, in process: the same checks, limits and audit as a gateway's call.
    runTool: async (adiId, call) => {
      const answer = await app.inject({
        method: 'POST',
        url: `/internal/adi/${encodeURIComponent(adiId)}/execute`,
        headers: { authorization: `Bearer ${options.config.internalToken}` },
        payload: call,
      });
      const body = answer.json<ToolResult & Partial<ErrorBody>>();
      if (answer.statusCode !== 200) {
        const code = body.error?.code ?? 'INTERNAL';
        throw new DomainError(code, body.error?.message ?? `the call failed (${answer.statusCode})`);
      }
      return body;
    },
  });
  await app.register(sidebarRoutes(sidebar), { prefix: '/api/v2' });
  if (options.warmCustomToolWorkers) sandbox.warm();
  // After the requests in flight (onClose runs once they are answered): their calls finish first.
  app.addHook('onClose', () => sandbox.close());
  await app.register(
    async (internal: AdminApp) => {
      requireInternal(internal, options.config.internalToken);
      internal.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
      await internal.register(oauthInternalRoutes({ gatewayPublicUrl }));
      await internal.register(
        internalRoutes({
          limits,
          bindings,
          contexts,
          metrics,
          audit,
          queries,
          idempotencyTtlMs,
          requestStates: new RequestStates(options.config.internalToken),
          taskHandles: new TaskHandles(options.config.internalToken),
          outbound,
          sandbox,
          upstreams,
          log: app.log.child({ component: 'executor' }),
        }),
      );
    },
    { prefix: '/internal' },
  );
  purgeIdempotencyRecords(app, idempotencyTtlMs);
  return app;
}

/** The OpenAPI document without the internal API's paths and security scheme. */
export function publicDocument(document: object): Record<string, unknown> {
  const {
    paths = {},
    components = {},
    ...rest
  } = document as {
    paths?: Record<string, unknown>;
    components?: { securitySchemes?: Record<string, unknown> } & Record<string, unknown>;
  };
  const { internalToken: _internal, ...securitySchemes } = components.securitySchemes ?? {};
  return {
    ...rest,
    components: { ...components, securitySchemes },
    paths: Object.fromEntries(Object.entries(paths).filter(([path]) => !path.startsWith('/internal/'))),
  };
}

/**
 * The pools of upstream MCP servers. Closed with the app, after the requests in flight: every
 * stdio child is killed and waited for.
 */
function upstreamRegistry(
  app: AdminApp,
  options: AppOptions,
  outbound: ReturnType<typeof createGuardedDispatcher>,
  metrics: ReturnType<typeof createMetrics>,
): UpstreamRegistry {
  const registry = new UpstreamRegistry(() => app.domain, {
    outbound,
    log: app.log.child({ component: 'upstream' }),
    stdioCommands: options.config.upstreamStdioCommands ?? [],
    refreshMs: options.config.upstreamRefreshMs ?? DEFAULT_UPSTREAM_REFRESH_MS,
    caps: {
      maxMessageBytes: options.config.upstreamMessageMaxBytes ?? UPSTREAM_CAPS.messageMaxBytes,
      maxCallBytes: options.config.upstreamCallMaxBytes ?? UPSTREAM_CAPS.callMaxBytes,
    },
    meter: metrics.upstreamPool,
    ...(options.upstreamPingEveryMs !== undefined && { pingEveryMs: options.upstreamPingEveryMs }),
  });
  registry.syncer = (serverId, reason) => syncUpstreamServer(app.domain, serverId, { registry }, reason);
  registry.resourceUpdated = (serverId, uri) => app.domain.listener.resourceUpdated?.(serverId, uri);
  return registry;
}

/**
 * With REDIS_URL, the exposure changes other control planes announce drop this one's cached
 * bindings too (its own changes drop them before they are answered).
 */
async function hearOtherControlPlanes(
  app: AdminApp,
  redisUrl: string | undefined,
  bindings: BindingCache,
): Promise<void> {
  if (redisUrl === undefined) return;
  const log = app.log.child({ component: 'binding-cache' });
  const subscription = await subscribeInvalidations(redisUrl, log, {
    onMessage(message) {
      for (const userId of message.secret_owners ?? []) forgetSecrets(userId);
      // Tables' data changing is news for gateways' subscribers only: no binding changed.
      if (!invalidatesConfig(message)) return;
      if (message.aei_ids && !message.all && !message.api_keys) bindings.invalidate(message.aei_ids);
      else bindings.clear();
    },
    onResubscribed: () => {
      bindings.clear();
      forgetAllSecrets();
    },
  });
  app.addHook('onClose', () => subscription.close());
}

/**
 * The audit trail's group commit, sized by the AUDIT_* settings. Once the app starts closing, rows
 * are written without delay (the requests in flight wait for theirs); once it closed, whatever is
 * still queued (a request cut by the shutdown's grace period) is written before the database is.
 */
function auditWriter(
  app: AdminApp,
  options: AppOptions,
  metrics: ReturnType<typeof createMetrics>,
): AuditWriter {
  const settings = { ...AUDIT_DEFAULTS, ...definedOnly(options.config) };
  const prisma = options.domain.prisma;
  const sql: AuditSql = options.sql ?? {
    query: async <T>(statement: string, params: unknown[] = []): Promise<T[]> => {
      await prisma.$executeRawUnsafe(statement, ...params);
      return [];
    },
  };
  const writer = new AuditWriter(sql, {
    flushMs: settings.auditFlushMs,
    batchMax: settings.auditBatchMax,
    queueMax: settings.auditQueueMax,
    meter: metrics.audit,
    log: app.log.child({ component: 'audit' }),
  });
  app.addHook('preClose', async () => writer.hurry());
  app.addHook('onClose', () => writer.close());
  return writer;
}

/** The context store, with tables' versions kept where the engine and REDIS_URL allow. */
function contextStore(
  options: AppOptions,
  log: AdminApp['log'],
  metrics: ReturnType<typeof createMetrics>,
): ContextStore {
  let versions: TableVersions;
  if (options.engine === 'pglite') versions = new LocalTableVersions();
  else if (options.engine === 'postgres' && options.config.redisUrl !== undefined) {
    // Control planes of one database share leases; the database's name and oid say which.
    const scope = () =>
      options.domain.prisma.$queryRaw<
        { scope: string }[]
      >`SELECT current_database() || '-' || oid::text AS scope
          FROM pg_database WHERE datname = current_database()`.then((rows) => rows[0]?.scope ?? 'default');
    versions = new RedisTableVersions({
      url: options.config.redisUrl,
      scope,
      log,
      meter: metrics.tableVersions,
      ...(options.config.tableVersionLeaseMs !== undefined && {
        leaseMs: options.config.tableVersionLeaseMs,
      }),
    });
  } else if (options.engine === 'postgres' && options.config.databaseUrl !== undefined) {
    const prisma = options.domain.prisma;
    versions = new NotifyTableVersions({
      url: options.config.databaseUrl,
      sql: options.sql ?? {
        query: <T>(text: string, params: unknown[] = []) => prisma.$queryRawUnsafe<T[]>(text, ...params),
      },
      log,
      meter: metrics.tableVersions,
      ...(options.config.tableVersionLeaseMs !== undefined && {
        leaseMs: options.config.tableVersionLeaseMs,
      }),
    });
  } else versions = new DatabaseTableVersions();
  return new ContextStore({
    prisma: options.domain.prisma,
    cache: new ContextCache(
      options.config.contextCacheBytes ?? DEFAULT_CONTEXT_CACHE_BYTES,
      metrics.contextCache,
    ),
    versions,
    log,
    ...(options.foldPolicy && { fold: options.foldPolicy }),
    limits: tableLimits(options),
    // Gateways turn it into resources/updated for the sessions subscribed to the table's contexts.
    changed: (tableId, version) => options.domain.listener.tableChanged?.(tableId, version),
  });
}

/** TABLE_MAX_BYTES and TABLE_WRITE_MAX_BYTES, their defaults where the config leaves them out. */
function tableLimits(options: AppOptions): TableLimits {
  return {
    maxBytes: options.config.tableMaxBytes ?? DEFAULT_TABLE_LIMITS.maxBytes,
    maxWriteBytes: options.config.tableWriteMaxBytes ?? DEFAULT_TABLE_LIMITS.maxWriteBytes,
  };
}

/** The sandbox custom tools run in, sized by the CUSTOM_TOOL_* settings, reporting to `metrics`. */
function customToolSandbox(
  options: AppOptions,
  log: AdminApp['log'],
  metrics: ReturnType<typeof createMetrics>,
): CustomToolSandbox {
  const settings = { ...CUSTOM_TOOL_DEFAULTS, ...definedOnly(options.config) };
  const meter = metrics.customToolPool;
  return new CustomToolSandbox({
    threads: settings.customToolWorkers,
    queue: settings.customToolQueue,
    perTenant: settings.customToolTenantCalls,
    memoryMb: settings.customToolMemoryMb,
    // A custom tool's answer is bounded like every tool answer (RESULT_LIMIT_BYTES).
    limits: {
      timeoutMs: settings.customToolTimeoutMs,
      maxResultBytes: options.config.maxResultBytes,
      maxWrites: settings.customToolMaxWrites,
      writesPerSecond: settings.customToolWritesPerSecond,
    },
    log,
    report: (running, queued) => {
      meter.running.set(running);
      meter.queued.set(queued);
    },
    refused: (reason) => meter.rejected(reason).inc(),
  });
}

/**
 * Answers sent once the app has begun closing ask the client to close the connection. Fastify does
 * that for requests that arrive while closing, but a request already in flight would leave its
 * keep-alive connection open after its answer, and the server's close would wait for that idle
 * socket to time out: a minute before a restart could finish.
 */
function closeConnectionsWhenClosing(app: AdminApp): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    return payload;
  });
}

/** Deletes expired idempotency records at start and every quarter of an hour while the app runs. */
function purgeIdempotencyRecords(app: AdminApp, ttlMs: number): void {
  const purge = () =>
    purgeExpiredOutcomes(app.domain.prisma, ttlMs).then(
      (count) => void (count > 0 && app.log.info({ count }, 'expired idempotency records deleted')),
      (error: unknown) => app.log.warn({ err: error }, 'could not delete expired idempotency records'),
    );
  let timer: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    await purge();
    timer = setInterval(() => void purge(), IDEMPOTENCY_PURGE_EVERY_MS);
    timer.unref();
  });
  app.addHook('onClose', async () => clearInterval(timer));
}

/** An OAuth key is replaced after 30 days unless told otherwise (OAUTH_KEY_ROTATION_DAYS). */
const DEFAULT_KEY_ROTATION_MS = 30 * 86_400_000;

/** The URL this app listens at (an unspecified address as loopback): the issuer when none is set. */
function listeningUrl(app: FastifyInstance): string {
  const address = app.server.address();
  if (address === null || typeof address === 'string') return 'http://127.0.0.1';
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return localUrl(host, address.port);
}
