/**
 * Prometheus metrics of one gateway (its own registry, so several gateways can share a process in
 * tests): requests, tool calls by status, config cache outcomes and size, control-plane latency and
 * circuit breaker, sessions and what bounds them, and whether rate limits are shared through Redis.
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
      help: 'tools/call by outcome: ok, error (tool isError), upstream_failed, unknown_tool, header_mismatch',
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
    cacheEntries: new Gauge({
      name: 'gateway_config_cache_entries',
      help: 'api_keys whose config is cached (known keys; unknown ones are counted apart)',
      registers: [registry],
    }),
    cacheBytes: new Gauge({
      name: 'gateway_config_cache_bytes',
      help: 'estimated heap bytes of the cached configs (bounded by CONFIG_CACHE_MAX_BYTES)',
      registers: [registry],
    }),
    lookupsLimited: new Counter({
      name: 'gateway_unknown_key_lookups_limited_total',
      help: 'lookups of keys the cache does not know refused without asking the control plane, by the cap that refused them: address (UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND), gateway (UNKNOWN_KEY_LOOKUPS_PER_SECOND)',
      labelNames: ['scope'] as const,
      registers: [registry],
    }),
    malformedKeys: new Counter({
      name: 'gateway_malformed_keys_total',
      help: 'requests refused as unknown because the api_key is not in the shape the control plane issues (never looked up)',
      registers: [registry],
    }),
    rateLimitShared: new Gauge({
      name: 'gateway_rate_limit_shared',
      help: '1 while the rate limits of api keys and personal keys are one budget across the gateways (Redis answers), 0 while this gateway applies its own (no REDIS_URL, or Redis unreachable)',
      registers: [registry],
    }),
    rateLimitFallbacks: new Counter({
      name: 'gateway_rate_limit_fallbacks_total',
      help: 'times this gateway went from the shared rate limits to its own because Redis failed or was slower than RATE_LIMIT_REDIS_TIMEOUT_MS',
      registers: [registry],
    }),
    breakerState: new Gauge({
      name: 'gateway_control_plane_breaker',
      help: 'circuit breaker in front of the control plane: 1 for the current state (closed, open, half_open)',
      labelNames: ['state'] as const,
      registers: [registry],
    }),
    breakerRejections: new Counter({
      name: 'gateway_control_plane_rejected_total',
      help: 'control-plane requests not sent because the circuit breaker was open',
      registers: [registry],
    }),
    executeBatches: new Histogram({
      name: 'gateway_execute_batch_calls',
      help: 'tool calls sent to the control plane together in one exchange (POST /internal/execute-batch), per exchange',
      buckets: [2, 4, 8, 16, 32, 64],
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
    sessionsClosed: new Counter({
      name: 'gateway_sessions_closed_total',
      help: 'sessions the gateway closed: idle (GATEWAY_SESSION_IDLE_MS), evicted_key / evicted_global (least recently used idle session, to make room under GATEWAY_MAX_SESSIONS_PER_KEY / GATEWAY_MAX_SESSIONS)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    sessionsRefused: new Counter({
      name: 'gateway_sessions_refused_total',
      help: 'initialize requests refused because a session cap was reached and every session under it was busy',
      labelNames: ['cap'] as const,
      registers: [registry],
    }),
    invalidations: new Counter({
      name: 'gateway_invalidations_total',
      help: 'cache invalidations received, by source',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    tableChanges: new Counter({
      name: 'gateway_table_changes_total',
      help: 'table changes the control plane signalled (the data of a table changed), by source',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    resourceUpdates: new Counter({
      name: 'gateway_resource_updates_total',
      help: 'notifications/resources/updated sent to subscribed sessions',
      registers: [registry],
    }),
  };
}

export type GatewayMetrics = ReturnType<typeof createMetrics>;
