/**
 * What the executor and the tool kinds it runs are given once at start: limits, the context
 * cache, metrics, the query pool, the custom tool sandbox and the idempotency window. A kind that needs more (a sandbox, an
 * HTTP dispatcher) adds its own field here.
 */
import type { Limits } from '@bindery/context-ops';
import type { Dispatcher } from 'undici';
import type { QueryPool } from '../execution/query-pool.ts';
import type { CustomToolSandbox } from '../execution/sandbox/index.ts';
import type { ControlPlaneMetrics } from '../metrics.ts';
import type { ContextCache } from './context-cache.ts';

export interface ExecutorOptions {
  limits: Limits;
  contexts: ContextCache;
  metrics: Pick<ControlPlaneMetrics, 'execution' | 'audit' | 'writes'>;
  /** Runs `query`: in-process for a short slice, then in a worker thread (query-pool.ts). */
  queries: QueryPool;
  /** How long a write's idempotency key is remembered. */
  idempotencyTtlMs: number;
  /**
   * Every request a tool sends out (HTTP tools, a custom tool's fetch) goes through this: the SSRF
   * guard (execution/ssrf-guard.ts) checks each connection, literal IPs, DNS answers and redirect
   * hops alike, against HTTP_TOOLS_ALLOWED_NETWORKS.
   */
  outbound: Dispatcher;
  /** Runs custom tools: QuickJS in worker threads (execution/sandbox). */
  sandbox: CustomToolSandbox;
  /** Where a kind writes what is worth a log line (a custom tool's console, at debug). */
  log?: { debug(details: object, message: string): void } | undefined;
}
