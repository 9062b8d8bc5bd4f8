// Pins the gateway skeleton's contract with operators: it starts on its own and answers /healthz.
import { describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';

describe('gateway skeleton', () => {
  it('answers /healthz over real HTTP', async () => {
    const app = await buildGateway(loadGatewayConfig({ GATEWAY_PORT: '0' }), false);
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const response = await fetch(`${address}/healthz`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'ok', service: 'gateway' });
    } finally {
      await app.close();
    }
  });

  it('refuses a port that is not a port', () => {
    expect(() => loadGatewayConfig({ GATEWAY_PORT: 'http' })).toThrow(/GATEWAY_PORT/);
  });
});
