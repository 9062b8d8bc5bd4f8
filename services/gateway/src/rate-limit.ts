/**
 * Per-api_key token buckets: `perSecond` sustained, `burst` at once. Over the limit a request gets
 * 429 with Retry-After. Buckets live in this process, bounded in number.
 */
import { LRUCache } from 'lru-cache';

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class RateLimiter {
  readonly #buckets = new LRUCache<string, Bucket>({ max: 100_000 });
  readonly #perSecond: number;
  readonly #burst: number;

  constructor(perSecond: number, burst: number) {
    this.#perSecond = perSecond;
    this.#burst = burst;
  }

  /** True when `take` would succeed now; takes nothing. */
  available(key: string, now = Date.now(), cost = 1): boolean {
    if (this.#perSecond <= 0) return true;
    const bucket = this.#buckets.peek(key);
    if (!bucket) return this.#burst >= cost;
    return Math.min(this.#burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.#perSecond) >= cost;
  }

  /** 0 when `cost` tokens were taken, else the seconds to wait before retrying (nothing taken). */
  take(key: string, now = Date.now(), cost = 1): number {
    if (this.#perSecond <= 0) return 0;
    const bucket = this.#buckets.get(key) ?? { tokens: this.#burst, updatedAt: now };
    bucket.tokens = Math.min(
      this.#burst,
      bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.#perSecond,
    );
    bucket.updatedAt = now;
    if (bucket.tokens >= cost) {
      bucket.tokens -= cost;
      this.#buckets.set(key, bucket);
      return 0;
    }
    this.#buckets.set(key, bucket);
    return Math.max(1, Math.ceil((cost - bucket.tokens) / this.#perSecond));
  }

  /** Gives back tokens taken for something that turned out not to count (never above the burst). */
  refund(key: string, cost = 1): void {
    const bucket = this.#buckets.peek(key);
    if (bucket) bucket.tokens = Math.min(this.#burst, bucket.tokens + cost);
  }
}
