// Pins METRICS_TOKEN on the control plane: with it set, GET /metrics answers 401 with the REST
// error body unless "Authorization: Bearer <METRICS_TOKEN>" is sent (no token, a wrong one, another
// credential of the service), and 200 with it; without it /metrics is open. Tokens are never echoed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, ROOT_TOKEN, startTestApp, type TestApp } from './support/app.ts';

const METRICS_TOKEN = 'metrics-token-for-tests-0001';
let guarded: TestApp;
let open: TestApp;

beforeAll(async () => {
  guarded = await startTestApp({ metricsToken: METRICS_TOKEN });
  open = await startTestApp();
});
afterAll(async () => {
  await guarded?.close();
  await open?.close();
});

describe('METRICS_TOKEN', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a wrong token', 'Bearer metrics-token-for-tests-0002'],
    ['the token with another scheme', `Basic ${METRICS_TOKEN}`],
    ['the root admin token', `Bearer ${ROOT_TOKEN}`],
    ['the internal token', `Bearer ${INTERNAL_TOKEN}`],
    ['a prefix of the token', `Bearer ${METRICS_TOKEN.slice(0, -1)}`],
  ])('answers 401 for %s', async (_what, authorization) => {
    const res = await fetch(`${guarded.baseUrl}/metrics`, {
      headers: authorization === undefined ? {} : { authorization },
    });
    expect(res.status).toBe(401);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.error.code).toBe('UNAUTHORIZED');
    expect(body.error.message).toContain('METRICS_TOKEN');
    expect(typeof body.error.request_id).toBe('string');
    expect(text).not.toContain('controlplane_');
    expect(text).not.toContain(METRICS_TOKEN.slice(0, 12));
  });

  it('answers 200 with the metrics for the token', async () => {
    const res = await fetch(`${guarded.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('controlplane_tool_execution_seconds');
  });

  it('leaves /metrics open when no token is set', async () => {
    const res = await fetch(`${open.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('controlplane_process_cpu_user_seconds_total');
  });

  it('does not open anything else: the internal API still wants INTERNAL_TOKEN', async () => {
    const res = await guarded.call('GET', '/internal/mcp-instance/bnd_key_x', { token: METRICS_TOKEN });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });
});
