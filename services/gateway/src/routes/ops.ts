/**
 * Operator routes: liveness, readiness (503 until the control plane answered once), Prometheus
 * metrics (behind METRICS_TOKEN when it is set), and cache invalidation (ops token) which also
 * tells open sessions their tools changed.
 */
import { bearerTokenCheck } from '@bindery/contracts/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ExposureCache } from '../exposure-cache.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { SessionRegistry } from '../sessions.ts';

export interface OpsRouteDeps {
  opsToken: string | undefined;
  /** When set, `/metrics` needs `Authorization: Bearer <metricsToken>`; unset = open. */
  metricsToken: string | undefined;
  cache: ExposureCache;
  sessions: SessionRegistry;
  metrics: GatewayMetrics;
  ready(): boolean;
}

export interface InvalidateBody {
  aei_ids?: string[];
  api_keys?: string[];
  all?: boolean;
}

const InvalidateSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    aei_ids: { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 10_000 },
    api_keys: { type: 'array', items: { type: 'string', maxLength: 256 }, maxItems: 10_000 },
    all: { type: 'boolean' },
  },
} as const;

/** Drops cache entries and announces list_changed to the affected sessions (routes and Redis share it). */
export async function invalidate(deps: Pick<OpsRouteDeps, 'cache' | 'sessions'>, body: InvalidateBody) {
  const aeiIds = deps.cache.invalidate({
    ...(body.aei_ids && { aeiIds: body.aei_ids }),
    ...(body.api_keys && { apiKeys: body.api_keys }),
    ...(body.all && { all: true }),
  });
  const notified = await deps.sessions.announceToolListChanged(aeiIds);
  return { aei_ids: aeiIds, sessions_notified: notified };
}

/** The 401 answer of the ops routes, in the gateway's REST error body. */
function unauthorized(request: FastifyRequest, reply: FastifyReply, message: string) {
  return reply.status(401).send({ error: { code: 'UNAUTHORIZED', message, request_id: String(request.id) } });
}

export async function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok', service: 'gateway' }));
  app.get('/readyz', async (_request, reply) =>
    deps.ready() ? { status: 'ready' } : reply.status(503).send({ status: 'waiting for the control plane' }),
  );
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
      deps.metrics.invalidations.inc({ source: 'http' });
      return invalidate(deps, request.body);
    },
  );
}
