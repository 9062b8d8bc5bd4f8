/**
 * Where `query` runs. A query first runs in-process under a short slice of its budget (nearly all
 * finish well inside it); one that outgrows the slice runs again, from the start, in a worker
 * thread with the rest of the time budget and a capped heap. So no query holds the event loop for
 * longer than the slice, and none can exhaust the control plane's memory: a worker past its heap cap
 * dies alone and is replaced.
 *
 * The threads and the fair queue in front of them are worker-pool.ts's: one tenant (the user
 * owning the exposure) has at most a few queries in the pool at once, and a freed thread goes to
 * the waiting tenant with the fewest running, so one tenant's flood cannot starve the others.
 *
 * A query that outgrew its slice is remembered (by context place and expression) for a while: the
 * same query again skips the slice and goes straight to a worker, so a repeated hostile query does
 * not cost the event loop its slice each time.
 */
import {
  DEFAULT_QUERY_BUDGET,
  OpError,
  executeRead,
  queryLimitExceeded,
  type JsonValue,
  type Limits,
  type QueryBudget,
  type QueryLimit,
} from '@bindery/context-ops';
import { LRUCache } from 'lru-cache';
import type { QueryPoolMeter, QueryRejection } from '../../metrics.ts';
import { FairWorkerPool } from '../../workers/worker-pool.ts';
import { workerFile } from '../../workers/worker-file.ts';
import type { QueryOutcome, QueryTask } from './query-worker.ts';

export interface QueryPoolOptions {
  /** Wall time of one query, slice and worker together (QUERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** The in-process slice, in milliseconds (QUERY_INLINE_MS); 0 sends every query to a worker. */
  inlineMs: number;
  /** Worker threads (QUERY_WORKERS), all started by `warm()` and kept running. */
  threads: number;
  /** Queries waiting for a thread at most (QUERY_QUEUE); more answer RATE_LIMITED. */
  queue: number;
  /** How long a query may wait for a thread (QUERY_MAX_WAIT_MS); absent or 0: twice `timeoutMs`. */
  maxWaitMs?: number;
  /** Queries of one tenant in the pool at once, running or waiting (QUERY_TENANT_ESCALATIONS). */
  perTenant: number;
  /** Heap cap of each worker, in MiB (QUERY_WORKER_MEMORY_MB). */
  workerMemoryMb: number;
  log?: { warn(details: object, message: string): void };
  /** Where the pool reports its load, escalations and refusals (the /metrics series). */
  meter?: QueryPoolMeter;
}

/** A context node with its JSON text, and a key naming exactly that text (table, pointer, version). */
export interface QueryContext {
  node: JsonValue;
  /** The node's JSON text, made only when a worker thread needs it (serialising a large node costs). */
  text(): string;
  key: string;
  /** Where the context lives (table and pointer), whatever its version. */
  place: string;
}

const MIB = 1024 * 1024;
// The interpreter does roughly this many steps a millisecond on the machines measured, so the slice
// ends at about the same point by steps (deterministic) or by time (under load).
const SLICE_STEPS_PER_MS = 100_000;
// What a slice may build on the event loop's heap before it moves to a worker's capped one.
const SLICE_MAX_BYTES = 16 * MIB;
// A worker checks its own deadline every 1,024 steps and answers; terminating it this long after its
// deadline is the backstop for a single operation that runs on (one bounded by the memory budget
// takes well under that).
const TERMINATE_AFTER_MS = 500;
// A worker keeps parsed contexts up to this share of its heap cap, counted in characters of their
// JSON text (a parsed node takes several times its text).
const WORKER_CACHE_SHARE = 1 / 16;
/**
 * Heap a parsed context may take per character of its JSON text, at most (objects of short strings
 * and numbers measured at 3 to 4 on Node 20; the rest is room for the query itself). A context
 * whose text times this exceeds a worker's heap cap is refused before it reaches a worker.
 */
const PARSED_BYTES_PER_CHAR = 6;
// The budget of intermediate values is this share of a worker's heap cap: the context and the
// estimate's slack need the rest.
const BUDGET_MEMORY_SHARE = 1 / 4;
// Queries that outgrew their slice, remembered this long: enough to catch a client repeating one,
// short enough that a context that has since shrunk gets its fast path back.
const KNOWN_SLOW = { max: 1_000, ttl: 10 * 60_000 } as const;

export class QueryPool {
  /** The budget of one query (its `timeMs` is QUERY_TIMEOUT_MS). */
  readonly budget: QueryBudget;
  readonly #slice: QueryBudget | undefined;
  readonly #options: QueryPoolOptions;
  readonly #workers: FairWorkerPool<QueryTask, QueryOutcome>;
  readonly #knownSlow = new LRUCache<string, true>(KNOWN_SLOW);

  constructor(options: QueryPoolOptions) {
    this.#options = options;
    this.budget = {
      ...DEFAULT_QUERY_BUDGET,
      timeMs: options.timeoutMs,
      maxBytes: Math.floor(options.workerMemoryMb * MIB * BUDGET_MEMORY_SHARE),
    };
    this.#slice =
      options.inlineMs > 0
        ? {
            timeMs: Math.min(options.inlineMs, options.timeoutMs),
            maxSteps: Math.min(this.budget.maxSteps, options.inlineMs * SLICE_STEPS_PER_MS),
            maxBytes: Math.min(this.budget.maxBytes, SLICE_MAX_BYTES),
            maxStringLength: this.budget.maxStringLength,
          }
        : undefined;
    this.#workers = new FairWorkerPool({
      name: 'query worker',
      // Every thread up from the start: one started on demand at nice +10 on a saturated host took
      // tens of seconds to come up.
      warmThreads: options.threads,
      module: workerFile('query-worker', import.meta.url),
      threads: options.threads,
      queue: options.queue,
      perTenant: options.perTenant,
      resourceLimits: { maxOldGenerationSizeMb: options.workerMemoryMb },
      // Waiting longer than two whole queries may run means the workers are saturated: say so.
      maxWaitMs:
        options.maxWaitMs !== undefined && options.maxWaitMs > 0 ? options.maxWaitMs : 2 * options.timeoutMs,
      terminateAfterMs: TERMINATE_AFTER_MS,
      refusal: (reason) => this.#refuse(reason),
      report: (running, queued) => {
        options.meter?.running.set(running);
        options.meter?.queued.set(queued);
      },
      ...(options.log && { log: options.log }),
    });
  }

  /**
   * Starts the worker threads' pool (every thread loads its module: CPU a first query should not
   * wait for) now rather than at the first long query; a server calls it at start, an app
   * in a test never needs to.
   */
  warm(): void {
    this.#workers.warm();
  }

  /**
   * The result of `query` (args already validated) on `context` for `tenant` (the user owning the
   * exposure), within the budget; throws OpError: the engine's errors, LIMIT_EXCEEDED past the
   * budget (or a worker's heap), RATE_LIMITED when the tenant already has its share of the pool or
   * the workers and their queue are full.
   */
  async run(
    context: QueryContext,
    args: Record<string, unknown>,
    config: Record<string, unknown>,
    limits: Limits,
    tenant: string,
  ): Promise<JsonValue> {
    const started = performance.now();
    const fingerprint = `${context.place}\u0000${String(args.query)}`;
    if (this.#slice !== undefined) {
      if (this.#knownSlow.has(fingerprint)) {
        this.#options.meter?.sliceSkipped.inc();
      } else {
        try {
          return executeRead('query', context.node, args, config, { ...limits, query: this.#slice }).result;
        } catch (error) {
          if (!this.#outgrewSlice(error)) throw error;
          this.#knownSlow.set(fingerprint, true);
        }
      }
    }
    const timeMs = Math.max(1, this.budget.timeMs - (performance.now() - started));
    return this.#inWorker(context, args, config, { ...limits, query: { ...this.budget, timeMs } }, tenant);
  }

  /** Queries running in a worker and waiting for one, now (also on /metrics). */
  get load(): { running: number; queued: number } {
    return this.#workers.load;
  }

  /** Stops every worker; queued queries are refused. */
  async close(): Promise<void> {
    await this.#workers.close();
  }

  // Only the limits the slice has less of than the whole budget are worth a second run.
  #outgrewSlice(error: unknown): boolean {
    if (!(error instanceof OpError) || error.code !== 'LIMIT_EXCEEDED' || this.#slice === undefined)
      return false;
    switch (error.details?.limit as QueryLimit) {
      case 'time':
        return this.#slice.timeMs < this.budget.timeMs;
      case 'steps':
        return this.#slice.maxSteps < this.budget.maxSteps;
      case 'memory':
        return this.#slice.maxBytes < this.budget.maxBytes;
      default:
        return false;
    }
  }

  async #inWorker(
    context: QueryContext,
    args: Record<string, unknown>,
    config: Record<string, unknown>,
    limits: Limits,
    tenant: string,
  ): Promise<JsonValue> {
    // A context whose parse alone would fill most of a worker's heap is refused before any worker
    // parses it: a worker out of heap is usually just replaced, but V8 can instead abort the whole
    // process when the limit is met inside some allocations (seen once, under load, in the test of
    // exactly this), and nothing an agent sends may take the control plane down.
    const text = context.text();
    if (text.length * PARSED_BYTES_PER_CHAR > this.#options.workerMemoryMb * MIB) {
      this.#options.log?.warn(
        { context_chars: text.length, heap_mb: this.#options.workerMemoryMb },
        'query refused: its context is too large to parse in a query worker',
      );
      throw queryLimitExceeded('memory', this.budget);
    }
    const run = await this.#workers.run(
      tenant,
      limits.query.timeMs,
      (clock) => ({
        contextKey: context.key,
        contextText: text,
        args,
        config,
        limits,
        cacheChars: Math.floor(this.#options.workerMemoryMb * MIB * WORKER_CACHE_SHARE),
        startedAfter: clock.startedAfter,
        dispatchedAt: clock.dispatchedAt,
      }),
      { admitted: () => this.#options.meter?.escalated.inc() },
    );
    switch (run.status) {
      case 'done': {
        if (run.outcome.ok) return run.outcome.result;
        const { code, message, details } = run.outcome.error;
        // Reported against the whole budget, not the part left for the worker.
        if (code === 'LIMIT_EXCEEDED') throw queryLimitExceeded(details?.limit as QueryLimit, this.budget);
        throw new OpError(code, message, details);
      }
      case 'deadline':
        this.#options.log?.warn(
          { time_ms: limits.query.timeMs },
          'query worker terminated past its deadline',
        );
        throw queryLimitExceeded('time', this.budget);
      case 'out_of_memory':
        this.#options.log?.warn(
          { heap_mb: this.#options.workerMemoryMb },
          'query worker ran out of memory; it is replaced',
        );
        throw queryLimitExceeded('memory', this.budget);
      case 'failed': {
        this.#options.log?.warn({ err: run.error }, 'query worker failed');
        const failed = new OpError('INTERNAL', 'The query could not be evaluated; try again.');
        failed.cause = run.error;
        throw failed;
      }
    }
  }

  // `retry_after_seconds`, as every RATE_LIMITED answer (docs/reference/admin-api.md): one query's time, rounded up;
  // `reason` says which limit was met.
  #refuse(reason: QueryRejection): OpError {
    this.#options.meter?.rejected(reason).inc();
    const seconds = Math.max(1, Math.ceil(this.budget.timeMs / 1000));
    const why =
      reason === 'tenant_limit'
        ? `This account already has ${this.#options.perTenant} long-running queries in progress.`
        : reason === 'closing'
          ? 'The server is shutting down.'
          : 'Too many long-running queries right now.';
    return new OpError(
      'RATE_LIMITED',
      `${why} Retry in about ${seconds} s, ` +
        'or narrow the query so it finishes quickly (filter first, select only the fields you need).',
      { retry_after_seconds: seconds, reason },
    );
  }
}
