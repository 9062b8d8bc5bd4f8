/**
 * Operator routes: liveness, readiness (the control plane's state as the gateway sees it, and
 * whether rate limits are shared through Redis), Prometheus metrics (behind METRICS_TOKEN when it
 * is set), and cache invalidation (ops token) which also tells open sessions their tools changed,
 * and carries the control plane's table changes (resources/updated for the sessions subscribed to
 * those tables' contexts) and upstream resource updates (for the sessions subscribed to those
 * resources).
 */
import {
  RESOURCE_URI_MAX_CHARS,
  TABLE_ID_MAX_CHARS,
  bearerTokenCheck,
  invalidatesConfig,
  type ResourceUpdate,
  type TableChange,
} from '@bindery/service-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readiness } from '../control-plane/client.ts';
import { sendRestError } from '../http/rest-errors.ts';
import type { ExposureCache } from '../control-plane/exposure-cache.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { RateLimitScope } from '../http/shared-rate-limit.ts';
import type { SessionRegistry } from '../mcp/sessions.ts';

export interface OpsRouteDeps {
  opsToken: string | undefined;
  /** When set, `/metrics` needs `Authorization: Bearer <metricsToken>`; unset = open. */
  metricsToken: string | undefined;
  cache: ExposureCache;
  sessions: SessionRegistry;
  metrics: GatewayMetrics;
  readiness(): Readiness;
  /**
   * How api keys' rate limits apply now: one budget across the gateways, or this gateway's own
   * (no Redis, or Redis unreachable: still ready, the gateway serves with local limits).
   */
  rateLimits(): RateLimitScope;
}

const READINESS: Record<Readiness, { status: number; message: string }> = {
  ready: { status: 200, message: 'the control plane answers' },
  // Still 200: this gateway serves every key it has cached, and when the control plane is down
  // for one gateway it is usually down for all of them; a load balancer that dropped degraded
  // gateways would drop exactly those still serving. The body and a metric say it for alerts.
  degraded: {
    status: 200,
    message: 'the control plane is failing: cached keys are served, tool calls fail at once',
  },
  waiting: { status: 503, message: 'the control plane has not answered yet' },
};

export interface InvalidateBody {
  aei_ids?: string[];
  api_keys?: string[];
  all?: boolean;
  /** Tables whose data changed (alone in a message, they drop no cached config). */
  table_changes?: TableChange[];
  /** Upstream resources that changed, which this gateway's subscribers may watch (alone likewise). */
  resource_updates?: ResourceUpdate[];
}

const InvalidateSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    aei_ids: { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 10_000 },
    api_keys: { type: 'array', items: { type: 'string', maxLength: 256 }, maxItems: 10_000 },
    all: { type: 'boolean' },
    table_changes: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['table_id', 'version'],
        properties: {
          table_id: { type: 'string', minLength: 1, maxLength: TABLE_ID_MAX_CHARS },
          version: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        },
      },
    },
    resource_updates: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['upstream_server_id', 'uri'],
        properties: {
          upstream_server_id: { type: 'string', minLength: 1, maxLength: TABLE_ID_MAX_CHARS },
          uri: { type: 'string', minLength: 1, maxLength: RESOURCE_URI_MAX_CHARS },
        },
      },
    },
  },
} as const;

/**
 * Drops cache entries and announces list_changed to the affected sessions, and sends
 * resources/updated for the tables that changed (routes and Redis share it).
 */
export async function invalidate(
  deps: Pick<OpsRouteDeps, 'cache' | 'sessions' | 'metrics'>,
  body: InvalidateBody,
  source: 'http' | 'redis',
): Promise<{ aei_ids: string[]; sessions_notified: number; resources_updated?: number }> {
  let answer: { aei_ids: string[]; sessions_notified: number } = { aei_ids: [], sessions_notified: 0 };
  // A message of table changes alone leaves the cache be: writes are far more frequent than changes.
  if (invalidatesConfig(body)) {
    deps.metrics.invalidations.inc({ source });
    const aeiIds = deps.cache.invalidate({
      ...(body.aei_ids && { aeiIds: body.aei_ids }),
      ...(body.api_keys && { apiKeys: body.api_keys }),
      ...(body.all && { all: true }),
    });
    const notified = await deps.sessions.announceToolListChanged(aeiIds);
    answer = { aei_ids: aeiIds, sessions_notified: notified };
  }
  if (body.table_changes === undefined && body.resource_updates === undefined) return answer;
  let updated = 0;
  if (body.table_changes !== undefined) {
    deps.metrics.tableChanges.inc({ source }, body.table_changes.length);
    updated += deps.sessions.subscriptions.tablesChanged(body.table_changes);
  }
  if (body.resource_updates !== undefined) {
    updated += deps.sessions.subscriptions.upstreamUpdated(body.resource_updates);
  }
  deps.metrics.resourceUpdates.inc(updated);
  return { ...answer, resources_updated: updated };
}

/** The 401 answer of the ops routes, in the gateway's REST error body. */
function unauthorized(request: FastifyRequest, reply: FastifyReply, message: string) {
  return sendRestError(request, reply, { status: 401, code: 'UNAUTHORIZED', message });
}

export async function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok', service: 'gateway' }));
  app.get('/readyz', async (_request, reply) => {
    const state = deps.readiness();
    const { status, message } = READINESS[state];
    return reply
      .status(status)
      .send({ status: state, control_plane: message, rate_limits: deps.rateLimits() });
  });
  const metricsAllowed = deps.metricsToken === undefined ? undefined : bearerTokenCheck(deps.metricsToken);
  app.get('/metrics', async (request, reply) => {
    if (metricsAllowed && !metricsAllowed(request.headers.authorization)) {
      return unauthorized(request, reply, 'send "Authorization: Bearer <METRICS_TOKEN>"');
    }
    return reply
      .header('content-type', deps.metrics.registry.contentType)
      .send(await deps.metrics.registry.metrics());
  });
  const opsAllowed = deps.opsToken === undefined ? undefined : bearerTokenCheck(deps.opsToken);
  app.post<{ Body: InvalidateBody }>(
    '/cache/invalidate',
    { schema: { body: InvalidateSchema } },
    async (request, reply) => {
      if (!opsAllowed || !opsAllowed(request.headers.authorization)) {
        return unauthorized(
          request,
          reply,
          opsAllowed ? 'send "Authorization: Bearer <OPS_TOKEN>"' : 'OPS_TOKEN is not set on this gateway',
        );
      }
      return invalidate(deps, request.body, 'http');
    },
  );
}
