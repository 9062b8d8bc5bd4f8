/**
 * What the executor and the tool kinds it runs are given once at start: limits, the context
 * cache, metrics, the audit writer, the query pool, the custom tool sandbox and the idempotency
 * window. A kind that needs more (a sandbox, an HTTP dispatcher) adds its own field here.
 */
import type { Limits } from '@bindery/context-ops';
import type { Dispatcher } from 'undici';
import type { QueryPool } from '../execution/query-pool.ts';
import type { CustomToolSandbox } from '../execution/sandbox/index.ts';
import type { ControlPlaneMetrics } from '../metrics.ts';
import type { BindingCache } from './binding-cache.ts';
import type { AuditWriter } from './audit-writer.ts';
import type { ContextStore } from './context-store.ts';
import type { UpstreamRegistry } from '../upstream/registry.ts';

export interface ExecutorOptions {
  limits: Limits;
  /** Bindings kept in memory, dropped when their exposure changes. */
  bindings: BindingCache;
  /** Reads and writes contexts (the context cache, the patch log, table versions). */
  contexts: ContextStore;
  metrics: Pick<ControlPlaneMetrics, 'execution' | 'writes' | 'executionsInFlight'>;
  /** Writes each call's audit row, batched with other calls' (group commit); settles once committed. */
  audit: AuditWriter;
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
  /** The pools of upstream MCP servers (upstream/); absent where no app runs them. */
  upstreams?: UpstreamRegistry | undefined;
  /** Where a kind writes what is worth a log line (a custom tool's console, at debug). */
  log?: { debug(details: object, message: string): void } | undefined;
}
