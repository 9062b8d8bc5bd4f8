/**
 * Prometheus metrics of one control plane (its own registry, so several apps can share a process
 * in tests): tool executions by kind, operation and outcome, audit writes, context writes and their
 * row lock, the context cache, the query worker pool, and the PostgreSQL connection pool. Named like the gateway's
 * (`gateway_` there, `controlplane_` here).
 *
 * The executor's hot path only calls `observe` on label children bound once per label set; nothing
 * is looked up by label values per call beyond two Map reads.
 */
import type { AuditStatus } from '@bindery/contracts';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Whatever a tool kind is called (`context`, `legacy`; later `custom`, `http`, `mcp`). */
export type ToolKind = string;
export type ExecutionOutcome = AuditStatus;

interface Observer {
  observe(value: number): void;
}

/** The latency series of one tool kind and operation, one per outcome. */
export type ExecutionMeter = Readonly<Record<ExecutionOutcome, Observer>>;

/** What the audit writer reports. */
export interface AuditMeter {
  /** Rows queued and not yet committed. */
  inFlight: { inc(): void; dec(): void };
  /** Seconds from a row queued to its commit (what the call's answer waits for). */
  seconds: Observer;
  /** Rows per INSERT statement. */
  batchRows: Observer;
  /** A row that found the queue full and waited for room. */
  queueFull: { inc(): void };
}

/** What a context write reports, phase by phase. */
export interface WriteMeter {
  waiting: { inc(): void; dec(): void };
  locked: { inc(): void; dec(): void };
  /** Seconds from the start of the write until the row lock was held. */
  waitSeconds: Observer;
  /** Seconds of the whole write transaction, by outcome. */
  committed: Observer;
  failed: Observer;
  skipped: Observer;
}

/** What the context cache reports. */
export interface ContextCacheMeter {
  hit: { inc(): void };
  /** Brought forward by the patches written since it was cached (no data read). */
  forward: { inc(): void };
  miss: { inc(): void };
  entries: { set(value: number): void };
  bytes: { set(value: number): void };
}

/** What the executor's binding cache reports (execution/binding-cache.ts). */
export interface BindingCacheMeter {
  hit: { inc(): void };
  miss: { inc(): void };
  /** Missed, and answered by another call's database read in flight. */
  shared: { inc(): void };
  entries: { set(value: number): void };
}

/** Why the query pool refused a query (RATE_LIMITED): its `details.reason`. */
export type QueryRejection = 'tenant_limit' | 'queue_full' | 'wait_timeout' | 'closing';

const QUERY_REJECTIONS: readonly QueryRejection[] = ['tenant_limit', 'queue_full', 'wait_timeout', 'closing'];

/** What the query worker pool reports. */
export interface QueryPoolMeter {
  running: { set(value: number): void };
  queued: { set(value: number): void };
  /** A query handed to the pool (it outgrew its slice, or is known to). */
  escalated: { inc(): void };
  /** A query sent to the pool without its in-process slice: it outgrew one before. */
  sliceSkipped: { inc(): void };
  rejected(reason: QueryRejection): { inc(): void };
}

/** What the custom tool sandbox's worker pool reports (its `report` and `refused` hooks). */
export interface CustomToolPoolMeter {
  running: { set(value: number): void };
  queued: { set(value: number): void };
  rejected(reason: QueryRejection): { inc(): void };
}

/** The connection counts of a `pg.Pool` (read at scrape time). */
export interface PoolCounts {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly options: { max?: number | undefined };
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface MetricsOptions {
  /** The PostgreSQL pool; absent on embedded PGlite (one in-process connection, nothing to pool). */
  pool?: PoolCounts | undefined;
}

export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry();
  // Sampled every 100 ms, as in the gateway: the 10 ms default wakes the process 100 times a second.
  collectDefaultMetrics({ register: registry, prefix: 'controlplane_', eventLoopMonitoringPrecision: 100 });

  const executions = new Histogram({
    name: 'controlplane_tool_execution_seconds',
    help:
      'time to run a tool call that reached its binding or legacy instance (the duration_ms of its audit row), ' +
      'by tool kind, operation and outcome (ok, error, refused, replayed, input_required)',
    labelNames: ['kind', 'operation', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const meters = new Map<ToolKind, Map<string, ExecutionMeter>>();

  const requestsInFlight = new Gauge({
    name: 'controlplane_http_requests_in_flight',
    help: 'HTTP requests received and not yet answered (what a shutdown waits for)',
    registers: [registry],
  });
  const executionsInFlight = new Gauge({
    name: 'controlplane_tool_executions_in_flight',
    help: 'calls of bound tools received (alone or in a gateway batch) and not yet answered',
    registers: [registry],
  });
  const auditInFlight = new Gauge({
    name: 'controlplane_audit_writes_in_flight',
    help: 'audit rows queued or being written, not yet committed (their calls wait)',
    registers: [registry],
  });
  const auditSeconds = new Histogram({
    name: 'controlplane_audit_write_seconds',
    help: 'time from an audit row queued to its commit (what its call waits for)',
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const auditBatchRows = new Histogram({
    name: 'controlplane_audit_batch_rows',
    help: 'audit rows per INSERT statement (rows of concurrent calls share one)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    registers: [registry],
  });
  const auditQueueFull = new Counter({
    name: 'controlplane_audit_queue_full_total',
    help: 'audit rows that found the queue full (AUDIT_QUEUE_MAX) and waited for room',
    registers: [registry],
  });

  const writesWaiting = new Gauge({
    name: 'controlplane_context_writes_waiting',
    help: 'context writes waiting for a connection or for the row lock of their table',
    registers: [registry],
  });
  const writesLocked = new Gauge({
    name: 'controlplane_context_writes_locked',
    help: 'context writes holding the row lock of their table',
    registers: [registry],
  });
  const writeWait = new Histogram({
    name: 'controlplane_context_write_wait_seconds',
    help: 'time a context write waited until it held the row lock of its table',
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const writeSeconds = new Histogram({
    name: 'controlplane_context_write_seconds',
    help: 'time of a whole context write transaction, by outcome (committed, failed, skipped: a retry answered from its first outcome)',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });

  const cacheLookups = new Counter({
    name: 'controlplane_context_cache_total',
    help:
      'context cache lookups: hit (parsed node of the current version reused), forward (an older ' +
      'node brought forward by the patches written since) or miss (read from the database)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const cacheEntries = new Gauge({
    name: 'controlplane_context_cache_entries',
    help: 'parsed contexts in the cache',
    registers: [registry],
  });
  const cacheBytes = new Gauge({
    name: 'controlplane_context_cache_bytes',
    help: 'JSON size of the parsed contexts in the cache (their budget is CONTEXT_CACHE_MB)',
    registers: [registry],
  });
  const tableVersionLookups = new Counter({
    name: 'controlplane_table_version_lookups_total',
    help:
      "where reads on PostgreSQL with REDIS_URL found tables' versions: memory (known under a running " +
      'lease, no round trip), redis (asked of Redis) or database (Redis unreachable)',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  const bindingLookups = new Counter({
    name: 'controlplane_binding_cache_total',
    help: 'binding lookups of tool calls: hit (served from memory), miss (read from the database) or shared (waited for a read in flight)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const bindingEntries = new Gauge({
    name: 'controlplane_binding_cache_entries',
    help: 'bindings in the executor cache (their cap is BINDING_CACHE_ENTRIES)',
    registers: [registry],
  });

  const queryRunning = new Gauge({
    name: 'controlplane_query_pool_running',
    help: 'queries running in a query worker thread',
    registers: [registry],
  });
  const queryQueued = new Gauge({
    name: 'controlplane_query_pool_queued',
    help: 'queries waiting for a query worker thread',
    registers: [registry],
  });
  const queryEscalations = new Counter({
    name: 'controlplane_query_escalations_total',
    help: 'queries handed to the worker pool: they outgrew the in-process slice, or did before',
    registers: [registry],
  });
  const querySliceSkips = new Counter({
    name: 'controlplane_query_slice_skips_total',
    help: 'queries sent to the worker pool without the in-process slice, because they outgrew it before',
    registers: [registry],
  });
  const queryRejections = new Counter({
    name: 'controlplane_query_rejections_total',
    help: 'queries the worker pool refused (RATE_LIMITED), by reason: tenant_limit, queue_full, wait_timeout, closing',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const rejections = new Map(QUERY_REJECTIONS.map((reason) => [reason, queryRejections.labels(reason)]));

  const customRunning = new Gauge({
    name: 'controlplane_custom_tool_pool_running',
    help: 'custom tool calls running in a sandbox worker thread',
    registers: [registry],
  });
  const customQueued = new Gauge({
    name: 'controlplane_custom_tool_pool_queued',
    help: 'custom tool calls (and source checks) waiting for a sandbox worker thread',
    registers: [registry],
  });
  const customRejections = new Counter({
    name: 'controlplane_custom_tool_rejections_total',
    help: 'custom tool calls the sandbox pool refused (RATE_LIMITED), by reason: tenant_limit, queue_full, wait_timeout, closing',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const customRejected = new Map(QUERY_REJECTIONS.map((reason) => [reason, customRejections.labels(reason)]));
  const upstreamInstances = new Gauge({
    name: 'controlplane_upstream_instances',
    help: 'running instances of upstream MCP server pools, by pool (first 12 hex of the spec fingerprint)',
    labelNames: ['pool'] as const,
    registers: [registry],
  });
  const upstreamCalls = new Counter({
    name: 'controlplane_upstream_calls_total',
    help: 'tool calls sent to upstream MCP server pools, by pool and outcome (ok, error, timeout, refused)',
    labelNames: ['pool', 'outcome'] as const,
    registers: [registry],
  });
  const upstreamFailures = new Counter({
    name: 'controlplane_upstream_failures_total',
    help: 'failures counted against upstream pools (start failed, exited, ping or call timed out), by pool',
    labelNames: ['pool'] as const,
    registers: [registry],
  });
  const upstreamRestarts = new Counter({
    name: 'controlplane_upstream_restarts_total',
    help: 'upstream instances that ended on their own and are restarted on demand, by pool',
    labelNames: ['pool'] as const,
    registers: [registry],
  });

  const pool = options.pool;
  if (pool) {
    // Read when scraped: nothing on the query path.
    const poolGauge = (name: string, help: string, read: (p: PoolCounts) => number | undefined) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(read(pool) ?? 0);
        },
      });
    poolGauge('controlplane_db_pool_connections', 'open PostgreSQL connections', (p) => p.totalCount);
    poolGauge('controlplane_db_pool_idle_connections', 'open connections not in use', (p) => p.idleCount);
    poolGauge(
      'controlplane_db_pool_waiting_requests',
      'queries and transactions waiting for a connection',
      (p) => p.waitingCount,
    );
    // pg's default pool size is 10 when none is configured.
    poolGauge('controlplane_db_pool_max_connections', 'the size of the pool', (p) => p.options.max ?? 10);
  }

  return {
    registry,
    /** The latency series of one tool kind and operation, bound on first use and reused after. */
    execution(kind: ToolKind, operation: string): ExecutionMeter {
      let byOperation = meters.get(kind);
      if (!byOperation) meters.set(kind, (byOperation = new Map()));
      let meter = byOperation.get(operation);
      if (!meter) {
        meter = {
          ok: executions.labels(kind, operation, 'ok'),
          error: executions.labels(kind, operation, 'error'),
          refused: executions.labels(kind, operation, 'refused'),
          replayed: executions.labels(kind, operation, 'replayed'),
          input_required: executions.labels(kind, operation, 'input_required'),
        };
        byOperation.set(operation, meter);
      }
      return meter;
    },
    audit: {
      inFlight: auditInFlight,
      seconds: auditSeconds,
      batchRows: auditBatchRows,
      queueFull: auditQueueFull,
    } satisfies AuditMeter,
    writes: {
      waiting: writesWaiting,
      locked: writesLocked,
      waitSeconds: writeWait,
      committed: writeSeconds.labels('committed'),
      failed: writeSeconds.labels('failed'),
      skipped: writeSeconds.labels('skipped'),
    } satisfies WriteMeter,
    contextCache: {
      hit: cacheLookups.labels('hit'),
      forward: cacheLookups.labels('forward'),
      miss: cacheLookups.labels('miss'),
      entries: cacheEntries,
      bytes: cacheBytes,
    } satisfies ContextCacheMeter,
    tableVersions: {
      memory: tableVersionLookups.labels('memory'),
      redis: tableVersionLookups.labels('redis'),
      database: tableVersionLookups.labels('database'),
    } satisfies TableVersionMeter,
    bindingCache: {
      hit: bindingLookups.labels('hit'),
      miss: bindingLookups.labels('miss'),
      shared: bindingLookups.labels('shared'),
      entries: bindingEntries,
    } satisfies BindingCacheMeter,
    requestsInFlight,
    executionsInFlight,
    queryPool: {
      running: queryRunning,
      queued: queryQueued,
      escalated: queryEscalations,
      sliceSkipped: querySliceSkips,
      rejected: (reason) => rejections.get(reason) ?? queryRejections.labels(reason),
    } satisfies QueryPoolMeter,
    upstreamPool: (fingerprint: string) => {
      const pool = fingerprint.slice(0, 12);
      return {
        call: (outcome: 'ok' | 'error' | 'timeout' | 'refused') => upstreamCalls.labels(pool, outcome).inc(),
        failure: () => upstreamFailures.labels(pool).inc(),
        restart: () => upstreamRestarts.labels(pool).inc(),
        instances: (count: number) => upstreamInstances.labels(pool).set(count),
      };
    },
    customToolPool: {
      running: customRunning,
      queued: customQueued,
      rejected: (reason) => customRejected.get(reason) ?? customRejections.labels(reason),
    } satisfies CustomToolPoolMeter,
  };
}

export type ControlPlaneMetrics = ReturnType<typeof createMetrics>;

/**
 * Follows one context write: waiting (for a connection and the row lock) until `locked()`, then
 * holding the lock until the transaction settles; `committed` and `failed` fit a promise's `then`.
 */
export function trackWrite(meter: WriteMeter) {
  const started = performance.now();
  let locked = false;
  meter.waiting.inc();
  const settle = () => {
    if (locked) meter.locked.dec();
    else meter.waiting.dec();
    return (performance.now() - started) / 1000;
  };
  return {
    locked(): void {
      if (locked) return;
      locked = true;
      meter.waiting.dec();
      meter.locked.inc();
      meter.waitSeconds.observe((performance.now() - started) / 1000);
    },
    committed<V>(value: V): V {
      meter.committed.observe(settle());
      return value;
    },
    failed(error: unknown): never {
      meter.failed.observe(settle());
      throw error;
    },
    skipped(error: unknown): never {
      meter.skipped.observe(settle());
      throw error;
    },
  };
}

/** Where a read learnt its table's version (context/table-versions.ts). */
export interface TableVersionMeter {
  /** Known in memory under a running lease: no round trip. */
  memory: { inc(): void };
  /** Asked of Redis. */
  redis: { inc(): void };
  /** Left to the database. */
  database: { inc(): void };
}
