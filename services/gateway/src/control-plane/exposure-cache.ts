/**
 * What each api_key exposes, cached by the key's SHA-256: config v2 of an AEI or a legacy v1
 * instance's config, found with one control-plane lookup per key (`GET /internal/keys/{key}/config`).
 * Fresh entries answer without any call; after the TTL an AEI's entry is revalidated with its ETag
 * (a 304 costs no body); at most one lookup per key and URL flavour is in flight; when the control
 * plane fails, the last good entry is served (stale-if-error) and counted. Invalidation drops
 * entries by api_key, AEI id, or all.
 *
 * Known keys live in an LRU bounded by entries and by estimated heap bytes. Unknown keys are
 * remembered briefly in a small LRU of their own, so random keys cannot push known configs out.
 * Lookups that find nothing are capped per second, per client address and for the whole gateway
 * (see `#fetch`): a spray of random keys costs the control plane a bounded number of lookups a
 * second, one address cannot spend the whole gateway's allowance, and keys that exist never spend
 * it. Keys not in the shape the control plane issues never get this far (`admission.ts`).
 */
import { hash as digest } from 'node:crypto';
import type { CallerIdentity, ConfigV2, KeyFlavor, LegacyConfig } from '@bindery/contracts';
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import { type ControlPlaneClient } from './client.ts';
import { CircuitOpenError, ControlPlaneError } from './errors.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { RateLimiter } from '../http/rate-limit.ts';

/**
 * What a credential exposes. `caller` is set for a caller entry (a personal key with a caller):
 * who asked, and whether the caller's mapping or the default profile answered. `playground` is set
 * for a playground key of the AEI (the admin console's): when it stops working (ms since the epoch).
 */
export type Exposure =
  | {
      kind: 'aei';
      config: ConfigV2;
      caller?: CallerIdentity | undefined;
      playground?: { expiresAt: number } | undefined;
    }
  | { kind: 'legacy'; config: LegacyConfig }
  | { kind: 'unknown' };

/**
 * What a request authenticates with: an exposure's api_key, or a personal key with the caller it
 * speaks for (undefined: none given, the default profile answers).
 */
export type Credential =
  | { kind: 'api_key'; apiKey: string }
  | { kind: 'personal'; personalKey: string; caller: string | undefined }
  | OAuthCredential;

/**
 * A verified OAuth access token (auth/oauth-resource.ts): its grant, its person and the keyless
 * URL it is for. The token itself is not kept: the control plane is asked about the grant.
 */
export interface OAuthCredential {
  kind: 'oauth';
  grantId: string;
  subject: string;
  /** The keyless URL's path (`/api/v2/mcp/aei/{id}`, `/api/v2/mcp/caller[/{caller}]`). */
  resourcePath: string;
  /** An external authorization server's token: its issuer, and the claim `subject` is the value of. */
  external?: { issuer: string; claim: 'sub' | 'email' } | undefined;
}

/**
 * The cache key of a credential: the SHA-256 of the api_key, or of the personal key and caller
 * together (each caller of a key is its own entry: they may map to different profiles).
 */
export function credentialHash(credential: Credential): string {
  if (credential.kind === 'api_key') return keyHash(credential.apiKey);
  if (credential.kind === 'oauth') {
    const issuer = credential.external?.issuer ?? '';
    return keyHash(
      `oauth\n${issuer}\n${credential.grantId}\n${credential.subject}\n${credential.resourcePath}`,
    );
  }
  return keyHash(`${credential.personalKey}\n${credential.caller ?? ''}`);
}

type KnownExposure = Exclude<Exposure, { kind: 'unknown' }>;

interface Entry {
  exposure: KnownExposure;
  etag: string | undefined;
  fetchedAt: number;
  /** Estimated heap bytes (see `estimatedBytes`). */
  bytes: number;
}

interface UnknownEntry {
  fetchedAt: number;
  /** `v1`: unknown to a v1 lookup only, which skips AEIs not migrated from v1, so it may still be an AEI's key. */
  flavor: 'v1' | 'all';
}

export interface CacheOptions {
  maxEntries: number;
  maxBytes: number;
  ttlMs: number;
  negativeTtlMs: number;
  /** 0 = no cap. */
  unknownKeyLookupsPerSecond: number;
  /** The same for one client address; 0 = no cap. */
  unknownKeyLookupsPerAddressPerSecond: number;
}

/** Unknown keys remembered at most. Only about `cap x negative TTL` of them are fresh at any time. */
const MAX_UNKNOWN_ENTRIES = 10_000;
/** The LRU node, the entry, the key hash and the AEI index, measured at roughly this much. */
const ENTRY_OVERHEAD_BYTES = 512;

/**
 * Estimated heap cost of a config that arrived as `jsonBytes` of JSON. Measured on Node 20: the
 * parsed config takes about 1.2 times its JSON size, and 1.65 times once the tool index
 * (`mcp/tools/tool-index.ts`) has been built from it; twice the JSON size leaves room for richer schemas.
 */
export function estimatedBytes(jsonBytes: number): number {
  return 2 * jsonBytes + ENTRY_OVERHEAD_BYTES;
}

/**
 * A lookup of a key the cache does not know was not sent: too many lookups found nothing lately,
 * from this client address or on the whole gateway.
 */
export class LookupsLimitedError extends Error {
  override name = 'LookupsLimitedError';
  constructor(
    readonly retryAfterSeconds: number,
    readonly scope: 'address' | 'gateway',
  ) {
    super(
      `too many lookups of unknown api_keys ${scope === 'address' ? 'from this address' : 'on this gateway'}; retry in ${retryAfterSeconds} s`,
    );
  }
}

/** SHA-256 of an api_key: the cache key, so no plain key is held longer than a request. */
export function keyHash(apiKey: string): string {
  // The one-shot digest: no Hash object per request (every MCP request hashes its key).
  return digest('sha256', apiKey, 'hex');
}

export interface Resolved {
  exposure: Exposure;
  /** True when this is the last good config served because the control plane failed. */
  stale: boolean;
}

export class ExposureCache {
  readonly #entries: LRUCache<string, Entry>;
  readonly #unknown = new LRUCache<string, UnknownEntry>({ max: MAX_UNKNOWN_ENTRIES });
  readonly #inFlight = new Map<string, Promise<Resolved>>();
  /**
   * Bumped by every invalidation. A lookup that started before one may carry the config as it was
   * before the change: it answers the requests that were waiting for it, but is neither cached nor
   * joined by later requests (they look up afresh).
   */
  #generation = 0;
  /** The key hash each cached exposure is stored under, for `charge`. */
  readonly #hashOf = new WeakMap<KnownExposure, string>();
  /** AEI id -> hashes of keys cached for it (a rotated key leaves two for a while). */
  readonly #byAei = new Map<string, Set<string>>();
  /** One bucket for the whole gateway: lookups that found nothing, charged after the answer. */
  readonly #lookups: RateLimiter;
  /** A bucket per client address: its lookups in flight and those that found nothing. */
  readonly #lookupsByAddress: RateLimiter;
  readonly #options: CacheOptions;
  readonly #client: ControlPlaneClient;
  readonly #metrics: GatewayMetrics;
  readonly #log: FastifyBaseLogger;
  readonly #now: () => number;

  constructor(
    client: ControlPlaneClient,
    options: CacheOptions,
    metrics: GatewayMetrics,
    log: FastifyBaseLogger,
    now: () => number = Date.now,
  ) {
    this.#client = client;
    this.#options = options;
    this.#metrics = metrics;
    this.#log = log;
    this.#now = now;
    this.#lookups = new RateLimiter(
      options.unknownKeyLookupsPerSecond,
      Math.max(1, options.unknownKeyLookupsPerSecond),
    );
    this.#lookupsByAddress = new RateLimiter(
      options.unknownKeyLookupsPerAddressPerSecond,
      Math.max(1, options.unknownKeyLookupsPerAddressPerSecond),
    );
    this.#entries = new LRUCache<string, Entry>({
      max: options.maxEntries,
      maxSize: options.maxBytes,
      sizeCalculation: (entry) => entry.bytes,
      dispose: (entry, hash) => this.#unindex(entry, hash),
    });
  }

  #index(entry: Entry, hash: string): void {
    if (entry.exposure.kind !== 'aei') return;
    const id = entry.exposure.config.aei.id;
    let hashes = this.#byAei.get(id);
    if (!hashes) this.#byAei.set(id, (hashes = new Set()));
    hashes.add(hash);
  }

  #unindex(entry: Entry, hash: string): void {
    if (entry.exposure.kind !== 'aei') return;
    const id = entry.exposure.config.aei.id;
    const hashes = this.#byAei.get(id);
    hashes?.delete(hash);
    if (hashes?.size === 0) this.#byAei.delete(id);
  }

  #age(fetchedAt: number): number {
    return this.#now() - fetchedAt;
  }

  /** Fresh: within the TTL, and not a playground key past its expiry. */
  #fresh(entry: Entry): boolean {
    return this.#age(entry.fetchedAt) < this.#options.ttlMs && !this.#expired(entry);
  }

  /**
   * A playground key past its expiry: unknown from then on, whatever the cache's TTL says (the
   * control plane answers it as unknown too; it is neither asked nor served stale).
   */
  #expired(entry: Entry): boolean {
    return entry.exposure.kind === 'aei' && (entry.exposure.playground?.expiresAt ?? Infinity) <= this.#now();
  }

  /**
   * The exposure cached for this key hash when it is fresh and known, without any call and without
   * counting; undefined otherwise (then `resolve` decides).
   */
  peek(hash: string): Exposure | undefined {
    const entry = this.#entries.get(hash);
    if (!entry || !this.#fresh(entry)) return undefined;
    return entry.exposure;
  }

  /**
   * What `apiKey` exposes now, for a URL of this flavour: from the cache when fresh, else from the
   * control plane. Throws ControlPlaneError when the control plane fails and nothing is cached, and
   * LookupsLimitedError when the key is not known and a lookup cap (of the client's `address`, or
   * the gateway's) is spent.
   */
  async resolve(
    apiKey: string | Credential,
    hash = credentialHash(typeof apiKey === 'string' ? { kind: 'api_key', apiKey } : apiKey),
    flavor: KeyFlavor = 'v2',
    address?: string,
  ): Promise<Resolved> {
    let entry = this.#entries.get(hash);
    if (entry && this.#expired(entry)) {
      this.#entries.delete(hash);
      this.#unknown.set(hash, { fetchedAt: this.#now(), flavor: 'all' });
      this.#gauge();
      entry = undefined;
    }
    if (entry && this.#fresh(entry)) {
      this.#metrics.cache.inc({ result: 'hit' });
      return { exposure: entry.exposure, stale: false };
    }
    if (!entry) {
      const unknown = this.#unknown.get(hash);
      if (
        unknown &&
        (unknown.flavor === 'all' || flavor === 'v1') &&
        this.#age(unknown.fetchedAt) < this.#options.negativeTtlMs
      ) {
        this.#metrics.cache.inc({ result: 'negative' });
        return { exposure: { kind: 'unknown' }, stale: false };
      }
    }
    // A v1 URL asks the v1 way (legacy instances and AEIs migrated from them; no config is built
    // for any other AEI), unless the key is already known as an AEI's: refreshing that takes the
    // v2 lookup and its ETag.
    const lookup: KeyFlavor = flavor === 'v1' && entry?.exposure.kind !== 'aei' ? 'v1' : 'v2';
    const credential: Credential = typeof apiKey === 'string' ? { kind: 'api_key', apiKey } : apiKey;
    const flight = (credential.kind === 'api_key' ? lookup : credential.kind) + hash;
    const pending = this.#inFlight.get(flight);
    if (pending) return pending;
    const fetching: Promise<Resolved> = this.#fetch(credential, hash, entry, lookup, address).finally(() => {
      // An invalidation may have dropped it, and a newer lookup of the key taken its place.
      if (this.#inFlight.get(flight) === fetching) this.#inFlight.delete(flight);
    });
    this.#inFlight.set(flight, fetching);
    return fetching;
  }

  async #fetch(
    credential: Credential,
    hash: string,
    previous: Entry | undefined,
    flavor: KeyFlavor,
    address: string | undefined,
  ): Promise<Resolved> {
    // Only lookups that find nothing count against the caps. The client's address lends a token
    // for the lookup (so one address has at most its burst of lookups in flight), given back when
    // the key exists. The gateway's bucket lends nothing: it must hold a token for the lookup to
    // be sent, and is charged once the answer is "unknown", so valid keys (a restart full of
    // them) never hold its tokens and never make another key wait.
    const counted = previous === undefined;
    const addressKey = address ?? '';
    if (counted) {
      const now = this.#now();
      const byAddress = this.#lookupsByAddress.take(addressKey, now);
      if (byAddress > 0) {
        this.#metrics.lookupsLimited.inc({ scope: 'address' });
        throw new LookupsLimitedError(byAddress, 'address');
      }
      const global = this.#lookups.wait('all', now);
      if (global > 0) {
        this.#lookupsByAddress.refund(addressKey);
        this.#metrics.lookupsLimited.inc({ scope: 'gateway' });
        throw new LookupsLimitedError(global, 'gateway');
      }
    }
    let spent = false;
    const generation = this.#generation;
    /** False once an invalidation came after this lookup started: its answer may predate the change. */
    const current = () => generation === this.#generation;
    try {
      const etag = previous?.exposure.kind === 'aei' ? previous.etag : undefined;
      const answer =
        credential.kind === 'api_key'
          ? await this.#client.keyConfig(credential.apiKey, flavor, etag)
          : credential.kind === 'oauth'
            ? await this.#client.grantConfig(credential, etag)
            : await this.#client.callerConfig(credential.personalKey, credential.caller, etag);
      if (answer.status === 'not-modified') {
        if (!previous)
          throw new ControlPlaneError(
            'control plane answered 304 to a lookup without an ETag',
            'error-answer',
          );
        this.#metrics.cache.inc({ result: 'revalidated' });
        if (current()) this.#store(hash, { ...previous, fetchedAt: this.#now() });
        return { exposure: previous.exposure, stale: false };
      }
      this.#metrics.cache.inc({ result: 'miss' });
      if (answer.status === 'unknown') {
        spent = counted;
        // Lookups already in flight when the bucket ran dry are charged too (as debt, repaid
        // before the next one goes out), so the cap holds over time.
        if (counted) this.#lookups.charge('all', this.#now());
        if (previous && current()) this.#entries.delete(hash);
        if (current())
          this.#unknown.set(hash, { fetchedAt: this.#now(), flavor: flavor === 'v1' ? 'v1' : 'all' });
        this.#gauge();
        return { exposure: { kind: 'unknown' }, stale: false };
      }
      const exposure: KnownExposure =
        answer.status === 'aei'
          ? {
              kind: 'aei',
              config: answer.config,
              ...(answer.caller && { caller: answer.caller }),
              ...(answer.playground && { playground: answer.playground }),
            }
          : { kind: 'legacy', config: answer.config };
      if (current()) this.#unknown.delete(hash);
      if (current())
        this.#store(hash, {
          exposure,
          etag: answer.status === 'aei' ? answer.etag : undefined,
          fetchedAt: this.#now(),
          // An entry larger than the whole budget is still kept (alone), rather than fetched again
          // on every request.
          bytes: Math.min(estimatedBytes(answer.bytes), this.#options.maxBytes),
        });
      return { exposure, stale: false };
    } catch (error) {
      if (previous) {
        this.#metrics.cache.inc({ result: 'stale' });
        // While the breaker is open nothing is sent and every request lands here: one line per
        // real failure is enough.
        const level = error instanceof CircuitOpenError ? 'debug' : 'warn';
        this.#log[level](
          { err: (error as Error).message },
          'control plane unavailable: serving the last good config (stale-if-error)',
        );
        return { exposure: previous.exposure, stale: true };
      }
      throw error;
    } finally {
      if (counted && !spent) this.#lookupsByAddress.refund(addressKey);
    }
  }

  #store(hash: string, entry: Entry): void {
    this.#hashOf.set(entry.exposure, hash);
    // Replacing an entry disposes the old one, which unindexes it.
    this.#entries.set(hash, entry);
    // lru-cache refuses an entry over its size budget; only index what it kept.
    if (this.#entries.peek(hash) === entry) this.#index(entry, hash);
    this.#gauge();
  }

  /**
   * Adds `bytes` kept for `exposure` (its tools/list pages, built from it on first use and dropped
   * with it) to its entry's size, so they count in CONFIG_CACHE_MAX_BYTES; may evict other
   * entries. Nothing happens when the exposure is no longer the cached one (replaced or dropped
   * while a request still held it): what was built from it goes with it.
   */
  charge(exposure: Exposure, bytes: number): void {
    if (exposure.kind === 'unknown') return;
    const hash = this.#hashOf.get(exposure);
    const entry = hash === undefined ? undefined : this.#entries.peek(hash);
    if (hash === undefined || entry?.exposure !== exposure) return;
    // A new entry object: lru-cache resizes an entry only when its value changes. Capped like a
    // new entry: one over the whole budget is kept alone rather than dropped.
    this.#store(hash, { ...entry, bytes: Math.min(entry.bytes + bytes, this.#options.maxBytes) });
  }

  #gauge(): void {
    this.#metrics.cacheEntries.set(this.#entries.size);
    this.#metrics.cacheBytes.set(this.#entries.calculatedSize);
  }

  /**
   * Drops cached entries; answers the AEI ids whose entries were dropped (or named), so their
   * open sessions can be told the tool list changed.
   */
  invalidate(target: { aeiIds?: readonly string[]; apiKeys?: readonly string[]; all?: boolean }): string[] {
    // A message naming nothing (one of a newer control plane whose members this gateway does not
    // know, say) changes nothing: it must not cost the lookups in flight.
    if (!target.all && !target.aeiIds?.length && !target.apiKeys?.length) return [];
    // Lookups in flight may answer with the config from before the change: none of them is cached
    // or joined from now on (cheap: invalidations are rare, and a dropped lookup is sent again).
    this.#generation += 1;
    this.#inFlight.clear();
    const affected = new Set<string>(target.aeiIds ?? []);
    if (target.all) {
      for (const id of this.#byAei.keys()) affected.add(id);
      this.#entries.clear();
      this.#unknown.clear();
      this.#gauge();
      return [...affected];
    }
    for (const id of target.aeiIds ?? []) {
      for (const hash of [...(this.#byAei.get(id) ?? [])]) this.#entries.delete(hash);
    }
    for (const apiKey of target.apiKeys ?? []) {
      const hash = keyHash(apiKey);
      const entry = this.#entries.get(hash);
      if (entry?.exposure.kind === 'aei') affected.add(entry.exposure.config.aei.id);
      this.#entries.delete(hash);
      this.#unknown.delete(hash);
    }
    this.#gauge();
    return [...affected];
  }

  get size(): number {
    return this.#entries.size;
  }
}
