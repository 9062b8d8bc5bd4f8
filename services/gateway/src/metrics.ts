/**
 * Prometheus metrics of one gateway (its own registry, so several gateways can share a process in
 * tests): requests, tool calls by status, config cache outcomes, control-plane latency.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  // Event-loop lag sampled every 100 ms instead of prom-client's 10 ms: the finer timer woke the
  // process 100 times a second, which cost a measurable share of CPU per tool call on small hosts.
  collectDefaultMetrics({ register: registry, prefix: 'gateway_', eventLoopMonitoringPrecision: 100 });
  return {
    registry,
    requests: new Counter({
      name: 'gateway_requests_total',
      help: 'HTTP requests by route, status and lane (fast: served before the framework, see fast-lane.ts)',
      labelNames: ['route', 'status', 'lane'] as const,
      registers: [registry],
    }),
    toolCalls: new Counter({
      name: 'gateway_tool_calls_total',
      help: 'tools/call by outcome: ok, error (tool isError), upstream_failed, unknown_tool',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    cache: new Counter({
      name: 'gateway_config_cache_total',
      help: 'config lookups: hit, miss, revalidated (304), stale (served while the control plane failed), negative',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    configFetches: new Counter({
      name: 'gateway_config_fetches_total',
      help: 'config requests sent to the control plane',
      registers: [registry],
    }),
    upstreamLatency: new Histogram({
      name: 'gateway_upstream_latency_seconds',
      help: 'latency of control-plane calls by kind',
      labelNames: ['kind'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    sessions: new Gauge({ name: 'gateway_sessions', help: 'open MCP sessions', registers: [registry] }),
    invalidations: new Counter({
      name: 'gateway_invalidations_total',
      help: 'cache invalidations received, by source',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
  };
}

export type GatewayMetrics = ReturnType<typeof createMetrics>;
