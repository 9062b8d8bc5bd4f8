/**
 * resources/subscribe and resources/unsubscribe: the URIs each session of this gateway subscribed
 * to, each mapped to the table of its binding's context, and `notifications/resources/updated`
 * when the control plane signals that a table's data changed (a tool's write through any gateway,
 * or the admin API), sent on the session's standing SSE stream (the GET it keeps open).
 *
 * A URI under the template (`…/context/customers/0`) maps to its binding's table as the whole
 * context does: any write to the table may have changed it, so it is notified too. The mapping is
 * looked up again when the AEI's config changes (a binding renamed or moved to another table); a
 * URI that names no resource any more keeps its place and is notified again if it comes back.
 *
 * A URI an attached upstream server serves (listed, or matching one of its templates) is watched
 * through the control plane instead (`POST /internal/aei/{id}/upstream-watch`, a lease this gateway
 * renews while any of its sessions subscribes): the control plane subscribes upstream and tells the
 * gateways of the server's `notifications/resources/updated` (`resource_updates`). A server that
 * offers no subscriptions is refused by name at subscribe.
 *
 * Best effort, at most once per table version: a signal is coalesced by the control plane (one
 * notification may stand for several writes) and signals for a version already notified (the same
 * change heard over HTTP and Redis) are dropped. Subscriptions live in this process: a session
 * that closes drops its own, and one served here statelessly cannot subscribe.
 */
import type { ServerResponse } from 'node:http';
import { UPSTREAM_WATCH_MAX_URIS, UPSTREAM_WATCH_TTL_MS, type UpstreamWatchAnswer } from '@bindery/contracts';
import type { ResourceUpdate, TableChange } from '@bindery/service-kit';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import { JSONRPC } from '../http/jsonrpc-errors.ts';
import { parseResourceUri, upstreamResource } from './resources.ts';
import { WireError } from './wire-error.ts';

/** An upstream resource's updates this close together are one change heard twice. */
const REPEAT_WINDOW_MS = 250;

/** Subscriptions one session may hold. */
export const MAX_SUBSCRIPTIONS_PER_SESSION = 100;

interface Subscriber {
  aeiId: string | undefined;
  /** The session's exposure as it is now (for mapping URIs again after a config change). */
  exposure(): Promise<Exposure>;
  /** Sends notifications/resources/updated for `uri` on the session's standing stream. */
  notify(uri: string): Promise<void>;
  /** Subscribed URIs and the table each names now (undefined: no resource of the exposure now). */
  uris: Map<string, string | undefined>;
  /** Mappings started; only the latest one's answer counts. */
  mapping: number;
  /** URIs changed while the client was not reading its stream: sent once it drains (at most one each). */
  pending: Set<string>;
}

interface Watched {
  sessions: Set<string>;
  /** The highest version notified: a signal for it or an older one is a duplicate. */
  version: number | undefined;
}

export interface SubscribeRequest {
  /** The session's id, undefined when the request is served without a session of this replica. */
  sessionId: string | undefined;
  uri: string;
  exposure: Exposure;
  resolve(): Promise<Exposure>;
  notify(uri: string): Promise<void>;
}

/** Asks the control plane to watch upstream resources (UpstreamWatchBody), and renews it. */
export type UpstreamWatcher = (
  aeiId: string,
  serverId: string,
  uris: string[],
) => Promise<UpstreamWatchAnswer>;

/** The key an upstream resource is watched under, beside table ids (which never hold a NUL). */
const upstreamKey = (serverId: string, uri: string) => `upstream\u0000${serverId}\u0000${uri}`;

/**
 * What a URI is watched by: its binding's table, or its upstream server's key; undefined when the
 * URI names no resource of `exposure`.
 */
function tableOf(exposure: Exposure, uri: string): string | undefined {
  const upstream = upstreamResource(exposure, uri);
  if (upstream) return upstreamKey(upstream.upstream_server_id, uri);
  try {
    return parseResourceUri(exposure, uri).binding.adi_ref.table_id;
  } catch {
    return undefined;
  }
}

export class ResourceSubscriptions {
  readonly #sessions = new Map<string, Subscriber>();
  readonly #byTable = new Map<string, Watched>();
  readonly #log: FastifyBaseLogger;
  /** Whether this replica holds the session (a subscription of a closed one would never be dropped). */
  readonly #held: (sessionId: string) => boolean;

  /** The session's open GET stream, where its notifications go. */
  readonly #stream: (sessionId: string) => ServerResponse | undefined;
  /** The upstream resources watched, by key: whose (renewed for the AEIs of the sessions watching). */
  readonly #upstream = new Map<string, { serverId: string; uri: string }>();
  /** When each upstream resource was last notified: repeats of one change (HTTP and Redis) are dropped. */
  readonly #notifiedAt = new Map<string, number>();
  /** Updates that came within the window of the last one sent, to go at its end (one each). */
  readonly #trailing = new Map<string, NodeJS.Timeout>();
  #watcher: UpstreamWatcher | undefined;
  #renewal: NodeJS.Timeout | undefined;

  constructor(
    log: FastifyBaseLogger,
    held: (sessionId: string) => boolean,
    stream: (sessionId: string) => ServerResponse | undefined = () => undefined,
  ) {
    this.#log = log;
    this.#held = held;
    this.#stream = stream;
  }

  /** Where upstream resources are watched (set by the app; without it they cannot be subscribed to). */
  set watcher(watcher: UpstreamWatcher) {
    this.#watcher = watcher;
  }

  /**
   * resources/subscribe: -32002 for a URI naming no resource, -32602 for a bad one or over the cap.
   * For an upstream's resource, the answer is the control plane's first watch (a promise that
   * rejects, the subscription dropped, when the server offers no subscriptions); undefined
   * otherwise.
   */
  subscribe(request: SubscribeRequest): Promise<void> | undefined {
    const { sessionId, uri, exposure } = request;
    if (sessionId === undefined || !this.#held(sessionId)) {
      throw new WireError(
        JSONRPC.UNAUTHORIZED,
        'resources/subscribe needs a session this gateway holds (this one ended, or is held by another gateway); ' +
          'send initialize without a session id and subscribe in the new session',
        { code: 'NOT_FOUND' },
      );
    }
    const upstream = exposure.kind === 'aei' ? upstreamResource(exposure, uri) : undefined;
    // The same errors resources/read answers for the URI.
    const tableId = upstream
      ? upstreamKey(upstream.upstream_server_id, uri)
      : parseResourceUri(exposure, uri).binding.adi_ref.table_id;
    let subscriber = this.#sessions.get(sessionId);
    if (subscriber?.uris.has(uri)) {
      // Subscribed again: the URI is mapped by this fresh reading (a change may have raced the first).
      const before = subscriber.uris.get(uri);
      if (before === tableId) return undefined;
      subscriber.uris.set(uri, tableId);
      if (before !== undefined) this.#unwatchIfUnused(before, sessionId, subscriber);
      this.#watch(tableId, sessionId);
      return undefined;
    }
    if ((subscriber?.uris.size ?? 0) >= MAX_SUBSCRIPTIONS_PER_SESSION) {
      throw new WireError(
        ErrorCode.InvalidParams,
        `a session subscribes to at most ${MAX_SUBSCRIPTIONS_PER_SESSION} resources; ` +
          'unsubscribe from one first (a subscription to a context covers every part of it)',
        { limit: MAX_SUBSCRIPTIONS_PER_SESSION },
      );
    }
    if (!subscriber) {
      subscriber = {
        aeiId: exposure.kind === 'aei' ? exposure.config.aei.id : undefined,
        exposure: request.resolve,
        notify: request.notify,
        uris: new Map(),
        mapping: 0,
        pending: new Set(),
      };
      this.#sessions.set(sessionId, subscriber);
    }
    subscriber.uris.set(uri, tableId);
    this.#watch(tableId, sessionId);
    if (!upstream || exposure.kind !== 'aei') return undefined;
    return this.#firstWatch(exposure.config.aei.id, upstream.upstream_server_id, uri).catch(
      (error: unknown) => {
        this.unsubscribe(sessionId, uri);
        throw error;
      },
    );
  }

  /** The control plane's watch of one upstream URI: resolves once watched, rejects with why not. */
  async #firstWatch(aeiId: string, serverId: string, uri: string): Promise<void> {
    if (!this.#watcher) {
      throw new WireError(ErrorCode.InvalidParams, 'this gateway cannot follow upstream resources', {
        uri: uri.slice(0, 200),
      });
    }
    let answer: UpstreamWatchAnswer;
    try {
      answer = await this.#watcher(aeiId, serverId, [uri]);
    } catch (error) {
      throw new WireError(
        JSONRPC.UNAVAILABLE,
        `the control plane did not take the subscription: ${error instanceof Error ? error.message : String(error)}`,
        { code: 'UPSTREAM_FAILED' },
      );
    }
    const refused = answer.refused.find((r) => r.uri === uri);
    if (refused) {
      throw new WireError(
        refused.code === 'NOT_FOUND' ? JSONRPC.RESOURCE_NOT_FOUND : ErrorCode.InvalidParams,
        `${uri.slice(0, 200)}: ${refused.message}`,
        { code: refused.code, uri: uri.slice(0, 200) },
      );
    }
  }

  /** Renews every upstream watch this gateway holds (each AEI and server, in bounded requests). */
  async #renew(): Promise<void> {
    const groups = new Map<string, { aeiId: string; serverId: string; uris: string[] }>();
    for (const [key, { serverId, uri }] of this.#upstream) {
      // The AEIs of the sessions watching it now (one whose sessions left is not renewed for).
      const aeiIds = new Set<string>();
      for (const sessionId of this.#byTable.get(key)?.sessions ?? []) {
        const aeiId = this.#sessions.get(sessionId)?.aeiId;
        if (aeiId !== undefined) aeiIds.add(aeiId);
      }
      for (const aeiId of aeiIds) {
        const key = `${aeiId}\u0000${serverId}`;
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { aeiId, serverId, uris: [] }));
        group.uris.push(uri);
      }
    }
    for (const { aeiId, serverId, uris } of groups.values()) {
      for (let i = 0; i < uris.length; i += UPSTREAM_WATCH_MAX_URIS) {
        try {
          const answer = await this.#watcher?.(aeiId, serverId, uris.slice(i, i + UPSTREAM_WATCH_MAX_URIS));
          for (const refused of answer?.refused ?? []) {
            // The exposure changed (the server detached, the resource gone): its sessions hear no
            // more of it until they subscribe again.
            this.#log.info(
              {
                aei_id: aeiId,
                upstream_server_id: serverId,
                uri: refused.uri.slice(0, 200),
                reason: refused.message,
              },
              'upstream resource watch not renewed',
            );
          }
        } catch (error) {
          this.#log.debug(
            { err: error, aei_id: aeiId },
            'upstream watch not renewed; retried at the next round',
          );
        }
      }
    }
  }

  /**
   * The control plane's signal that upstream resources changed: resources/updated for every
   * session subscribed to them (without waiting for delivery); answers how many were sent.
   */
  upstreamUpdated(updates: readonly ResourceUpdate[]): number {
    let sent = 0;
    const now = Date.now();
    for (const { upstream_server_id: serverId, uri } of updates) {
      const key = upstreamKey(serverId, uri);
      const watched = this.#byTable.get(key);
      if (!watched) continue;
      // The same change heard twice (HTTP and Redis, or two control planes watching) goes once; a
      // change within the window after one sent goes at the window's end.
      const since = now - (this.#notifiedAt.get(key) ?? -Infinity);
      if (since < REPEAT_WINDOW_MS) {
        if (!this.#trailing.has(key)) {
          const timer = setTimeout(() => {
            this.#trailing.delete(key);
            this.upstreamUpdated([{ upstream_server_id: serverId, uri }]);
          }, REPEAT_WINDOW_MS - since);
          timer.unref();
          this.#trailing.set(key, timer);
        }
        continue;
      }
      this.#notifiedAt.set(key, now);
      for (const sessionId of watched.sessions) {
        const subscriber = this.#sessions.get(sessionId);
        if (subscriber?.uris.get(uri) === key && this.#send(sessionId, subscriber, uri)) sent += 1;
      }
    }
    return sent;
  }

  /** resources/unsubscribe: drops the URI if the session subscribed to it (idempotent). */
  unsubscribe(sessionId: string | undefined, uri: string): void {
    if (sessionId === undefined) return;
    const subscriber = this.#sessions.get(sessionId);
    if (!subscriber?.uris.has(uri)) return;
    const tableId = subscriber.uris.get(uri);
    subscriber.uris.delete(uri);
    if (tableId !== undefined) this.#unwatchIfUnused(tableId, sessionId, subscriber);
    if (subscriber.uris.size === 0) this.#sessions.delete(sessionId);
  }

  /** A session closed: its subscriptions go with it. */
  drop(sessionId: string): void {
    const subscriber = this.#sessions.get(sessionId);
    if (!subscriber) return;
    this.#sessions.delete(sessionId);
    for (const tableId of new Set(subscriber.uris.values())) {
      if (tableId !== undefined) this.#unwatch(tableId, sessionId);
    }
  }

  /** How many URIs the session subscribed to. */
  count(sessionId: string): number {
    return this.#sessions.get(sessionId)?.uris.size ?? 0;
  }

  /**
   * The control plane's signal: sends resources/updated for every subscribed URI of these tables
   * (without waiting for delivery); answers how many were sent.
   */
  tablesChanged(changes: readonly TableChange[]): number {
    let sent = 0;
    for (const { table_id: tableId, version } of changes) {
      const watched = this.#byTable.get(tableId);
      if (!watched) continue;
      if (watched.version !== undefined && version <= watched.version) continue;
      watched.version = version;
      for (const sessionId of watched.sessions) {
        const subscriber = this.#sessions.get(sessionId);
        if (!subscriber) continue;
        for (const [uri, table] of subscriber.uris) {
          if (table !== tableId) continue;
          if (this.#send(sessionId, subscriber, uri)) sent += 1;
        }
      }
    }
    return sent;
  }

  /**
   * Sends resources/updated for `uri`, unless the client is not reading its stream (its socket
   * needs to drain): then the URI waits, once however often it changes, and goes when it drains.
   * So a client that never reads holds at most one pending mark per subscription, never a queue.
   */
  #send(sessionId: string, subscriber: Subscriber, uri: string): boolean {
    const stream = this.#stream(sessionId);
    if (stream?.writableNeedDrain) {
      if (subscriber.pending.size === 0) stream.once('drain', () => this.#flush(sessionId, subscriber));
      subscriber.pending.add(uri);
      return false;
    }
    subscriber
      .notify(uri)
      .catch((error: unknown) =>
        this.#log.debug({ err: error, session: sessionId, uri }, 'resources/updated not delivered'),
      );
    return true;
  }

  #flush(sessionId: string, subscriber: Subscriber): void {
    const uris = [...subscriber.pending];
    subscriber.pending.clear();
    // The session may have closed or unsubscribed meanwhile.
    if (this.#sessions.get(sessionId) !== subscriber) return;
    for (const uri of uris) if (subscriber.uris.has(uri)) this.#send(sessionId, subscriber, uri);
  }

  /**
   * The config of these AEIs changed: the subscribed URIs of their sessions are mapped to tables
   * again (a binding may have been renamed or moved to another table). Never rejects.
   */
  async exposuresChanged(aeiIds: readonly string[]): Promise<void> {
    const wanted = new Set(aeiIds);
    const remaps = [...this.#sessions]
      .filter(([, s]) => s.aeiId !== undefined && wanted.has(s.aeiId))
      .map(([sessionId, s]) => this.#remap(sessionId, s));
    await Promise.all(remaps);
  }

  async #remap(sessionId: string, subscriber: Subscriber): Promise<void> {
    const mine = ++subscriber.mapping;
    let exposure: Exposure | undefined;
    try {
      exposure = await subscriber.exposure();
    } catch (error) {
      // A key revoked or an exposure gone or disabled: its URIs name nothing now.
      this.#log.debug({ err: error, session: sessionId }, 'subscriptions not mapped again: no config');
      exposure = undefined;
    }
    // A newer mapping is under way, or the session closed meanwhile.
    if (mine !== subscriber.mapping || this.#sessions.get(sessionId) !== subscriber) return;
    for (const [uri, before] of subscriber.uris) {
      const now = exposure && tableOf(exposure, uri);
      if (now === before) continue;
      subscriber.uris.set(uri, now);
      if (before !== undefined) this.#unwatchIfUnused(before, sessionId, subscriber);
      if (now !== undefined) this.#watch(now, sessionId);
    }
  }

  #watch(tableId: string, sessionId: string): void {
    let watched = this.#byTable.get(tableId);
    if (!watched) this.#byTable.set(tableId, (watched = { sessions: new Set(), version: undefined }));
    watched.sessions.add(sessionId);
    const aeiId = this.#sessions.get(sessionId)?.aeiId;
    if (tableId.startsWith('upstream\u0000') && aeiId !== undefined) {
      if (!this.#upstream.has(tableId)) {
        const [, serverId = '', ...rest] = tableId.split('\u0000');
        this.#upstream.set(tableId, { serverId, uri: rest.join('\u0000') });
      }
      if (this.#renewal === undefined) {
        // Renewed at half the lease, so one missed renewal does not end it.
        this.#renewal = setInterval(() => void this.#renew(), UPSTREAM_WATCH_TTL_MS / 2);
        this.#renewal.unref();
      }
    }
  }

  #unwatchIfUnused(tableId: string, sessionId: string, subscriber: Subscriber): void {
    for (const table of subscriber.uris.values()) if (table === tableId) return;
    this.#unwatch(tableId, sessionId);
  }

  #unwatch(tableId: string, sessionId: string): void {
    const watched = this.#byTable.get(tableId);
    if (!watched) return;
    watched.sessions.delete(sessionId);
    if (watched.sessions.size > 0) return;
    this.#byTable.delete(tableId);
    // Not renewed any more: the control plane's lease ends by itself.
    this.#upstream.delete(tableId);
    this.#notifiedAt.delete(tableId);
    clearTimeout(this.#trailing.get(tableId));
    this.#trailing.delete(tableId);
    if (this.#upstream.size === 0 && this.#renewal !== undefined) {
      clearInterval(this.#renewal);
      this.#renewal = undefined;
    }
  }

  /** Every session's subscriptions dropped (the gateway is closing). */
  clear(): void {
    this.#sessions.clear();
    this.#byTable.clear();
    this.#upstream.clear();
    this.#notifiedAt.clear();
    for (const timer of this.#trailing.values()) clearTimeout(timer);
    this.#trailing.clear();
    clearInterval(this.#renewal);
    this.#renewal = undefined;
  }
}
