/**
 * Operator routes: liveness, readiness (503 until the control plane answered once), Prometheus
 * metrics, and cache invalidation (ops token) which also tells open sessions their tools changed.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { bearerToken } from '@bindery/contracts';
import type { FastifyInstance } from 'fastify';
import type { ExposureCache } from '../exposure-cache.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { SessionRegistry } from '../sessions.ts';

export interface OpsRouteDeps {
  opsToken: string | undefined;
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

const digest = (s: string) => createHash('sha256').update(s).digest();

export async function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok', service: 'gateway' }));
  app.get('/readyz', async (_request, reply) =>
    deps.ready() ? { status: 'ready' } : reply.status(503).send({ status: 'waiting for the control plane' }),
  );
  app.get('/metrics', async (_request, reply) =>
    reply
      .header('content-type', deps.metrics.registry.contentType)
      .send(await deps.metrics.registry.metrics()),
  );
  const expected = deps.opsToken === undefined ? undefined : digest(deps.opsToken);
  app.post<{ Body: InvalidateBody }>(
    '/cache/invalidate',
    { schema: { body: InvalidateSchema } },
    async (request, reply) => {
      const token = bearerToken(request.headers.authorization);
      if (!expected || !token || !timingSafeEqual(digest(token), expected)) {
        return reply.status(401).send({
          error: {
            code: 'UNAUTHORIZED',
            message: expected
              ? 'send "Authorization: Bearer <OPS_TOKEN>"'
              : 'OPS_TOKEN is not set on this gateway',
            request_id: String(request.id),
          },
        });
      }
      deps.metrics.invalidations.inc({ source: 'http' });
      return invalidate(deps, request.body);
    },
  );
}
