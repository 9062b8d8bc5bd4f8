/**
 * The worker side of a long query: runs in a thread of the query pool (query-pool.ts). It parses
 * the context's JSON text, keeping parsed contexts per worker by table, pointer and version (so a
 * context is parsed once per version and worker), evaluates the query within its time budget
 * (counted from the task's start, parsing included), and answers the result or the error as plain
 * data: an error's class does not survive the trip between threads.
 */
import { executeRead, OpError, type JsonValue, type Limits } from '@bindery/context-ops';
import type { ErrorCode } from '@bindery/contracts';
import { LRUCache } from 'lru-cache';
import { startTask } from '../../workers/task-clock.ts';

export interface QueryTask {
  /** Table, pointer and version of the context: the same key always names the same text. */
  contextKey: string;
  contextText: string;
  args: Record<string, unknown>;
  config: Record<string, unknown>;
  /** The engine's limits; `query.timeMs` is what is left of the query's time, from the task's start. */
  limits: Limits;
  /** Budget of this worker's parsed contexts, in characters of their JSON text. */
  cacheChars: number;
  /**
   * A cell shared with the pool: the worker writes when it started the task, in milliseconds after
   * `dispatchedAt` (at least 1), so the pool's deadline counts from there.
   */
  startedAfter: Int32Array;
  /** When the pool handed the task over, as `performance.timeOrigin + performance.now()`. */
  dispatchedAt: number;
}

export type QueryOutcome =
  | { ok: true; result: JsonValue }
  | { ok: false; error: { code: ErrorCode; message: string; details?: Record<string, unknown> } };

let contexts: LRUCache<string, { node: JsonValue }> | undefined;

function contextOf(task: QueryTask): JsonValue {
  contexts ??= new LRUCache({ maxSize: Math.max(1, task.cacheChars) });
  const cached = contexts.get(task.contextKey);
  if (cached) return cached.node;
  const node = JSON.parse(task.contextText) as JsonValue;
  if (task.contextText.length <= task.cacheChars) {
    contexts.set(task.contextKey, { node }, { size: Math.max(1, task.contextText.length) });
  }
  return node;
}

/** Runs one query task (piscina calls it); never throws for a failed query, only for a bug. */
export default function runQuery(task: QueryTask): QueryOutcome {
  const started = startTask(task);
  const node = contextOf(task);
  const timeMs = Math.max(0, task.limits.query.timeMs - (performance.now() - started));
  const limits: Limits = { ...task.limits, query: { ...task.limits.query, timeMs } };
  try {
    return { ok: true, result: executeRead('query', node, task.args, task.config, limits).result };
  } catch (error) {
    if (!(error instanceof OpError)) throw error;
    return {
      ok: false,
      error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) },
    };
  }
}

// The first query compiles the engine's argument schemas (tens of milliseconds): done while the
// worker starts, not while a caller waits.
executeRead('query', null, { query: '@' }, {});
