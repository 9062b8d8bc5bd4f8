/**
 * The MCP gateway as a Fastify app. This is the skeleton: health only. The MCP endpoints, config
 * cache and invalidation arrive with the gateway issue.
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { GatewayConfig } from './config.ts';

export async function buildGateway(
  config: GatewayConfig,
  logger?: FastifyServerOptions['logger'],
): Promise<FastifyInstance> {
  const app = Fastify({ logger: logger ?? { level: config.logLevel } });
  app.get('/healthz', async () => ({ status: 'ok', service: 'gateway' }));
  return app;
}
