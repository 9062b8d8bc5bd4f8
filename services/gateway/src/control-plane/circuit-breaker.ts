/**
 * The circuit breaker in front of the control plane. Closed, every request is sent and counted;
 * after `failureThreshold` failures in a row (no answer, a timeout, a 5xx) it opens: nothing more
 * is sent, so callers fail at once instead of each waiting out its own timeout. After a cool-down
 * one probe (a health check, never a real request: a probe must be safe to lose) goes out; its
 * success closes the breaker, its failure opens it again for twice as long (up to a ceiling).
 *
 * Hand-rolled rather than opossum: opossum wraps one function and lets the next real call through
 * as its trial, with a fixed reset timeout; here three kinds of calls share one breaker, the trial
 * must be a health check (a write sent as a trial to a half-dead control plane is a write whose
 * outcome nobody knows), and the cool-down backs off. That is a small state machine.
 */

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  /** Failures in a row that open the breaker. */
  failureThreshold: number;
  /** First cool-down after opening; doubles after each failed probe up to `maxCooldownMs`. */
  cooldownMs: number;
  maxCooldownMs: number;
  /** The probe: resolves true when the control plane answered healthy. Never rejects. */
  probe(): Promise<boolean>;
  onChange(state: BreakerState): void;
}

export class CircuitBreaker {
  #state: BreakerState = 'closed';
  #failures = 0;
  #cooldownMs: number;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #options: BreakerOptions;

  constructor(options: BreakerOptions) {
    this.#options = options;
    this.#cooldownMs = options.cooldownMs;
  }

  get state(): BreakerState {
    return this.#state;
  }

  /** True when a request may be sent now (the breaker is closed). */
  allows(): boolean {
    return this.#state === 'closed';
  }

  /**
   * The outcome of a request sent while the breaker was closed. While it is open only the probe
   * decides: a late answer to a request sent before it opened says little about now.
   */
  record(ok: boolean): void {
    if (this.#state !== 'closed') return;
    if (ok) {
      this.#failures = 0;
      return;
    }
    this.#failures += 1;
    if (this.#failures >= this.#options.failureThreshold) this.#open();
  }

  #set(state: BreakerState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#options.onChange(state);
  }

  #open(): void {
    this.#set('open');
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#probe(), this.#cooldownMs);
    this.#timer.unref();
  }

  async #probe(): Promise<void> {
    this.#set('half_open');
    const healthy = await this.#options.probe();
    if (this.#stopped) return;
    if (healthy) {
      this.#failures = 0;
      this.#cooldownMs = this.#options.cooldownMs;
      this.#set('closed');
      return;
    }
    this.#cooldownMs = Math.min(this.#cooldownMs * 2, this.#options.maxCooldownMs);
    this.#open();
  }

  /** Stops probing (the gateway is closing). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}
