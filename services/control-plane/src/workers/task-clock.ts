/**
 * A task's clock, shared by a pool (worker-pool.ts) and its threads: the pool's deadline counts
 * from when a thread starts the task. Its own file, so a worker's module takes this and nothing of
 * the pool.
 */

/**
 * Given to each task so the deadline counts from when a thread starts it, not from when it was
 * handed over: a worker that is still starting (after a replacement) must not eat the task's time.
 * The worker writes when it started (milliseconds after `dispatchedAt`, at least 1) into the cell.
 */
export interface TaskClock {
  startedAfter: Int32Array;
  /** When the task was handed over, as `performance.timeOrigin + performance.now()`. */
  dispatchedAt: number;
}

/**
 * The worker side of TaskClock: records that the task starts now and answers when that was, as
 * `performance.now()` of this thread.
 */
export function startTask(clock: TaskClock): number {
  const started = performance.now();
  const after = Math.ceil(performance.timeOrigin + started - clock.dispatchedAt);
  Atomics.store(clock.startedAfter, 0, Math.max(1, after));
  return started;
}
