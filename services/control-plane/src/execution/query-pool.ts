/**
 * Where `query` runs. A query first runs in-process under a short slice of its budget (nearly all
 * finish well inside it); one that outgrows the slice runs again, from the start, in a worker
 * thread with the rest of the time budget and a capped heap. So no query holds the event loop for
 * longer than the slice, and none can exhaust the control plane's memory: a worker past its heap cap
 * dies alone and is replaced.
 *
 * The threads come from piscina. The queue in front of them is kept here rather than in piscina:
 * piscina does not count tasks that carry an abort signal against `maxQueue` (every task here
 * carries one, to terminate a worker that overruns), and a task must know when it reaches a thread
 * for its time budget to start then. Keeping it here also makes it fair: one tenant (the user
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
import { Piscina } from 'piscina';
import type { QueryPoolMeter, QueryRejection } from '../metrics.ts';
import type { QueryOutcome, QueryTask } from './query-worker.ts';

export interface QueryPoolOptions {
  /** Wall time of one query, slice and worker together (QUERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** The in-process slice, in milliseconds (QUERY_INLINE_MS); 0 sends every query to a worker. */
  inlineMs: number;
  /** Worker threads at most (QUERY_WORKERS); one is kept warm. */
  threads: number;
  /** Queries waiting for a thread at most (QUERY_QUEUE); more answer RATE_LIMITED. */
  queue: number;
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
  text: string;
  key: string;
  /** Where the context lives (table and pointer), whatever its version. */
  place: string;
}

const WORKER = new URL('./query-worker.mjs', import.meta.url).href;
const MIB = 1024 * 1024;
// The interpreter does roughly this many steps a millisecond on the machines measured, so the slice
// ends at about the same point by steps (deterministic) or by time (under load).
const SLICE_STEPS_PER_MS = 100_000;
// Worker threads run at a lower CPU priority (nice +10; Linux and macOS, through piscina's optional
// @napi-rs/nice): with every core busy with long queries, the event loop (and the database) still
// gets the CPU first, so cheap calls keep answering at once.
const WORKER_NICE = 10;
// What a slice may build on the event loop's heap before it moves to a worker's capped one.
const SLICE_MAX_BYTES = 16 * MIB;
// A worker checks its own deadline every 1,024 steps and answers; terminating it this long after its
// deadline is the backstop for a single operation that runs on (one bounded by the memory budget
// takes well under that).
const TERMINATE_AFTER_MS = 500;
// How long a task may wait for a worker thread to start (a replacement takes about 0.5 s; more under
// load) before the pool is reported unavailable.
const MAX_START_WAIT_MS = 30_000;
// A worker keeps parsed contexts up to this share of its heap cap, counted in characters of their
// JSON text (a parsed node takes several times its text).
const WORKER_CACHE_SHARE = 1 / 16;
// The budget of intermediate values is this share of a worker's heap cap: the context and the
// estimate's slack need the rest.
const BUDGET_MEMORY_SHARE = 1 / 4;
// Queries that outgrew their slice, remembered this long: enough to catch a client repeating one,
// short enough that a context that has since shrunk gets its fast path back.
const KNOWN_SLOW = { max: 1_000, ttl: 10 * 60_000 } as const;

interface Waiter {
  tenant: string;
  resolve(): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/** One tenant's queries in the pool. */
interface TenantLoad {
  running: number;
  waiting: number;
  /** When a query of this tenant last got a thread (the pool's count of starts), 0 for never. */
  lastStart: number;
}

export class QueryPool {
  /** The budget of one query (its `timeMs` is QUERY_TIMEOUT_MS). */
  readonly budget: QueryBudget;
  readonly #slice: QueryBudget | undefined;
  readonly #options: QueryPoolOptions;
  #pool: Piscina<QueryTask, QueryOutcome> | undefined;
  readonly #waiting: Waiter[] = [];
  readonly #tenants = new Map<string, TenantLoad>();
  readonly #knownSlow = new LRUCache<string, true>(KNOWN_SLOW);
  #running = 0;
  #starts = 0;
  #closed = false;

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
  }

  /**
   * Starts the worker threads' pool (and its one warm worker, about 0.5 s of CPU) now rather than at
   * the first long query; a server calls it at start, an app in a test never needs to.
   */
  warm(): void {
    this.#workers();
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
    return { running: this.#running, queued: this.#waiting.length };
  }

  /** Stops every worker; queued queries are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(this.#refuse('closing'));
    }
    this.#tenants.clear();
    this.#report();
    await this.#pool?.destroy();
  }

  // The pool, made on first use: one worker is kept from then on (piscina's minThreads).
  #workers(): Piscina<QueryTask, QueryOutcome> {
    if (this.#pool !== undefined) return this.#pool;
    const options = this.#options;
    const pool = new Piscina<QueryTask, QueryOutcome>({
      filename: WORKER,
      minThreads: 1,
      maxThreads: options.threads,
      idleTimeout: 60_000,
      maxQueue: options.threads,
      niceIncrement: WORKER_NICE,
      resourceLimits: { maxOldGenerationSizeMb: options.workerMemoryMb },
    });
    // A worker failing with no task on it (at start, say) is reported here; without a listener the
    // event would crash the process.
    pool.on('error', (error: unknown) => options.log?.warn({ err: error }, 'query worker failed'));
    this.#pool = pool;
    return pool;
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
    await this.#acquire(tenant);
    this.#options.meter?.escalated.inc();
    const abort = new AbortController();
    const watch = watchDeadline(abort, limits.query.timeMs);
    try {
      const outcome = await this.#workers().run(
        {
          contextKey: context.key,
          contextText: context.text,
          args,
          config,
          limits,
          cacheChars: Math.floor(this.#options.workerMemoryMb * MIB * WORKER_CACHE_SHARE),
          startedAfter: watch.startedAfter,
          dispatchedAt: watch.dispatchedAt,
        },
        { signal: abort.signal },
      );
      if (outcome.ok) return outcome.result;
      const { code, message, details } = outcome.error;
      // Reported against the whole budget, not the part left for the worker.
      if (code === 'LIMIT_EXCEEDED') throw queryLimitExceeded(details?.limit as QueryLimit, this.budget);
      throw new OpError(code, message, details);
    } catch (error) {
      if (error instanceof OpError) throw error;
      if (abort.signal.aborted) {
        this.#options.log?.warn(
          { time_ms: limits.query.timeMs },
          'query worker terminated past its deadline',
        );
        throw queryLimitExceeded('time', this.budget);
      }
      if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        this.#options.log?.warn(
          { heap_mb: this.#options.workerMemoryMb },
          'query worker ran out of memory; it is replaced',
        );
        throw queryLimitExceeded('memory', this.budget);
      }
      this.#options.log?.warn({ err: error }, 'query worker failed');
      const failed = new OpError('INTERNAL', 'The query could not be evaluated; try again.');
      failed.cause = error;
      throw failed;
    } finally {
      watch.stop();
      this.#release(tenant);
    }
  }

  #acquire(tenant: string): Promise<void> {
    if (this.#closed) return Promise.reject(this.#refuse('closing'));
    const load = this.#tenants.get(tenant) ?? { running: 0, waiting: 0, lastStart: 0 };
    if (load.running + load.waiting >= this.#options.perTenant) {
      return Promise.reject(this.#refuse('tenant_limit'));
    }
    this.#tenants.set(tenant, load);
    if (this.#running < this.#options.threads) {
      this.#start(load);
      return Promise.resolve();
    }
    if (this.#waiting.length >= this.#options.queue) {
      this.#forget(tenant, load);
      return Promise.reject(this.#refuse('queue_full'));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        resolve,
        reject,
        // Waiting longer than two whole queries may run means the workers are saturated: say so.
        timer: setTimeout(() => {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          load.waiting -= 1;
          this.#forget(tenant, load);
          this.#report();
          reject(this.#refuse('wait_timeout'));
        }, 2 * this.budget.timeMs),
      };
      load.waiting += 1;
      this.#waiting.push(waiter);
      this.#report();
    });
  }

  #start(load: TenantLoad): void {
    load.running += 1;
    load.lastStart = ++this.#starts;
    this.#running += 1;
    this.#report();
  }

  // Frees the thread and hands it to a waiting query, round robin by tenant: of the tenants with
  // the fewest queries running, the one whose last query started longest ago (so after one of a
  // tenant's queries, another tenant's goes before its second), its longest-waiting query.
  #release(tenant: string): void {
    const load = this.#tenants.get(tenant);
    if (load !== undefined) {
      load.running -= 1;
      this.#forget(tenant, load);
    }
    this.#running -= 1;
    let chosen: { index: number; load: TenantLoad } | undefined;
    this.#waiting.forEach((waiter, index) => {
      const candidate = this.#tenants.get(waiter.tenant);
      if (candidate === undefined) return;
      const better =
        chosen === undefined ||
        candidate.running < chosen.load.running ||
        (candidate.running === chosen.load.running && candidate.lastStart < chosen.load.lastStart);
      if (better) chosen = { index, load: candidate };
    });
    if (chosen === undefined) {
      this.#report();
      return;
    }
    const [next] = this.#waiting.splice(chosen.index, 1);
    if (next === undefined) return;
    clearTimeout(next.timer);
    chosen.load.waiting -= 1;
    this.#start(chosen.load);
    next.resolve();
  }

  #forget(tenant: string, load: TenantLoad): void {
    if (load.running === 0 && load.waiting === 0) this.#tenants.delete(tenant);
  }

  #report(): void {
    this.#options.meter?.running.set(this.#running);
    this.#options.meter?.queued.set(this.#waiting.length);
  }

  // `retry_after_seconds`, as every RATE_LIMITED answer (docs/api.md): one query's time, rounded up;
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

/**
 * Aborts a task `timeMs + TERMINATE_AFTER_MS` after its worker started it, not after it was handed
 * to the pool: a worker thread that is still starting (after a replacement) must not eat the query's
 * time. The worker writes when it started (milliseconds after `dispatchedAt`) into a shared cell.
 */
function watchDeadline(abort: AbortController, timeMs: number) {
  const startedAfter = new Int32Array(new SharedArrayBuffer(4));
  const dispatchedAt = performance.timeOrigin + performance.now();
  let timer: NodeJS.Timeout;
  const check = () => {
    const now = performance.timeOrigin + performance.now();
    const started = Atomics.load(startedAfter, 0);
    if (started === 0) {
      if (now - dispatchedAt >= MAX_START_WAIT_MS) abort.abort();
      else timer = setTimeout(check, timeMs + TERMINATE_AFTER_MS);
      return;
    }
    const left = dispatchedAt + started + timeMs + TERMINATE_AFTER_MS - now;
    if (left <= 0) abort.abort();
    else timer = setTimeout(check, left);
  };
  timer = setTimeout(check, timeMs + TERMINATE_AFTER_MS);
  return {
    startedAfter,
    dispatchedAt,
    started: () => Atomics.load(startedAfter, 0) !== 0,
    stop: () => clearTimeout(timer),
  };
}
