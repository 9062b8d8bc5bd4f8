/**
 * What the executor is given once at start: the services its tool kinds get (every kind's
 * KindServices and each kind's own, gathered by the registry), and what only the executor uses
 * around them: the binding cache, the audit writer, the idempotency window and its metrics.
 */
import type { ControlPlaneMetrics } from '../metrics.ts';
import type { AuditWriter } from './audit-writer.ts';
import type { BindingCache } from './binding-cache.ts';
import type { RegisteredKindServices } from '../kinds/registry.ts';
import type { TaskHandles } from './task-handles.ts';
import type { RequestStates } from './request-state.ts';

export interface ExecutorOptions extends RegisteredKindServices {
  /** Bindings kept in memory, dropped when their exposure changes. */
  bindings: BindingCache;
  metrics: Pick<ControlPlaneMetrics, 'execution' | 'writes' | 'executionsInFlight'>;
  /** Writes each call's audit row, batched with other calls' (group commit); settles once committed. */
  audit: AuditWriter;
  /** How long a write's idempotency key is remembered. */
  idempotencyTtlMs: number;
  /** Signs and checks the requestState of calls that ask their client for input. */
  requestStates: RequestStates;
  /** Seals the handles of tasks upstream servers made (task-handles.ts). */
  taskHandles: TaskHandles;
}
