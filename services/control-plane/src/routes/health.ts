/** Liveness and readiness for operators: no authentication, no data. */
import type { AdminApp } from '../http/admin-app.ts';

export async function healthRoutes(app: AdminApp): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await app.domain.prisma.$queryRaw`SELECT 1`;
      return { status: 'ready' };
    } catch {
      return reply.status(503).send({ status: 'database unreachable' });
    }
  });
}
