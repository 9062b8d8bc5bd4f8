/**
 * A config cache of its own, outside any gateway, on a stack's real control plane (over HTTP), for
 * tests that drive `ExposureCache` directly: its client, its metrics and a reader of their totals.
 */
import Fastify from 'fastify';
import { ControlPlaneClient } from '../../src/control-plane/client.ts';
import { ExposureCache } from '../../src/control-plane/exposure-cache.ts';
import { createMetrics } from '../../src/metrics.ts';
import { INTERNAL_TOKEN, type Stack } from './stack.ts';

export function standaloneCache(
  stack: Stack,
  options: { maxBytes?: number; ttlMs?: number; now?: () => number } = {},
) {
  const metrics = createMetrics();
  const log = Fastify({ logger: false }).log;
  const client = new ControlPlaneClient({
    url: stack.controlPlaneUrl,
    internalToken: INTERNAL_TOKEN,
    configTimeoutMs: 5_000,
    toolCallTimeoutMs: 5_000,
    idleProbeMs: 10_000,
    breaker: { failureThreshold: 3, cooldownMs: 500, maxCooldownMs: 5_000 },
    metrics,
    log,
  });
  const cache = new ExposureCache(
    client,
    {
      maxEntries: 100,
      maxBytes: options.maxBytes ?? 64 * 1024 * 1024,
      ttlMs: options.ttlMs ?? 60_000,
      negativeTtlMs: 5_000,
      unknownKeyLookupsPerSecond: 0,
      unknownKeyLookupsPerAddressPerSecond: 0,
    },
    metrics,
    log,
    options.now,
  );
  /** The total of one of the cache's metrics, over its labels. */
  const total = async (name: 'cacheBytes' | 'cacheEntries' | 'configFetches') =>
    (await metrics[name].get()).values.reduce((sum, v) => sum + v.value, 0);
  return { cache, client, total };
}
