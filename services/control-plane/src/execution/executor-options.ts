/**
 * What the executor is given once at start: the services its tool kinds get (KindServices, the
 * kind interface's own), and what only the executor uses around them: the binding cache, the
 * audit writer, the idempotency window and its metrics.
 */
import type { ControlPlaneMetrics } from '../metrics.ts';
import type { AuditWriter } from './audit-writer.ts';
import type { BindingCache } from './binding-cache.ts';
import type { KindServices } from '../kinds/kind.ts';

export interface ExecutorOptions extends KindServices {
  /** Bindings kept in memory, dropped when their exposure changes. */
  bindings: BindingCache;
  metrics: Pick<ControlPlaneMetrics, 'execution' | 'writes' | 'executionsInFlight'>;
  /** Writes each call's audit row, batched with other calls' (group commit); settles once committed. */
  audit: AuditWriter;
  /** How long a write's idempotency key is remembered. */
  idempotencyTtlMs: number;
}
