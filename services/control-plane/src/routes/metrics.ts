/**
 * `GET /metrics`: the control plane's Prometheus metrics, for operators, not part of the OpenAPI
 * document. With METRICS_TOKEN set it needs `Authorization: Bearer <METRICS_TOKEN>`; unset, it is
 * open (a local start listens on loopback only).
 */
import { bearerTokenCheck } from '@bindery/service-kit';
import { DomainError } from '../domain/errors.ts';
import type { AdminApp } from '../http/admin-app.ts';
import type { ControlPlaneMetrics } from '../metrics.ts';

export function metricsRoutes(metrics: ControlPlaneMetrics, metricsToken: string | undefined) {
  const allowed = metricsToken === undefined ? undefined : bearerTokenCheck(metricsToken);
  return async function routes(app: AdminApp): Promise<void> {
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (allowed && !allowed(request.headers.authorization)) {
        throw new DomainError('UNAUTHORIZED', 'send "Authorization: Bearer <METRICS_TOKEN>"');
      }
      return reply
        .header('content-type', metrics.registry.contentType)
        .send(await metrics.registry.metrics());
    });
  };
}
