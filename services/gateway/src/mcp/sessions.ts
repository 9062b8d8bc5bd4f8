/**
 * Open MCP sessions of this gateway, each bound to the api_key that opened it. Sessions live in
 * this process (their SSE streams do); a request for a session this replica does not know is
 * served statelessly by the routes instead.
 *
 * Memory is bounded: at most `max` sessions in all and `maxPerKey` per api_key. A new session that
 * would pass a cap first closes the least recently used idle session (of that key for the per-key
 * cap, of any key otherwise); when every one of them is busy answering a request, the initialize
 * is refused. Idle sessions also close after `idleMs`. A closed session's id is then one this
 * replica does not hold: its streams (GET) get 404 and its messages are served statelessly.
 * A session's resource subscriptions (`subscriptions`) end with it.
 */
import type { ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyBaseLogger } from 'fastify';
import { JSONRPC, type JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';
import type { RequestIds } from './request-ids.ts';
import { ListenStreams } from './modern/listen.ts';
import { ResourceSubscriptions } from './resource-subscriptions.ts';
import type { McpEndpoint } from './server.ts';
import type { GatewayMetrics } from '../metrics.ts';

export interface Session {
  id: string;
  keyHash: string;
  /**
   * The AEI this session serves; undefined for a legacy v1 instance not migrated yet. A caller
   * entry's session follows its caller's mapping: updated when a request finds another profile.
   */
  aeiId: string | undefined;
  /** The caller a caller entry's session speaks for (undefined: an api_key session, or none given). */
  caller?: string | undefined;
  server: Server;
  /** The session's handlers, for the routes' fast path. */
  endpoint: McpEndpoint;
  transport: StreamableHTTPServerTransport;
  /** Ids of the requests in flight through the SDK transport. */
  requestIds: RequestIds;
  lastSeen: number;
  /** Requests of this session being answered now (any path); a busy session is never closed for room. */
  busy: number;
  /**
   * The tools/call requests answered by the direct path now, by JSON-RPC id: a client's
   * notifications/cancelled aborts them (the SDK only knows the requests it handles itself).
   */
  directCalls?: Map<string, AbortController>;
  /** The response of the session's open GET stream, if any: whether its client keeps up reading. */
  standing?: ServerResponse | undefined;
}

export interface SessionLimits {
  max: number;
  maxPerKey: number;
  idleMs: number;
}

/** Room for one new session, held from the initialize request until the session exists. */
export interface Reservation {
  /** Gives the room back (idempotent): call it once the session is registered, or the request ended. */
  release(): void;
}

/** Session ids ended by their clients that a replica remembers (a bounded, recent list). */
const MAX_ENDED = 10_000;
const ENDED_TTL_MS = 60 * 60_000;

export class SessionRegistry {
  /** In least-recently-used order: `get` moves a session to the end. */
  readonly #sessions = new Map<string, Session>();
  /** The same sessions by key hash, each map in least-recently-used order too. */
  readonly #byKey = new Map<string, Map<string, Session>>();
  /** Initialize requests holding room for a session that does not exist yet. */
  #reserved = 0;
  readonly #reservedByKey = new Map<string, number>();
  readonly #metrics: GatewayMetrics;
  readonly #log: FastifyBaseLogger;
  readonly #limits: SessionLimits;
  readonly #sweeper: NodeJS.Timeout;
  #lastSweepAt = 0;
  /** The resources each open session (or listen stream) subscribed to. */
  readonly subscriptions: ResourceSubscriptions;
  /** The modern era's open `subscriptions/listen` streams (held like sessions, under the same caps). */
  readonly listens: ListenStreams;
  /**
   * Sessions their clients ended (DELETE) here, oldest first, with when: a later request naming
   * one is answered 404 (the client must initialize again), not served statelessly.
   */
  readonly #ended = new Map<string, number>();

  constructor(metrics: GatewayMetrics, log: FastifyBaseLogger, limits: SessionLimits) {
    this.#metrics = metrics;
    this.#log = log;
    this.#limits = limits;
    this.listens = new ListenStreams(log);
    this.subscriptions = new ResourceSubscriptions(
      log,
      (id) => this.#sessions.has(id) || this.listens.holds(id),
      (id) => this.#sessions.get(id)?.standing ?? this.listens.stream(id),
    );
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(limits.idleMs, 60_000));
    this.#sweeper.unref();
  }

  /**
   * Room for a new session of this key, closing the least recently used idle session when a cap
   * is reached; a refusal when a cap is reached and all the sessions under it are busy.
   */
  reserve(keyHash: string): Reservation | { refusal: JsonRpcErrorAnswer } {
    const ofKey = this.#byKey.get(keyHash);
    if ((ofKey?.size ?? 0) + (this.#reservedByKey.get(keyHash) ?? 0) >= this.#limits.maxPerKey) {
      if (!ofKey || !this.#closeIdle(ofKey, 'evicted_key')) {
        this.#metrics.sessionsRefused.inc({ cap: 'key' });
        return {
          refusal: full(
            `this api_key already has ${this.#limits.maxPerKey} sessions open on this gateway, all busy`,
          ),
        };
      }
    }
    if (this.#sessions.size + this.#reserved >= this.#limits.max) {
      if (!this.#closeIdle(this.#sessions, 'evicted_global')) {
        this.#metrics.sessionsRefused.inc({ cap: 'global' });
        return { refusal: full(`this gateway has ${this.#limits.max} sessions open, all busy`) };
      }
    }
    this.#reserved += 1;
    this.#reservedByKey.set(keyHash, (this.#reservedByKey.get(keyHash) ?? 0) + 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.#reserved -= 1;
        const left = (this.#reservedByKey.get(keyHash) ?? 1) - 1;
        if (left === 0) this.#reservedByKey.delete(keyHash);
        else this.#reservedByKey.set(keyHash, left);
      },
    };
  }

  /**
   * Room for a listen stream of this key: at most as many as sessions, per key and in all (a
   * stream is never closed to make room: it is in use as long as it is open).
   */
  listenRefusal(keyHash: string): JsonRpcErrorAnswer | undefined {
    if (this.listens.countOf(keyHash) >= this.#limits.maxPerKey) {
      this.#metrics.sessionsRefused.inc({ cap: 'key' });
      return full(`this api_key already has ${this.#limits.maxPerKey} listen streams open on this gateway`);
    }
    if (this.listens.size >= this.#limits.max) {
      this.#metrics.sessionsRefused.inc({ cap: 'global' });
      return full(`this gateway has ${this.#limits.max} listen streams open`);
    }
    return undefined;
  }

  /** Closes the least recently used session of `sessions` that is not busy; false when all are. */
  #closeIdle(sessions: Map<string, Session>, reason: 'evicted_key' | 'evicted_global'): boolean {
    for (const session of sessions.values()) {
      if (session.busy > 0) continue;
      this.#close(session, reason);
      return true;
    }
    return false;
  }

  #close(session: Session, reason: 'idle' | 'evicted_key' | 'evicted_global'): void {
    // Out of the registry now, so the room is free at once; the transport closes its streams.
    this.remove(session.id);
    this.#metrics.sessionsClosed.inc({ reason });
    this.#log.debug({ session: session.id, reason }, 'session closed by the gateway');
    void session.transport
      .close()
      .catch((error: unknown) =>
        this.#log.debug({ err: error, session: session.id }, 'session transport did not close cleanly'),
      );
  }

  add(session: Session): void {
    this.#sessions.set(session.id, session);
    let ofKey = this.#byKey.get(session.keyHash);
    if (!ofKey) this.#byKey.set(session.keyHash, (ofKey = new Map()));
    ofKey.set(session.id, session);
    this.#metrics.sessions.set(this.#sessions.size);
  }

  remove(id: string): void {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    this.subscriptions.drop(id);
    const ofKey = this.#byKey.get(session.keyHash);
    ofKey?.delete(id);
    if (ofKey?.size === 0) this.#byKey.delete(session.keyHash);
    this.#metrics.sessions.set(this.#sessions.size);
  }

  /** Remembers that the client of session `id` ended it (MAX_ENDED at most, for ENDED_TTL_MS). */
  markEnded(id: string): void {
    this.#ended.delete(id);
    this.#ended.set(id, Date.now());
    for (const [oldest, at] of this.#ended) {
      if (this.#ended.size <= MAX_ENDED && at > Date.now() - ENDED_TTL_MS) break;
      this.#ended.delete(oldest);
    }
  }

  /** True when the client of session `id` ended it here lately (markEnded). */
  wasEnded(id: string): boolean {
    const at = this.#ended.get(id);
    return at !== undefined && at > Date.now() - ENDED_TTL_MS;
  }

  /** The session with this id, if this replica holds it, without marking it used (to inspect it). */
  peek(id: string): Readonly<Session> | undefined {
    return this.#sessions.get(id);
  }

  /**
   * When the idle sweep last ran (`Date.now()`; 0 before the first): every session idle since
   * `lastSweepAt - idleMs` and not busy then has been closed.
   */
  get lastSweepAt(): number {
    return this.#lastSweepAt;
  }

  /** The session with this id, if this replica holds it and it belongs to this key; marks it used. */
  get(id: string, keyHash: string): Session | undefined {
    const session = this.#sessions.get(id);
    if (!session || session.keyHash !== keyHash) return undefined;
    this.#touch(session);
    return session;
  }

  #touch(session: Session): void {
    session.lastSeen = Date.now();
    // Re-inserting moves it to the end of both maps: the first entries are the least recently used.
    this.#sessions.delete(session.id);
    this.#sessions.set(session.id, session);
    const ofKey = this.#byKey.get(session.keyHash);
    if (ofKey) {
      ofKey.delete(session.id);
      ofKey.set(session.id, session);
    }
  }

  /** Marks `session` busy until `res` has closed (answered, or the client went away). */
  busyUntilClosed(session: Session, res: ServerResponse): void {
    session.busy += 1;
    res.once('close', () => {
      session.busy -= 1;
      // Idle time counts from the end of its last request, not from its start.
      if (this.#sessions.get(session.id) === session) this.#touch(session);
    });
  }

  /**
   * Tells every open session of these AEIs that its tool list changed (answers how many), and,
   * without waiting, those whose prompts or resources changed that those lists did: each session
   * compares the exposure as it is now (one config lookup per key, the cache shares it) with what
   * it last saw. Listen streams of these AEIs hear the same, as they asked (counted with the
   * sessions).
   */
  async announceToolListChanged(aeiIds: readonly string[]): Promise<number> {
    const wanted = new Set(aeiIds);
    const targets = [...this.#sessions.values()].filter((s) => s.aeiId !== undefined && wanted.has(s.aeiId));
    const undelivered = (s: Session) => (error: unknown) =>
      this.#log.debug({ err: error, session: s.id }, 'list_changed not delivered');
    await Promise.all(targets.map((s) => s.server.sendToolListChanged().catch(undelivered(s))));
    const listening = this.listens.announce(aeiIds);
    // A binding renamed or moved to another table changes what a subscribed URI watches.
    void this.subscriptions.exposuresChanged(aeiIds);
    for (const s of targets) {
      void s.endpoint
        .listsChanged()
        .then(async (changed) => {
          if (changed.prompts) await s.server.sendPromptListChanged();
          if (changed.resources) await s.server.sendResourceListChanged();
        })
        .catch(undelivered(s));
    }
    return targets.length + listening;
  }

  #sweep(): void {
    const now = Date.now();
    const cutoff = now - this.#limits.idleMs;
    // Least recently used first: stop at the first session seen since the cutoff.
    for (const session of [...this.#sessions.values()]) {
      if (session.lastSeen >= cutoff) break;
      if (session.busy === 0) this.#close(session, 'idle');
    }
    this.#lastSweepAt = now;
  }

  /**
   * Ends every session's standing SSE stream (the GET a client keeps open for notifications) with
   * a proper end of stream, leaving requests in flight to finish: the first step of a shutdown, as
   * an open stream would otherwise keep the server from closing. Clients reconnect elsewhere.
   */
  endStandingStreams(): void {
    for (const session of this.#sessions.values()) session.transport.closeStandaloneSSEStream();
    this.listens.endAll();
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    const all = [...this.#sessions.values()];
    for (const session of all) this.remove(session.id);
    this.listens.endAll();
    this.subscriptions.clear();
    await Promise.all(all.map((s) => s.transport.close()));
  }

  get size(): number {
    return this.#sessions.size;
  }
}

function full(message: string): JsonRpcErrorAnswer {
  return {
    status: 429,
    code: JSONRPC.RATE_LIMITED,
    message: `${message}; close a session or retry shortly`,
    bindery: 'RATE_LIMITED',
    headers: { 'retry-after': '1' },
  };
}
