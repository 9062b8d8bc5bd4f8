// Pins METRICS_TOKEN on the gateway: with it set, GET /metrics answers 401 with the gateway's REST
// error body unless "Authorization: Bearer <METRICS_TOKEN>" is sent (no token, a wrong one, the ops
// token), and 200 with it; without it /metrics is open. Tokens are never echoed. /metrics needs no
// control plane, so none runs here (the gateway points at a closed loopback port).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { freePort } from './support/stack.ts';

const METRICS_TOKEN = 'gateway-metrics-token-0001';
const OPS_TOKEN = 'gateway-ops-token-00000001';
const gateways: FastifyInstance[] = [];
let guardedUrl: string;
let openUrl: string;

async function start(env: Record<string, string>): Promise<string> {
  const gateway = await buildGateway(
    loadGatewayConfig({
      INTERNAL_TOKEN: 'gateway-internal-token-0001',
      CONTROL_PLANE_URL: `http://127.0.0.1:${await freePort()}`,
      OPS_TOKEN,
      LOG_REQUESTS: 'false',
      ...env,
    }),
    false,
  );
  gateways.push(gateway);
  return gateway.listen({ host: '127.0.0.1', port: 0 });
}

beforeAll(async () => {
  guardedUrl = await start({ METRICS_TOKEN });
  openUrl = await start({});
});
afterAll(async () => {
  for (const gateway of gateways) await gateway.close();
});

describe('METRICS_TOKEN', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a wrong token', 'Bearer gateway-metrics-token-0002'],
    ['the token with another scheme', `Basic ${METRICS_TOKEN}`],
    ['the ops token', `Bearer ${OPS_TOKEN}`],
  ])('answers 401 for %s', async (_what, authorization) => {
    const res = await fetch(`${guardedUrl}/metrics`, {
      headers: authorization === undefined ? {} : { authorization },
    });
    expect(res.status).toBe(401);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.error.code).toBe('UNAUTHORIZED');
    expect(body.error.message).toContain('METRICS_TOKEN');
    expect(typeof body.error.request_id).toBe('string');
    expect(text).not.toContain('gateway_');
    expect(text).not.toContain(METRICS_TOKEN.slice(0, 12));
  });

  it('answers 200 with the metrics for the token', async () => {
    const res = await fetch(`${guardedUrl}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('gateway_requests_total');
  });

  it('leaves /metrics open when no token is set', async () => {
    const res = await fetch(`${openUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('gateway_process_cpu_user_seconds_total');
  });

  it('refuses a METRICS_TOKEN shorter than 16 characters at start', () => {
    expect(() => loadGatewayConfig({ INTERNAL_TOKEN: 'x'.repeat(16), METRICS_TOKEN: 'short' })).toThrow(
      /METRICS_TOKEN must be at least 16/,
    );
  });
});
