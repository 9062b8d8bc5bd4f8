/**
 * Per-session state of progressive exposures: the chosen app and a cache of catalog answers,
 * stamped with the config version they were built from (a new version drops them). Kept in this
 * process, or in Redis when REDIS_URL is set so a session survives being served by another replica.
 * Entries expire after a TTL (1 hour by default).
 */
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import { createRedisClient } from '@bindery/service-kit';
import type { ApiSummary, Category } from './catalog.ts';

export interface SessionState {
  app_id: string;
  /** Catalog answers for `app_id`, valid for config `version` only. */
  catalog?: {
    version: number;
    /** The AEI the answers are of: a caller entry's session may be remapped to another profile. */
    aei_id?: string;
    app_id: string;
    categories?: Category[];
    apis: Record<string, ApiSummary[]>;
  };
}

export interface SessionStateStore {
  get(sessionId: string): Promise<SessionState | undefined>;
  set(sessionId: string, state: SessionState): Promise<void>;
  close(): Promise<void>;
}

/**
 * Heap bytes of a state, estimated from its JSON size (twice it, as for cached configs, plus the
 * entry itself). Measured when it is stored, which happens when an answer is added to it, not per
 * request.
 */
function stateBytes(sessionId: string, state: SessionState): number {
  return 2 * (sessionId.length + JSON.stringify(state).length) + 256;
}

/**
 * States in this process: an LRU bounded by entries and by estimated bytes, each state expiring
 * after the TTL. A state holds catalog answers for one app, so its size follows the catalog; the
 * byte bound keeps many sessions of a large catalog from growing the heap without limit.
 */
export class MemorySessionStore implements SessionStateStore {
  readonly #entries: LRUCache<string, SessionState>;
  readonly #maxBytes: number;

  constructor(ttlMs: number, maxBytes: number, max = 100_000) {
    this.#maxBytes = maxBytes;
    this.#entries = new LRUCache<string, SessionState>({ max, ttl: ttlMs, maxSize: maxBytes });
  }

  async get(sessionId: string) {
    return this.#entries.get(sessionId);
  }

  async set(sessionId: string, state: SessionState) {
    const size = stateBytes(sessionId, state);
    if (size <= this.#maxBytes) {
      this.#entries.set(sessionId, state, { size });
      return;
    }
    // Larger than the whole budget: keep the chosen app and drop the catalog answers, which are a
    // cache (they are built again from the config when asked).
    const bare = { app_id: state.app_id };
    this.#entries.set(sessionId, bare, { size: stateBytes(sessionId, bare) });
  }

  /** Estimated bytes of all states kept. */
  get bytes(): number {
    return this.#entries.calculatedSize;
  }

  async close() {
    this.#entries.clear();
  }
}

const PREFIX = 'bindery:session:';
const newClient = (url: string) => createRedisClient({ url });
type RedisClient = ReturnType<typeof newClient>;

export class RedisSessionStore implements SessionStateStore {
  readonly #client: RedisClient;
  readonly #ttlSeconds: number;

  private constructor(client: RedisClient, ttlMs: number) {
    this.#client = client;
    this.#ttlSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
  }

  static async connect(url: string, ttlMs: number, log: FastifyBaseLogger): Promise<RedisSessionStore> {
    const client = newClient(url);
    client.on('error', (error: unknown) =>
      log.warn({ err: error }, 'redis session store error (reconnecting)'),
    );
    await client.connect();
    return new RedisSessionStore(client, ttlMs);
  }

  async get(sessionId: string) {
    const raw = await this.#client.get(PREFIX + sessionId);
    return raw === null ? undefined : (JSON.parse(raw) as SessionState);
  }

  async set(sessionId: string, state: SessionState) {
    await this.#client.set(PREFIX + sessionId, JSON.stringify(state), { EX: this.#ttlSeconds });
  }

  async close() {
    await this.#client.quit();
  }
}
