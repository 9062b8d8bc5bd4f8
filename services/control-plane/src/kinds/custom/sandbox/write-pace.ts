/**
 * The pace of one custom tool call's context writes: a token bucket holding at most `burst` turns,
 * refilled at `perSecond`. Every write runs on the control plane's event loop (and on the embedded
 * database, its whole transaction does), so a call writing from many loops at once would otherwise
 * take as much of that loop as its concurrency allows. Turns are handed out by the host bridge a
 * round at a time: writes that find none wait, and are let through together once the bucket holds
 * enough for all of them, so they still reach the context store in one turn of the event loop and
 * commit as one batch rather than one transaction each.
 */

export class WritePace {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  /** `now` is a clock in milliseconds (performance.now unless a test gives its own). */
  constructor(perSecond: number, burst: number, now: () => number = () => performance.now()) {
    this.#perMs = perSecond / 1000;
    this.#burst = Math.max(1, burst);
    this.#now = now;
    this.#tokens = this.#burst;
    this.#at = now();
  }

  /** Takes up to `wanted` turns now; answers how many it took (0 when the bucket is empty). */
  take(wanted: number): number {
    this.#refill();
    const taken = Math.max(0, Math.min(wanted, Math.floor(this.#tokens)));
    this.#tokens -= taken;
    return taken;
  }

  /** Milliseconds until the bucket holds `wanted` turns (at most a full bucket); 0 if it does now. */
  msUntil(wanted: number): number {
    this.#refill();
    const missing = Math.min(wanted, this.#burst) - this.#tokens;
    return missing <= 0 ? 0 : Math.ceil(missing / this.#perMs);
  }

  #refill(): void {
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#at) * this.#perMs);
    this.#at = now;
  }
}
