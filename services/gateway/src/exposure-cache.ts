/**
 * What each api_key exposes, cached by the key's SHA-256 in a bounded LRU: config v2 of an AEI, a
 * legacy v1 instance's config, or "unknown" (negative-cached briefly). Fresh entries answer without
 * any call; after the TTL an AEI's entry is revalidated with its ETag (a 304 costs no body); at most
 * one fetch per key is in flight; when the control plane fails, the last good entry is served
 * (stale-if-error) and counted. Invalidation drops entries by api_key, AEI id, or all.
 */
import { hash as digest } from 'node:crypto';
import type { ConfigV2, LegacyConfig } from '@bindery/contracts';
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { ControlPlaneClient } from './control-plane-client.ts';
import type { GatewayMetrics } from './metrics.ts';

export type Exposure =
  { kind: 'aei'; config: ConfigV2 } | { kind: 'legacy'; config: LegacyConfig } | { kind: 'unknown' };

interface Entry {
  exposure: Exposure;
  etag: string | undefined;
  fetchedAt: number;
}

export interface CacheOptions {
  maxEntries: number;
  ttlMs: number;
  negativeTtlMs: number;
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
  readonly #inFlight = new Map<string, Promise<Resolved>>();
  /** AEI id -> hashes of keys cached for it (a rotated key leaves two for a while). */
  readonly #byAei = new Map<string, Set<string>>();
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
    this.#entries = new LRUCache<string, Entry>({
      max: options.maxEntries,
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

  #fresh(entry: Entry): boolean {
    const ttl = entry.exposure.kind === 'unknown' ? this.#options.negativeTtlMs : this.#options.ttlMs;
    return this.#now() - entry.fetchedAt < ttl;
  }

  /**
   * The exposure cached for this key hash when it is fresh and known, without any call and without
   * counting; undefined otherwise (then `resolve` decides).
   */
  peek(hash: string): Exposure | undefined {
    const entry = this.#entries.get(hash);
    if (!entry || entry.exposure.kind === 'unknown' || !this.#fresh(entry)) return undefined;
    return entry.exposure;
  }

  /** What `apiKey` exposes now: from the cache when fresh, else from the control plane. */
  async resolve(apiKey: string, hash = keyHash(apiKey)): Promise<Resolved> {
    const entry = this.#entries.get(hash);
    if (entry && this.#fresh(entry)) {
      this.#metrics.cache.inc({ result: entry.exposure.kind === 'unknown' ? 'negative' : 'hit' });
      return { exposure: entry.exposure, stale: false };
    }
    const pending = this.#inFlight.get(hash);
    if (pending) return pending;
    const fetching = this.#fetch(apiKey, hash, entry).finally(() => this.#inFlight.delete(hash));
    this.#inFlight.set(hash, fetching);
    return fetching;
  }

  async #fetch(apiKey: string, hash: string, previous: Entry | undefined): Promise<Resolved> {
    try {
      const etag = previous?.exposure.kind === 'aei' ? previous.etag : undefined;
      const answer = await this.#client.config(apiKey, etag);
      if (answer.status === 'not-modified' && previous) {
        this.#metrics.cache.inc({ result: 'revalidated' });
        this.#store(hash, { ...previous, fetchedAt: this.#now() });
        return { exposure: previous.exposure, stale: false };
      }
      this.#metrics.cache.inc({ result: 'miss' });
      let exposure: Exposure = { kind: 'unknown' };
      let newEtag: string | undefined;
      if (answer.status === 'ok') {
        exposure = { kind: 'aei', config: answer.config };
        newEtag = answer.etag;
      } else {
        const legacy = await this.#client.legacyConfig(apiKey);
        if (legacy.status === 'ok') exposure = { kind: 'legacy', config: legacy.config };
      }
      this.#store(hash, { exposure, etag: newEtag, fetchedAt: this.#now() });
      return { exposure, stale: false };
    } catch (error) {
      if (previous && previous.exposure.kind !== 'unknown') {
        this.#metrics.cache.inc({ result: 'stale' });
        this.#log.warn(
          { err: (error as Error).message },
          'control plane unavailable: serving the last good config (stale-if-error)',
        );
        return { exposure: previous.exposure, stale: true };
      }
      throw error;
    }
  }

  #store(hash: string, entry: Entry): void {
    // Replacing an entry disposes the old one, which unindexes it.
    this.#entries.set(hash, entry);
    this.#index(entry, hash);
  }

  /**
   * Drops cached entries; answers the AEI ids whose entries were dropped (or named), so their
   * open sessions can be told the tool list changed.
   */
  invalidate(target: { aeiIds?: readonly string[]; apiKeys?: readonly string[]; all?: boolean }): string[] {
    const affected = new Set<string>(target.aeiIds ?? []);
    if (target.all) {
      for (const id of this.#byAei.keys()) affected.add(id);
      this.#entries.clear();
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
    }
    return [...affected];
  }

  get size(): number {
    return this.#entries.size;
  }
}
