// Pins that /readyz follows the control plane while the gateway is quiet: with no traffic at all,
// the gateway checks the control plane's health once per CONTROL_PLANE_IDLE_PROBE_MS (no more), so
// a control plane that dies turns /readyz `degraded` within that interval plus a few breaker
// cool-downs, without a single client request; once it is back, /readyz is `ready` again by itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './support/stack.ts';

const IDLE_PROBE_MS = 1_000;
const COOLDOWN_MS = 200;
const THRESHOLD = 3;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: {
      CONTROL_PLANE_IDLE_PROBE_MS: String(IDLE_PROBE_MS),
      BREAKER_COOLDOWN_MS: String(COOLDOWN_MS),
      BREAKER_FAILURE_THRESHOLD: String(THRESHOLD),
    },
  });
});
afterAll(() => stack?.close());

const healthChecks = async () =>
  (await stack.gateway.gateway.metrics.upstreamLatency.get()).values.find(
    (v) => v.metricName === 'gateway_upstream_latency_seconds_count' && v.labels.kind === 'health',
  )?.value ?? 0;
const configFetches = async () =>
  (await stack.gateway.gateway.metrics.configFetches.get()).values.reduce((sum, v) => sum + v.value, 0);
const readiness = async () => {
  const res = await fetch(`${stack.gatewayUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string } };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a quiet gateway', () => {
  it('checks the control plane once per idle interval, no more', async () => {
    const before = await healthChecks();
    await sleep(3.5 * IDLE_PROBE_MS);
    const checks = (await healthChecks()) - before;
    expect(checks).toBeGreaterThanOrEqual(2);
    expect(checks).toBeLessThanOrEqual(4);
    expect(await readiness()).toEqual({ status: 200, body: expect.objectContaining({ status: 'ready' }) });
  });

  it('turns degraded without any request when the control plane dies, and ready when it is back', async () => {
    const fetches = await configFetches();
    await stack.stopControlPlane();
    const stopped = performance.now();
    // The next idle check fails (connection refused), and the failures in a row that open the
    // breaker follow one cool-down apart.
    const bound = IDLE_PROBE_MS + THRESHOLD * COOLDOWN_MS;
    let state = (await readiness()).body.status;
    while (state === 'ready' && performance.now() - stopped < bound + 5_000) {
      await sleep(50);
      state = (await readiness()).body.status;
    }
    const took = performance.now() - stopped;
    expect(state).toBe('degraded');
    // Room for a busy machine, well below what the next interval of a slower loop would take.
    expect(took).toBeLessThan(bound + 1_500);
    expect(await readiness()).toMatchObject({ status: 200, body: { status: 'degraded' } });
    const gauge = (await stack.gateway.gateway.metrics.breakerState.get()).values.find((v) => v.value === 1);
    expect(gauge?.labels.state).not.toBe('closed');
    // Only health checks were sent: no client asked anything.
    expect(await configFetches()).toBe(fetches);

    await stack.startControlPlane(); // waits for `ready`
    expect(await readiness()).toMatchObject({ status: 200, body: { status: 'ready' } });
  });
});
