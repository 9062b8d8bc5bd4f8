/**
 * Per-api_key token buckets: `perSecond` sustained, `burst` at once. Over the limit a request gets
 * 429 with Retry-After. Buckets live in this process, bounded in number. With Redis, the limit of
 * api keys and personal keys is one budget across the gateways instead (shared-rate-limit.ts), which
 * falls back to these buckets while Redis is away.
 */
import { LRUCache } from 'lru-cache';

/**
 * What admission asks of the limiter of api keys and personal keys, whether its buckets live in
 * this process (`RateLimiter`) or in Redis (`SharedRateLimiter`).
 */
export interface KeyLimiter {
  /**
   * 0 when a token was taken, else the seconds to wait before retrying (nothing taken). A promise
   * only when the answer needs a round trip: the common case stays synchronous.
   */
  take(key: string): number | Promise<number>;
  /** Whether `take` is expected to succeed now; takes nothing (the fast lane's prediction). */
  available(key: string): boolean;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class RateLimiter implements KeyLimiter {
  readonly #buckets = new LRUCache<string, Bucket>({ max: 100_000 });
  readonly #perSecond: number;
  readonly #burst: number;

  constructor(perSecond: number, burst: number) {
    this.#perSecond = perSecond;
    this.#burst = burst;
  }

  /** The tokens `key` would have now (refilled since its last use), without touching its bucket. */
  #tokens(key: string, now: number): number {
    const bucket = this.#buckets.peek(key);
    if (!bucket) return this.#burst;
    return Math.min(this.#burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.#perSecond);
  }

  /** The bucket of `key`, refilled up to now (created full), marked recently used. */
  #refilled(key: string, now: number): Bucket {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: this.#burst, updatedAt: now };
      this.#buckets.set(key, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(
      this.#burst,
      bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.#perSecond,
    );
    bucket.updatedAt = now;
    return bucket;
  }

  #secondsUntil(tokens: number, cost: number): number {
    return Math.max(1, Math.ceil((cost - tokens) / this.#perSecond));
  }

  /** True when `take` would succeed now; takes nothing. */
  available(key: string, now = Date.now(), cost = 1): boolean {
    return this.wait(key, now, cost) === 0;
  }

  /** 0 when `cost` tokens are there now, else the seconds until they are; takes nothing. */
  wait(key: string, now = Date.now(), cost = 1): number {
    if (this.#perSecond <= 0) return 0;
    const tokens = this.#tokens(key, now);
    return tokens >= cost ? 0 : this.#secondsUntil(tokens, cost);
  }

  /** 0 when `cost` tokens were taken, else the seconds to wait before retrying (nothing taken). */
  take(key: string, now = Date.now(), cost = 1): number {
    if (this.#perSecond <= 0) return 0;
    const bucket = this.#refilled(key, now);
    if (bucket.tokens < cost) return this.#secondsUntil(bucket.tokens, cost);
    bucket.tokens -= cost;
    return 0;
  }

  /**
   * Charges `cost` tokens for something already done, whether or not they were there: the bucket
   * may go into debt, down to minus one burst, which refills repay before `take` or `wait` let
   * anything through again.
   */
  charge(key: string, now = Date.now(), cost = 1): void {
    if (this.#perSecond <= 0) return;
    const bucket = this.#refilled(key, now);
    bucket.tokens = Math.max(-this.#burst, bucket.tokens - cost);
  }

  /** Gives back tokens taken for something that turned out not to count (never above the burst). */
  refund(key: string, cost = 1): void {
    const bucket = this.#buckets.peek(key);
    if (bucket) bucket.tokens = Math.min(this.#burst, bucket.tokens + cost);
  }
}
