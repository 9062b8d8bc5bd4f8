/**
 * Worker threads for work that must not run on the event loop (long queries, custom tools), with a
 * fair admission queue in front of them. Each user of it (query-pool.ts, sandbox/) brings its own
 * worker file, sizes and refusal message; the queue, the fairness between tenants and the deadline
 * backstop are the same for all of them, so they live here once.
 *
 * The threads come from piscina. The queue is kept here rather than in piscina: piscina does not
 * count tasks that carry an abort signal against `maxQueue` (every task here carries one, to
 * terminate a worker that overruns), and a task must know when it reaches a thread for its time
 * budget to start then. Keeping it here also makes it fair: one tenant (the user owning the
 * exposure) has at most a few tasks in the pool at once, and a freed thread goes to the waiting
 * tenant with the fewest running, so one tenant's flood cannot starve the others.
 */
import type { ResourceLimits, TransferListItem } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { TaskClock } from './task-clock.ts';
import { workerExecArgv } from './worker-file.ts';

/** Why a task was refused a thread (the `reason` of its RATE_LIMITED answer, a /metrics label). */
export type PoolRefusal = 'tenant_limit' | 'queue_full' | 'wait_timeout' | 'closing';

export interface FairWorkerPoolOptions {
  /** Names the pool in log lines ("query worker", "custom tool worker"). */
  name: string;
  /** The module a worker runs (built JavaScript, see worker-file.ts): its default export takes each task. */
  module: URL;
  /** Worker threads at most. */
  threads: number;
  /** Worker threads kept running even when idle (default 1). */
  warmThreads?: number;
  /** Tasks waiting for a thread at most; more are refused (`queue_full`). */
  queue: number;
  /** Tasks of one tenant in the pool at once, running or waiting; more are refused (`tenant_limit`). */
  perTenant: number;
  /** Heap and stack caps of each worker thread. */
  resourceLimits: ResourceLimits;
  /** Given to every worker thread as its `workerData` (settings it needs before its first task). */
  workerData?: object;
  /** How long a task may wait for a thread before it is refused (`wait_timeout`). */
  maxWaitMs: number;
  /**
   * A worker checks its own deadline; terminating it this long after the deadline is the backstop
   * for a single step that runs on (a replacement thread costs CPU on a quiet host, loading its
   * module).
   */
  terminateAfterMs: number;
  /** The error a refused task rejects with (the caller counts and words it). */
  refusal(reason: PoolRefusal): Error;
  /** Told the running and waiting counts whenever they change (the /metrics gauges). */
  report?(running: number, queued: number): void;
  log?: { warn(details: object, message: string): void };
}

/** How a task that got a thread ended. */
export type WorkerRun<Outcome> =
  | { status: 'done'; outcome: Outcome }
  /** Terminated: still running `terminateAfterMs` past its deadline. */
  | { status: 'deadline' }
  /** Its worker passed the heap cap and died (it is replaced). */
  | { status: 'out_of_memory' }
  /** Its worker failed otherwise (a bug, or a thread that could not start). */
  | { status: 'failed'; error: unknown };

// Worker threads run at a lower CPU priority (nice +10; Linux and macOS, through piscina's optional
// @napi-rs/nice): with every core busy with long tasks, the event loop (and the database) still
// gets the CPU first, so cheap calls keep answering at once.
const WORKER_NICE = 10;
// How long a task may wait for a worker thread to start (a fraction of a second on a quiet host;
// much more under load) before the pool is reported unavailable.
const MAX_START_WAIT_MS = 30_000;

interface Waiter {
  tenant: string;
  resolve(): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/** One tenant's tasks in the pool. */
interface TenantLoad {
  running: number;
  waiting: number;
  /** When a task of this tenant last got a thread (the pool's count of starts), 0 for never. */
  lastStart: number;
}

export class FairWorkerPool<Task, Outcome> {
  readonly #options: FairWorkerPoolOptions;
  #pool: Piscina<Task, Outcome> | undefined;
  readonly #waiting: Waiter[] = [];
  readonly #tenants = new Map<string, TenantLoad>();
  #running = 0;
  #starts = 0;
  #closed = false;

  constructor(options: FairWorkerPoolOptions) {
    this.#options = options;
  }

  /** Starts the threads (and the warm workers) now rather than at the first task. */
  warm(): void {
    this.#workers();
  }

  /** Tasks running in a worker and waiting for one, now. */
  get load(): { running: number; queued: number } {
    return { running: this.#running, queued: this.#waiting.length };
  }

  /**
   * Runs one task of `tenant` in a worker within `timeMs` (counted from when a thread starts it).
   * `build` makes the task from its clock; `admitted` is told when the task got its place.
   * Rejects only with the options' refusal error; every other end is a `WorkerRun`.
   */
  async run(
    tenant: string,
    timeMs: number,
    build: (clock: TaskClock) => Task,
    extra: { transferList?: TransferListItem[]; admitted?: () => void } = {},
  ): Promise<WorkerRun<Outcome>> {
    await this.#acquire(tenant);
    extra.admitted?.();
    const abort = new AbortController();
    const watch = watchDeadline(abort, timeMs, this.#options.terminateAfterMs);
    try {
      const clock: TaskClock = { startedAfter: watch.startedAfter, dispatchedAt: watch.dispatchedAt };
      const outcome = await this.#workers().run(build(clock), {
        signal: abort.signal,
        ...(extra.transferList && { transferList: extra.transferList }),
      });
      return { status: 'done', outcome };
    } catch (error) {
      if (abort.signal.aborted) return { status: 'deadline' };
      if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY')
        return { status: 'out_of_memory' };
      return { status: 'failed', error };
    } finally {
      watch.stop();
      this.#release(tenant);
    }
  }

  /** Stops every worker; queued tasks are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(this.#options.refusal('closing'));
    }
    this.#tenants.clear();
    this.#report();
    await this.#pool?.destroy();
  }

  // The pool, made on first use: `warmThreads` workers are kept from then on (piscina's minThreads).
  #workers(): Piscina<Task, Outcome> {
    if (this.#pool !== undefined) return this.#pool;
    const options = this.#options;
    const pool = new Piscina<Task, Outcome>({
      filename: options.module.href,
      minThreads: Math.min(options.warmThreads ?? 1, options.threads),
      maxThreads: options.threads,
      idleTimeout: 60_000,
      maxQueue: options.threads,
      niceIncrement: WORKER_NICE,
      resourceLimits: options.resourceLimits,
      workerData: options.workerData ?? {},
      execArgv: workerExecArgv(),
    });
    // A worker failing with no task on it (at start, say) is reported here; without a listener the
    // event would crash the process.
    pool.on('error', (error: unknown) => options.log?.warn({ err: error }, `${options.name} failed`));
    this.#pool = pool;
    return pool;
  }

  #acquire(tenant: string): Promise<void> {
    if (this.#closed) return Promise.reject(this.#options.refusal('closing'));
    const load = this.#tenants.get(tenant) ?? { running: 0, waiting: 0, lastStart: 0 };
    if (load.running + load.waiting >= this.#options.perTenant) {
      return Promise.reject(this.#options.refusal('tenant_limit'));
    }
    this.#tenants.set(tenant, load);
    if (this.#running < this.#options.threads) {
      this.#start(load);
      return Promise.resolve();
    }
    if (this.#waiting.length >= this.#options.queue) {
      this.#forget(tenant, load);
      return Promise.reject(this.#options.refusal('queue_full'));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          load.waiting -= 1;
          this.#forget(tenant, load);
          this.#report();
          reject(this.#options.refusal('wait_timeout'));
        }, this.#options.maxWaitMs),
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

  // Frees the thread and hands it to a waiting task, round robin by tenant: of the tenants with
  // the fewest tasks running, the one whose last task started longest ago (so after one of a
  // tenant's tasks, another tenant's goes before its second), its longest-waiting task.
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
    this.#options.report?.(this.#running, this.#waiting.length);
  }
}

/**
 * Aborts a task `timeMs + terminateAfterMs` after its worker started it (see TaskClock), or when
 * its thread has not started it within MAX_START_WAIT_MS.
 */
function watchDeadline(abort: AbortController, timeMs: number, terminateAfterMs: number) {
  const startedAfter = new Int32Array(new SharedArrayBuffer(4));
  const dispatchedAt = performance.timeOrigin + performance.now();
  let timer: NodeJS.Timeout;
  const check = () => {
    const now = performance.timeOrigin + performance.now();
    const started = Atomics.load(startedAfter, 0);
    if (started === 0) {
      if (now - dispatchedAt >= MAX_START_WAIT_MS) abort.abort();
      else timer = setTimeout(check, timeMs + terminateAfterMs);
      return;
    }
    const left = dispatchedAt + started + timeMs + terminateAfterMs - now;
    if (left <= 0) abort.abort();
    else timer = setTimeout(check, left);
  };
  timer = setTimeout(check, timeMs + terminateAfterMs);
  return { startedAfter, dispatchedAt, stop: () => clearTimeout(timer) };
}
