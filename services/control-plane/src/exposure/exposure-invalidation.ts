/**
 * Exposure invalidation: when an AEI's config_version was bumped (after commit), tell every
 * gateway to drop its cached config, so agents see the change at once instead of after the cache
 * TTL. Two transports, both used when both are configured:
 * - HTTP: `POST {gateway}/cache/invalidate` with the ops token, to each of GATEWAY_URLS;
 * - Redis: `PUBLISH bindery:config-invalidate`, for gateways the control plane does not know by
 *   address (N gateways behind a load balancer).
 * The message is `{"aei_ids": [...]}` on both; on Redis it also asks every receiver to confirm
 * (`"ack": "<id>"`, confirmed on `bindery:config-invalidate:ack` once applied), and the delivery
 * is done when as many confirmations came as PUBLISH counted receivers: a gateway hears a publish
 * after Redis has it, across its own link, and only its confirmation says it dropped the old
 * config. Delivery is best effort: the admin change has committed already, so a failure is logged
 * (with the gateway or channel) and never thrown; the gateways' cache TTL bounds how long a missed
 * invalidation can matter.
 *
 * The same two channels carry tables' data changes, `{"table_changes": [{table_id, version}]}`,
 * which gateways turn into MCP resources/updated for subscribed sessions. Those are coalesced: at
 * most one message per `tableSignalWindowMs` (the first of a quiet period goes at once, the
 * changes meanwhile in one message at the end of the window, each table with its latest version),
 * and at most one message in flight per gateway (and for Redis), the changes made meanwhile
 * going in the next one. Nothing on a write's path waits for them.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ACK_CHANNEL,
  INVALIDATION_CHANNEL,
  MAX_TABLE_CHANGES,
  createRedisClient,
  detached,
} from '@bindery/service-kit';
import { Agent, request } from 'undici';
import type { ConfigChangeListener } from '../domain/context.ts';

export { INVALIDATION_CHANNEL };

/** The gateway route that drops cached configs; relative to each gateway base URL. */
export const INVALIDATION_PATH = '/cache/invalidate';

/** What the invalidation logs through: Fastify's (pino) logger fits, so does a test's collector. */
export interface InvalidationLog {
  debug(details: Record<string, unknown>, message: string): void;
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
}

export interface ExposureInvalidationOptions {
  /** Gateway base URLs, without a trailing slash. */
  gatewayUrls: readonly string[];
  /** Sent as `Authorization: Bearer`; required when gatewayUrls is not empty. */
  opsToken: string | undefined;
  redisUrl: string | undefined;
  log: InvalidationLog;
  /** Budget of one HTTP attempt or one PUBLISH (default 2 s). */
  timeoutMs?: number;
  /** Pause before the one retry of a failed HTTP attempt (default 100 ms). */
  retryDelayMs?: number;
  /** How long a change's answer waits for its deliveries (default 1 s); they go on after it. */
  announceWaitMs?: number;
  /** At most one table-changes message per this many ms (default 150); the last change is never dropped. */
  tableSignalWindowMs?: number;
}

/** Where table changes go (one gateway, or Redis), one message in flight at a time. */
interface TableSignalTarget {
  name: string;
  send(message: string, changes: number): Promise<boolean>;
  /** Changes waiting for the message in flight to finish: table id -> latest version. */
  backlog: Map<string, number>;
  /** Upstream resources that changed, waiting likewise (once each however often). */
  resources: Map<string, ResourceUpdate>;
  running: boolean;
  /** A failure was logged at warn and no delivery has succeeded since (one warning per outage). */
  failing: boolean;
}

/** An upstream server's resource that changed (a gateway watches it for its subscribers). */
export interface ResourceUpdate {
  upstream_server_id: string;
  uri: string;
}

/** A Redis client for publishing invalidations; it reconnects on its own until closed. */
function newRedisClient(url: string, timeoutMs: number) {
  return createRedisClient({
    url,
    // A PUBLISH while Redis is away fails at once rather than piling up until it is back:
    // an invalidation delivered minutes late is worth less than the TTL it races.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: timeoutMs,
      reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 5_000),
    },
  });
}

type RedisClient = ReturnType<typeof newRedisClient>;

type Attempt =
  { ok: true; status: number } | { ok: false; retryable: boolean; details: Record<string, unknown> };

/**
 * The control plane's ConfigChangeListener: fans each change out to the configured gateways and,
 * with REDIS_URL, to Redis. `configChanged` resolves when the change's deliveries are done (or
 * after a bound, see announceWaitMs); `settled()` waits for every delivery in flight; `close()` waits for them and releases the connections.
 */
export class ExposureInvalidation implements ConfigChangeListener {
  readonly #gatewayUrls: readonly string[];
  readonly #opsToken: string | undefined;
  readonly #log: InvalidationLog;
  readonly #timeoutMs: number;
  readonly #retryDelayMs: number;
  readonly #announceWaitMs: number;
  readonly #agent: Agent | undefined;
  readonly #redis: RedisClient | undefined;
  /** Subscribed to ACK_CHANNEL (a connection in subscriber mode cannot publish: its own). */
  readonly #confirmations: RedisClient | undefined;
  #hearingConfirmations = false;
  /** Published messages waiting for their receivers' confirmations, by `ack` id: how many came. */
  readonly #awaiting = new Map<string, { heard: number; onHeard(): void }>();
  readonly #inFlight = new Set<Promise<void>>();
  /** An outage of Redis is logged once, when it starts; `ready` clears it. */
  #redisWarned = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #tableWindowMs: number;
  /** Table changes not sent yet: table id -> latest version. */
  readonly #pendingTables = new Map<string, number>();
  readonly #pendingResources = new Map<string, ResourceUpdate>();
  #tableTimer: NodeJS.Timeout | undefined;
  #lastTablesAt = -Infinity;
  readonly #tableTargets: TableSignalTarget[] = [];

  constructor(options: ExposureInvalidationOptions) {
    if (options.gatewayUrls.length > 0 && options.opsToken === undefined) {
      // loadConfig refuses this combination; a caller building options by hand gets the same rule.
      throw new TypeError('an ops token is required to invalidate gateway caches over HTTP');
    }
    this.#gatewayUrls = options.gatewayUrls;
    this.#opsToken = options.opsToken;
    this.#log = options.log;
    this.#timeoutMs = options.timeoutMs ?? 2_000;
    this.#retryDelayMs = options.retryDelayMs ?? 100;
    this.#announceWaitMs = options.announceWaitMs ?? 1_000;
    if (this.#gatewayUrls.length > 0) {
      this.#agent = new Agent({
        connect: { timeout: this.#timeoutMs },
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
    }
    if (options.redisUrl !== undefined) {
      this.#redis = this.#connectRedis(options.redisUrl);
      this.#confirmations = this.#hearConfirmations(this.#redis);
    }
    this.#tableWindowMs = options.tableSignalWindowMs ?? 150;
    for (const url of this.#gatewayUrls) {
      this.#tableTargets.push(this.#tableTarget(url, (message) => this.#postOnce(url, message)));
    }
    const redis = this.#redis;
    if (redis !== undefined) {
      this.#tableTargets.push(
        this.#tableTarget(`redis ${INVALIDATION_CHANNEL}`, (message) => this.#publishTables(redis, message)),
      );
    }
  }

  /** Where invalidations go, for the start-up log line (the Redis URL may hold a password). */
  get targets(): { gateways: readonly string[]; redis: boolean } {
    return { gateways: this.#gatewayUrls, redis: this.#redis !== undefined };
  }

  /**
   * Starts telling every gateway; resolves once all of them have been told (or given up on) or
   * after `announceWaitMs`, whichever is first. It never rejects: a failed delivery is logged.
   */
  configChanged(aeiIds: readonly string[]): Promise<void> {
    const deliveries = this.#deliver(aeiIds);
    if (deliveries.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const bound = setTimeout(resolve, this.#announceWaitMs);
      bound.unref();
      void Promise.all(deliveries).then(() => {
        clearTimeout(bound);
        resolve();
      });
    });
  }

  #deliver(aeiIds: readonly string[]): Promise<void>[] {
    if (aeiIds.length === 0) return [];
    const ids = [...aeiIds];
    if (this.#closed) {
      this.#log.warn({ aei_ids: ids }, 'exposure config changed during shutdown; gateways not told');
      return [];
    }
    const message = JSON.stringify({ aei_ids: ids });
    if (this.#gatewayUrls.length === 0 && this.#redis === undefined) {
      this.#log.debug({ aei_ids: ids }, 'exposure config changed; no gateways configured to tell');
      return [];
    }
    const deliveries = this.#gatewayUrls.map((url) => this.#track(this.#post(url, message, ids)));
    if (this.#redis !== undefined) deliveries.push(this.#track(this.#publish(this.#redis, ids)));
    return deliveries;
  }

  /**
   * A user's secrets changed: other control planes hear of it on Redis (gateways keep no secrets,
   * so none is told over HTTP). Returns at once and never throws; a failure is logged.
   */
  secretsChanged(userId: string): void {
    const redis = this.#redis;
    if (redis === undefined || this.#closed) return;
    const message = JSON.stringify({ secret_owners: [userId] });
    void this.#track(
      (async () => {
        if (!redis.isReady) {
          this.#log.warn(
            { channel: INVALIDATION_CHANNEL },
            'redis not connected; secret change not published',
          );
          return;
        }
        try {
          await this.#publishWithin(redis, message);
        } catch (error) {
          this.#log.warn(
            { channel: INVALIDATION_CHANNEL, ...errorDetails(error) },
            'redis publish failed; secret change not published',
          );
        }
      })(),
    );
  }

  /**
   * A table's data changed (committed): the gateways hear of it shortly, coalesced with other
   * changes. Returns at once and never throws; deliveries are logged, never awaited by the writer.
   */
  tableChanged(tableId: string, version: number): void {
    if (this.#tableTargets.length === 0) return;
    if (this.#closed) {
      this.#log.debug({ table_id: tableId, version }, 'table changed during shutdown; gateways not told');
      return;
    }
    const known = this.#pendingTables.get(tableId);
    if (known === undefined || version > known) this.#pendingTables.set(tableId, version);
    this.#scheduleSignals();
  }

  /**
   * An upstream server announced that a resource a gateway watches changed: the gateways hear of
   * it with the table changes (`resource_updates`), coalesced alike. Never throws.
   */
  resourceUpdated(serverId: string, uri: string): void {
    if (this.#tableTargets.length === 0 || this.#closed) return;
    this.#pendingResources.set(`${serverId}\u0000${uri}`, { upstream_server_id: serverId, uri });
    this.#scheduleSignals();
  }

  #scheduleSignals(): void {
    if (this.#tableTimer !== undefined) return;
    // The first change of a quiet period goes at once (with those of the same tick); later ones
    // wait for the window to end.
    const wait = Math.max(0, this.#lastTablesAt + this.#tableWindowMs - Date.now());
    this.#tableTimer = setTimeout(() => {
      this.#tableTimer = undefined;
      this.#flushTables();
    }, wait);
    this.#tableTimer.unref();
  }

  /** Hands the pending table changes to every target (each sends when its previous message is done). */
  #flushTables(): void {
    if (this.#pendingTables.size === 0 && this.#pendingResources.size === 0) return;
    this.#lastTablesAt = Date.now();
    const changes = [...this.#pendingTables];
    this.#pendingTables.clear();
    const updates = [...this.#pendingResources];
    this.#pendingResources.clear();
    for (const target of this.#tableTargets) {
      for (const [tableId, version] of changes) {
        const known = target.backlog.get(tableId);
        if (known === undefined || version > known) target.backlog.set(tableId, version);
      }
      for (const [key, update] of updates) target.resources.set(key, update);
      if (!target.running) this.#track(this.#pump(target));
    }
  }

  #tableTarget(name: string, send: (message: string) => Promise<Attempt>): TableSignalTarget {
    return {
      name,
      backlog: new Map(),
      resources: new Map(),
      running: false,
      failing: false,
      send: async (message, changes) => {
        const outcome = await send(message);
        if (outcome.ok) return true;
        this.#log.debug({ target: name, changes, ...outcome.details }, 'table changes not delivered');
        return false;
      },
    };
  }

  /** Sends the target's backlog, one message at a time, until it is empty. */
  async #pump(target: TableSignalTarget): Promise<void> {
    target.running = true;
    try {
      while (target.backlog.size > 0 || target.resources.size > 0) {
        const batch = [...target.backlog].slice(0, MAX_TABLE_CHANGES);
        for (const [tableId] of batch) target.backlog.delete(tableId);
        const updates = [...target.resources].slice(0, MAX_TABLE_CHANGES);
        for (const [key] of updates) target.resources.delete(key);
        const message = JSON.stringify({
          ...(batch.length > 0 && {
            table_changes: batch.map(([table_id, version]) => ({ table_id, version })),
          }),
          ...(updates.length > 0 && { resource_updates: updates.map(([, update]) => update) }),
        });
        const delivered = await target.send(message, batch.length + updates.length);
        if (delivered && target.failing) {
          target.failing = false;
          this.#log.info({ target: target.name }, 'table changes delivered again');
        } else if (!delivered && !target.failing) {
          // Once per outage: a gateway that is down would otherwise warn on every write.
          target.failing = true;
          this.#log.warn(
            { target: target.name, table_ids: batch.slice(0, 10).map(([tableId]) => tableId) },
            'table changes not delivered; sessions subscribed there miss resources/updated until it is back',
          );
        }
      }
    } catch (error) {
      this.#log.warn({ target: target.name, ...errorDetails(error) }, 'sending table changes failed');
    } finally {
      target.running = false;
    }
  }

  /** One POST of `body` and, when worth it, one retry. */
  async #postOnce(gateway: string, body: string): Promise<Attempt> {
    const first = await this.#attempt(`${gateway}${INVALIDATION_PATH}`, body);
    if (first.ok || !first.retryable) return first;
    await sleep(this.#retryDelayMs);
    return this.#attempt(`${gateway}${INVALIDATION_PATH}`, body);
  }

  async #publishTables(client: RedisClient, message: string): Promise<Attempt> {
    if (!client.isReady) return { ok: false, retryable: false, details: { error: 'redis not connected' } };
    try {
      await this.#publishWithin(client, message);
      return { ok: true, status: 0 };
    } catch (error) {
      return { ok: false, retryable: false, details: errorDetails(error) };
    }
  }

  /** Resolves once every delivery started so far has succeeded or been given up (and logged). */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
  }

  /** Finishes the deliveries in flight, then closes the HTTP pool and the Redis connection. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // The last table changes are sent, not dropped.
    clearTimeout(this.#tableTimer);
    this.#tableTimer = undefined;
    this.#flushTables();
    this.#closed = true;
    await this.settled();
    await this.#agent?.close();
    for (const redis of [this.#redis, this.#confirmations]) {
      if (!redis?.isOpen) continue;
      // close() waits for commands in flight; a client still (re)connecting has none to wait for.
      if (redis.isReady) await redis.close();
      else redis.destroy();
    }
  }

  #track(delivery: Promise<void>): Promise<void> {
    this.#inFlight.add(delivery);
    void delivery.finally(() => this.#inFlight.delete(delivery));
    return delivery;
  }

  async #post(gateway: string, body: string, aeiIds: string[]): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      const outcome = await this.#attempt(`${gateway}${INVALIDATION_PATH}`, body);
      if (outcome.ok) {
        this.#log.debug(
          { gateway, aei_ids: aeiIds, status: outcome.status, attempts: attempt },
          'gateway cache invalidated',
        );
        return;
      }
      if (!outcome.retryable || attempt >= 2) {
        this.#log.warn(
          { gateway, aei_ids: aeiIds, attempts: attempt, ...outcome.details },
          'gateway cache invalidation failed; the gateway serves the old config until its cache expires',
        );
        return;
      }
      await sleep(this.#retryDelayMs);
    }
  }

  /** One POST; network errors, timeouts and 5xx are worth a retry, other answers are final. */
  async #attempt(url: string, body: string): Promise<Attempt> {
    try {
      // A notice is no part of the call whose write it tells of: outside its trace.
      const response = await detached(() =>
        request(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.#opsToken}`, 'content-type': 'application/json' },
          body,
          dispatcher: this.#agent,
          signal: AbortSignal.timeout(this.#timeoutMs),
        }),
      );
      // Read the answer to the end so the connection goes back to the pool.
      await response.body.dump();
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { ok: true, status };
      return { ok: false, retryable: status >= 500, details: { status } };
    } catch (error) {
      return { ok: false, retryable: true, details: errorDetails(error) };
    }
  }

  #connectRedis(url: string): RedisClient {
    const client = newRedisClient(url, this.#timeoutMs);
    client.on('ready', () => {
      this.#log.info(
        { channel: INVALIDATION_CHANNEL },
        this.#redisWarned ? 'redis reconnected' : 'redis connected',
      );
      this.#redisWarned = false;
    });
    client.on('error', (error: unknown) => {
      // node-redis emits one error per reconnect attempt: say it once per outage.
      if (this.#redisWarned) return;
      this.#redisWarned = true;
      this.#log.warn(
        { channel: INVALIDATION_CHANNEL, ...errorDetails(error) },
        'redis unreachable; retrying in the background',
      );
    });
    // connect() settles only once connected (or when closed); reconnects are the client's own.
    client.connect().catch(() => undefined);
    return client;
  }

  /**
   * A second connection, subscribed to ACK_CHANNEL: each confirmation counts for its message.
   * Until it has subscribed, messages ask for none (nothing would hear them).
   */
  #hearConfirmations(redis: RedisClient): RedisClient {
    const client = redis.duplicate();
    // The publishing connection's warnings cover an outage of the one Redis.
    // After a reconnect the client subscribes again by itself (meanwhile, a publish fails too).
    client.on('error', () => undefined);
    client
      .connect()
      .then(() =>
        client.subscribe(ACK_CHANNEL, (id) => {
          const waiting = this.#awaiting.get(id);
          if (waiting === undefined) return;
          waiting.heard += 1;
          waiting.onHeard();
        }),
      )
      .then(() => {
        this.#hearingConfirmations = true;
        this.#log.debug({ channel: ACK_CHANNEL }, 'listening for confirmations');
      })
      .catch(() => undefined);
    return client;
  }

  async #publish(client: RedisClient, aeiIds: string[]): Promise<void> {
    if (!client.isReady) {
      this.#log.warn(
        { channel: INVALIDATION_CHANNEL, aei_ids: aeiIds },
        'redis not connected; invalidation not published',
      );
      return;
    }
    // While the confirmations' connection is down nobody would hear them: no ack is asked for (the
    // client subscribes again once it is back).
    const ack = this.#hearingConfirmations && this.#confirmations?.isReady ? randomUUID() : undefined;
    const waiting: { heard: number; onHeard(): void } = { heard: 0, onHeard: () => undefined };
    if (ack !== undefined) this.#awaiting.set(ack, waiting);
    try {
      const receivers = await this.#publishWithin(
        client,
        JSON.stringify(ack === undefined ? { aei_ids: aeiIds } : { aei_ids: aeiIds, ack }),
      );
      if (ack === undefined) {
        this.#log.debug(
          { channel: INVALIDATION_CHANNEL, aei_ids: aeiIds, receivers },
          'invalidation published',
        );
        return;
      }
      // Within the same bound as the admin answer's: past it, the answer has gone anyway.
      const confirmed = await new Promise<number>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          resolve(waiting.heard);
        };
        const timer = setTimeout(done, this.#announceWaitMs);
        waiting.onHeard = () => {
          if (waiting.heard >= receivers) done();
        };
        waiting.onHeard();
      });
      const details = { channel: INVALIDATION_CHANNEL, aei_ids: aeiIds, receivers, confirmed };
      if (confirmed >= receivers) this.#log.debug(details, 'invalidation published');
      else {
        this.#log.warn(
          details,
          `invalidation published; not every receiver confirmed within ${this.#announceWaitMs} ms (one may serve the old config a while longer)`,
        );
      }
    } catch (error) {
      this.#log.warn(
        { channel: INVALIDATION_CHANNEL, aei_ids: aeiIds, ...errorDetails(error) },
        'redis publish failed; invalidation not published',
      );
    } finally {
      if (ack !== undefined) this.#awaiting.delete(ack);
    }
  }

  /** PUBLISH on the channel, failing after the timeout; answers how many subscribers got it. */
  async #publishWithin(client: RedisClient, message: string): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        client.publish(INVALIDATION_CHANNEL, message),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.#timeoutMs} ms`)),
            this.#timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A log-friendly summary of a transport error (message and, when present, its code). */
function errorDetails(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
  return { error: error.message || error.name, ...(typeof code === 'string' && { code }) };
}
