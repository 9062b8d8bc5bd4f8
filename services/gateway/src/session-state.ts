/**
 * Per-session state of progressive exposures: the chosen app and a cache of catalog answers,
 * stamped with the config version they were built from (a new version drops them). Kept in this
 * process, or in Redis when REDIS_URL is set so a session survives being served by another replica.
 * Entries expire after a TTL (1 hour by default).
 */
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import { createClient } from 'redis';
import type { ApiSummary, Category } from './catalog.ts';

export interface SessionState {
  app_id: string;
  /** Catalog answers for `app_id`, valid for config `version` only. */
  catalog?: { version: number; app_id: string; categories?: Category[]; apis: Record<string, ApiSummary[]> };
}

export interface SessionStateStore {
  get(sessionId: string): Promise<SessionState | undefined>;
  set(sessionId: string, state: SessionState): Promise<void>;
  close(): Promise<void>;
}

export class MemorySessionStore implements SessionStateStore {
  readonly #entries: LRUCache<string, SessionState>;

  constructor(ttlMs: number, max = 100_000) {
    this.#entries = new LRUCache<string, SessionState>({ max, ttl: ttlMs });
  }

  async get(sessionId: string) {
    return this.#entries.get(sessionId);
  }

  async set(sessionId: string, state: SessionState) {
    this.#entries.set(sessionId, state);
  }

  async close() {
    this.#entries.clear();
  }
}

const PREFIX = 'bindery:session:';
const newClient = (url: string) => createClient({ url });
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
