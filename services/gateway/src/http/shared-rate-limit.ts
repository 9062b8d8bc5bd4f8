/**
 * With REDIS_URL, the rate limit of an api key (and of a personal key) is one budget across every
 * gateway on that Redis: N per second for the key, not N per replica. Each key's bucket lives in
 * Redis and is refilled and taken in one script by Redis's own clock, so the gateways' clocks do
 * not matter; each gateway keeps a small share of tokens it already took, so a key at a high rate
 * needs a round trip only now and then, and misses at the same time share one. Nothing is admitted that
 * Redis did not grant: all gateways together admit at most the rate times the time, plus the burst.
 *
 * Redis away (or slower than RATE_LIMIT_REDIS_TIMEOUT_MS) must not stop the gateways: each falls
 * back at once to its own buckets with the same settings (as without Redis), says so in /readyz
 * and in metrics, and goes back once Redis answers a probe in time; it does not try Redis per
 * request meanwhile.
 */
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import { createRedisClient } from '@bindery/service-kit';
import type { GatewayMetrics } from '../metrics.ts';
import { RateLimiter, type KeyLimiter } from './rate-limit.ts';

/** Where each key's bucket lives; the key named is already a SHA-256 of the credential. */
const PREFIX = 'bindery:ratelimit:';

/**
 * Refills the bucket at KEYS[1] by the time since its last use (Redis's clock), grants ARGV[3]
 * tokens when it has them, and answers {granted, 0}, or {0, ms until they are there}. A share or
 * nothing: handing out the odd token left would make a key held at its limit cost a round trip
 * for every few requests. An idle bucket expires once it would be full again, which is what a
 * missing one means. The time is kept as Redis gives it (seconds and microseconds) and the tokens
 * with all their digits: Lua's own number text keeps 14, and the rounding it made on every call
 * granted a key one to two percent more than its rate at thousands of calls a second.
 */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local time = redis.call('TIME')
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 's', 'us')
local tokens = burst
if bucket[1] and bucket[2] and bucket[3] then
  local elapsed = (tonumber(time[1]) - tonumber(bucket[2])) * 1000 + (tonumber(time[2]) - tonumber(bucket[3])) / 1000
  tokens = math.min(burst, tonumber(bucket[1]) + math.max(0, elapsed) * rate / 1000)
end
local granted = 0
if tokens >= want then granted = want end
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 's', time[1], 'us', time[2])
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
if granted > 0 then return {granted, 0} end
return {0, math.ceil((want - tokens) * 1000 / rate)}
`;
const TAKE_SHA = createHash('sha1').update(TAKE_SCRIPT).digest('hex');

/**
 * A share is about this long of the rate: at a high rate most requests are served from it, while
 * tokens one gateway holds and another's caller waits for stay few.
 */
const SHARE_WINDOW_MS = 50;
/** Tokens of a share unused after this are dropped (never returned: Redis already counted them). */
const SHARE_TTL_MS = 1000;
/** While local, how often Redis is probed (besides at once when its connection is ready again). */
const PROBE_INTERVAL_MS = 1000;

/** How the limits of api keys and personal keys are applied now, as /readyz says it. */
export type RateLimitScope =
  'cluster' | 'per replica' | 'off' | 'local: Redis unreachable' | 'local: Redis not connected yet';

interface Share {
  /** Tokens taken from Redis, not spent yet. */
  tokens: number;
  expiresAt: number;
  /**
   * Refused until then without asking Redis: when a whole share is there again (no gateway can
   * make tokens appear sooner), so a key held at its limit costs a round trip per share, not per
   * request. The tokens that came meanwhile wait in Redis, where the next ask finds them.
   */
  blockedUntil: number;
}

/**
 * `promise`, or a rejection once `ms` passed without its answer (which is then ignored). When the
 * timer fires, what the sockets received is read first (one turn to the loop's I/O phase): after a
 * stall of this process (a long GC, a starved CPU) an answer that came in time is not taken for a
 * slow Redis.
 */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => setImmediate(() => reject(new Error(`Redis did not answer within ${ms} ms`))),
      ms,
    );
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const secondsUntil = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export interface SharedRateLimitOptions {
  url: string;
  perSecond: number;
  burst: number;
  /** A check Redis has not answered within this falls back to the local buckets. */
  timeoutMs: number;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
}

export class SharedRateLimiter implements KeyLimiter {
  readonly #client;
  readonly #local: RateLimiter;
  readonly #shares = new LRUCache<string, Share>({ max: 100_000 });
  /** The round trip out for a key, if any: misses meanwhile wait for its share. */
  readonly #asking = new Map<string, Promise<void>>();
  readonly #args: { rate: string; burst: string };
  readonly #shareSize: number;
  readonly #timeoutMs: number;
  readonly #metrics: GatewayMetrics;
  readonly #log: FastifyBaseLogger;
  readonly #probes: NodeJS.Timeout;
  #shared = false;
  #reason: RateLimitScope = 'local: Redis not connected yet';
  /** The current outage was logged (so it is logged once, and its end too). */
  #outageLogged = false;
  #probing = false;
  #closed = false;

  constructor(options: SharedRateLimitOptions) {
    const { perSecond, burst } = options;
    this.#local = new RateLimiter(perSecond, burst);
    this.#args = { rate: String(perSecond), burst: String(burst) };
    // At most a quarter of the burst, so one gateway's share never holds most of a key's burst.
    this.#shareSize = Math.max(
      1,
      Math.min(Math.floor((perSecond * SHARE_WINDOW_MS) / 1000), Math.floor(burst / 4)),
    );
    this.#timeoutMs = options.timeoutMs;
    this.#metrics = options.metrics;
    this.#log = options.log;
    this.#client = createRedisClient({
      url: options.url,
      // A command while disconnected fails at once (then the local buckets answer) instead of
      // waiting in a queue for a Redis that may be gone for minutes.
      disableOfflineQueue: true,
      // Back within a second of Redis: the cluster budget returns as soon as it can.
      socket: { reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000) },
    });
    // node-redis emits one error per reconnect attempt: the outage is logged once, in #fallBack.
    this.#client.on('error', (error: unknown) => this.#fallBack(error));
    this.#client.on('ready', () => this.#probe());
    this.#client.connect().catch(() => undefined);
    this.#probes = setInterval(() => {
      if (!this.#shared) this.#probe();
    }, PROBE_INTERVAL_MS).unref();
  }

  /** How limits are applied now: `cluster` while Redis answers, else why they are local. */
  scope(): RateLimitScope {
    return this.#shared ? 'cluster' : this.#reason;
  }

  available(key: string): boolean {
    if (!this.#shared) return this.#local.available(key);
    // Only a budget known to be spent predicts a refusal; an empty share costs a round trip in
    // `take`, which admission awaits on either path.
    const share = this.#shares.peek(key);
    if (!share) return true;
    const now = Date.now();
    return (share.tokens >= 1 && share.expiresAt > now) || share.blockedUntil <= now;
  }

  take(key: string): number | Promise<number> {
    if (!this.#shared) return this.#local.take(key);
    const now = Date.now();
    const share = this.#shares.get(key);
    if (share) {
      if (share.tokens >= 1 && share.expiresAt > now) {
        share.tokens -= 1;
        return 0;
      }
      if (share.blockedUntil > now) return secondsUntil(share.blockedUntil - now);
    }
    // One round trip per key at a time: the misses meanwhile wait for its share and take from it.
    const asking = this.#asking.get(key) ?? this.#askShare(key);
    return asking.then(() => this.take(key));
  }

  /**
   * Asks Redis for a share of `key`'s budget (one round trip) and keeps what it grants, or when
   * to ask again; Redis failing or late: the local buckets from now on. Never rejects.
   */
  #askShare(key: string): Promise<void> {
    const asking = within(this.#evalTake(key, this.#shareSize), this.#timeoutMs).then(
      (reply) => {
        const [granted, waitMs] = Array.isArray(reply) ? (reply as unknown[]).map(Number) : [];
        if (granted === undefined || waitMs === undefined || !Number.isFinite(granted)) {
          this.#fallBack(new Error('unexpected answer to the rate-limit script'));
          return;
        }
        const now = Date.now();
        const share = this.#shares.get(key) ?? { tokens: 0, expiresAt: 0, blockedUntil: 0 };
        if (granted >= 1) {
          share.tokens = (share.expiresAt > now ? share.tokens : 0) + granted;
          share.expiresAt = now + SHARE_TTL_MS;
          share.blockedUntil = 0;
        } else {
          share.blockedUntil = now + waitMs;
        }
        this.#shares.set(key, share);
      },
      (error: unknown) => this.#fallBack(error),
    );
    const settled = asking.finally(() => this.#asking.delete(key));
    this.#asking.set(key, settled);
    return settled;
  }

  /** One round trip: EVALSHA, or EVAL when Redis does not have the script (restarted, flushed). */
  async #evalTake(key: string, want: number): Promise<unknown> {
    const args = ['1', PREFIX + key, this.#args.rate, this.#args.burst, String(want)];
    try {
      return await this.#client.sendCommand(['EVALSHA', TAKE_SHA, ...args]);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.#client.sendCommand(['EVAL', TAKE_SCRIPT, ...args]);
    }
  }

  /** Local limits from now on (at once, whatever the failure), said once per outage. */
  #fallBack(error: unknown): void {
    if (this.#closed) return;
    const wasShared = this.#shared;
    this.#shared = false;
    this.#reason = 'local: Redis unreachable';
    if (wasShared) {
      this.#metrics.rateLimitShared.set(0);
      this.#metrics.rateLimitFallbacks.inc();
    }
    if (this.#outageLogged) return;
    this.#outageLogged = true;
    this.#log.warn(
      { err: error instanceof Error ? error.message : String(error) },
      'rate limits: Redis unreachable; each gateway applies its own limits until Redis answers again',
    );
  }

  /**
   * Loads the script (the next EVALSHA finds it) as the probe: Redis is used again once it answers
   * within the timeout, so a Redis that answers but slowly does not flap between the two modes.
   */
  #probe(): void {
    if (this.#shared || this.#probing || this.#closed || !this.#client.isReady) return;
    this.#probing = true;
    const started = performance.now();
    this.#client
      .scriptLoad(TAKE_SCRIPT)
      .then(() => {
        if (this.#closed || performance.now() - started > this.#timeoutMs) return;
        this.#shared = true;
        this.#metrics.rateLimitShared.set(1);
        if (this.#outageLogged) {
          this.#outageLogged = false;
          this.#log.info('rate limits: Redis answers again; one budget per key across the gateways');
        }
      })
      .catch((error: unknown) => this.#fallBack(error))
      .finally(() => {
        this.#probing = false;
      });
  }

  /** Closes the Redis connection; a take in flight falls back to the local buckets. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#probes);
    if (this.#client.isOpen) this.#client.destroy();
  }
}

/** The limiter of api keys and personal keys, and what /readyz says of it. */
export interface KeyLimits {
  limiter: KeyLimiter;
  scope(): RateLimitScope;
  close(): Promise<void>;
}

/**
 * One budget per key across the gateways when `redisUrl` is set (and limits are on), else this
 * gateway's own buckets.
 */
export function keyLimits(
  settings: { perSecond: number; burst: number; redisTimeoutMs: number },
  redisUrl: string | undefined,
  deps: { metrics: GatewayMetrics; log: FastifyBaseLogger },
): KeyLimits {
  if (settings.perSecond <= 0 || redisUrl === undefined) {
    const scope: RateLimitScope = settings.perSecond <= 0 ? 'off' : 'per replica';
    return {
      limiter: new RateLimiter(settings.perSecond, settings.burst),
      scope: () => scope,
      close: async () => undefined,
    };
  }
  const shared = new SharedRateLimiter({
    url: redisUrl,
    perSecond: settings.perSecond,
    burst: settings.burst,
    timeoutMs: settings.redisTimeoutMs,
    ...deps,
  });
  return { limiter: shared, scope: () => shared.scope(), close: () => shared.close() };
}
