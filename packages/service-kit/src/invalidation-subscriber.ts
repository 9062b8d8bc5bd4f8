/**
 * With REDIS_URL set, every gateway replica and every control plane hears the control planes'
 * exposure invalidations on one Redis pub/sub channel (the same message as POST /cache/invalidate:
 * `{"aei_ids": [...]}`), and the tables whose data changed (`{"table_changes": [{table_id,
 * version}]}`) and upstream resources that changed (`{"resource_updates": [{upstream_server_id,
 * uri}]}`), which gateways turn into MCP resources/updated notifications.
 *
 * A message may ask to be confirmed (`"ack": "<id>"`): each subscriber publishes the id on
 * ACK_CHANNEL once it has applied the message, so the control plane that sent an exposure change
 * answers its admin only once every process that received it has dropped the old config (a
 * publish is done when Redis has the message, not when a gateway across a slow link has read it).
 */
import { createClient } from './redis-client.ts';

/** The channel control planes publish exposure changes on. */
export const INVALIDATION_CHANNEL = 'bindery:config-invalidate';
/** Where subscribers confirm a message that asked for it: the message's `ack` id, once applied. */
export const ACK_CHANNEL = 'bindery:config-invalidate:ack';
/** The longest `ack` id a message may carry (the control plane sends UUIDs). */
const ACK_MAX_CHARS = 64;

/** A table's data changed: its latest committed version (a signal, not the data). */
export interface TableChange {
  table_id: string;
  version: number;
}

/** An upstream server's resource that changed (`notifications/resources/updated` upstream). */
export interface ResourceUpdate {
  upstream_server_id: string;
  uri: string;
}

/** The longest URI a resource update may name (the upstream catalog's own bound). */
export const RESOURCE_URI_MAX_CHARS = 2048;

/** A bounded list of resource updates, or undefined when it is not one. */
export function resourceUpdates(v: unknown): ResourceUpdate[] | undefined {
  if (!Array.isArray(v) || v.length > MAX_TABLE_CHANGES) return undefined;
  const updates: ResourceUpdate[] = [];
  for (const item of v as unknown[]) {
    const u = item as { upstream_server_id?: unknown; uri?: unknown } | null;
    const server = u?.upstream_server_id;
    const uri = u?.uri;
    if (typeof server !== 'string' || server.length === 0 || server.length > TABLE_ID_MAX_CHARS)
      return undefined;
    if (typeof uri !== 'string' || uri.length === 0 || uri.length > RESOURCE_URI_MAX_CHARS) return undefined;
    updates.push({ upstream_server_id: server, uri });
  }
  return updates;
}

export interface InvalidationMessage {
  aei_ids?: string[];
  api_keys?: string[];
  all?: boolean;
  /** Tables whose data changed; a message may carry these alone (then it invalidates no config). */
  table_changes?: TableChange[];
  /** Upstream resources that changed, which a gateway watches for its subscribers (alone likewise). */
  resource_updates?: ResourceUpdate[];
  /**
   * Users whose secrets changed (control planes drop the values they keep decrypted); alone, it
   * invalidates no config. Only on Redis: gateways keep no secrets.
   */
  secret_owners?: string[];
  /** Confirm on ACK_CHANNEL with this id once the message is applied. */
  ack?: string;
}

/** Whether a message drops cached configs (one carrying only table changes does not). */
export function invalidatesConfig(message: InvalidationMessage): boolean {
  return message.aei_ids !== undefined || message.api_keys !== undefined || message.all === true;
}

/** At most this many table changes in one message (the sender splits longer lists). */
export const MAX_TABLE_CHANGES = 1000;
/** The longest table id a table change may name (ids are far shorter; this bounds what is kept). */
export const TABLE_ID_MAX_CHARS = 64;

/** A bounded list of user ids. */
function owners(v: unknown): string[] | undefined {
  if (!Array.isArray(v) || v.length > MAX_TABLE_CHANGES) return undefined;
  return v.every((x) => typeof x === 'string' && x.length > 0 && x.length <= TABLE_ID_MAX_CHARS)
    ? (v as string[])
    : undefined;
}

function tableChanges(v: unknown): TableChange[] | undefined {
  if (!Array.isArray(v) || v.length > MAX_TABLE_CHANGES) return undefined;
  const changes: TableChange[] = [];
  for (const item of v as unknown[]) {
    const c = item as { table_id?: unknown; version?: unknown } | null;
    const id = c?.table_id;
    if (typeof id !== 'string' || id.length === 0 || id.length > TABLE_ID_MAX_CHARS) return undefined;
    // A version is a table's, from 1; the same bounds the gateway's HTTP route sets.
    if (!Number.isSafeInteger(c?.version) || (c?.version as number) < 1) return undefined;
    changes.push({ table_id: id, version: c?.version as number });
  }
  return changes;
}

export interface Subscription {
  close(): Promise<void>;
}

interface SubscriberLog {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface SubscribeOptions {
  /** Each well-formed message; malformed ones are logged and skipped. */
  onMessage(message: InvalidationMessage): unknown;
  /**
   * The subscription is back after Redis was away: messages of the outage are lost, so whatever a
   * missed message would have dropped should be dropped now.
   */
  onResubscribed?(): void;
}

function parse(raw: string, log: SubscriberLog): InvalidationMessage | undefined {
  let message: unknown;
  try {
    message = JSON.parse(raw);
  } catch {
    log.warn({ raw: raw.slice(0, 200) }, 'ignored a malformed invalidation message');
    return undefined;
  }
  const m = message as {
    aei_ids?: unknown;
    api_keys?: unknown;
    all?: unknown;
    table_changes?: unknown;
    resource_updates?: unknown;
    secret_owners?: unknown;
    ack?: unknown;
  };
  const changes = tableChanges(m.table_changes);
  const updates = resourceUpdates(m.resource_updates);
  const strings = (v: unknown) => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined);
  const parsed = {
    ...(strings(m.aei_ids) && { aei_ids: strings(m.aei_ids) }),
    ...(strings(m.api_keys) && { api_keys: strings(m.api_keys) }),
    ...(m.all === true && { all: true }),
    ...(changes && { table_changes: changes }),
    ...(updates && { resource_updates: updates }),
    ...(owners(m.secret_owners) && { secret_owners: owners(m.secret_owners) }),
  };
  if (Object.keys(parsed).length === 0) {
    log.warn({ raw: raw.slice(0, 200) }, 'ignored an invalidation message naming nothing');
    return undefined;
  }
  const ack =
    typeof m.ack === 'string' && m.ack.length > 0 && m.ack.length <= ACK_MAX_CHARS ? m.ack : undefined;
  return ack === undefined ? parsed : { ...parsed, ack };
}

/** How long start-up waits for the first subscription before going on without it. */
const DEFAULT_WAIT_MS = 2000;

/**
 * Subscribes to INVALIDATION_CHANNEL. Resolves once subscribed, or after `waitMs` (default 2 s)
 * with Redis still unreachable: a process must start without Redis (what depends on Redis says so
 * itself), so subscribing goes on in the background, and when it lands `onResubscribed` runs,
 * because whatever was announced meanwhile was missed. A message asking for confirmation is
 * confirmed once `onMessage` has resolved (never when it failed: the sender's bound covers that).
 */
export async function subscribeInvalidations(
  url: string,
  log: SubscriberLog,
  options: SubscribeOptions & { waitMs?: number },
): Promise<Subscription> {
  const subscriber = createClient({ url });
  // node-redis emits one error per reconnect attempt: say it once per outage.
  let unreachable = false;
  subscriber.on('error', (error: unknown) => {
    if (unreachable) return;
    unreachable = true;
    log.warn(
      { err: error },
      'redis subscriber unreachable: retrying; invalidations announced meanwhile are missed, and cached configs are dropped once it is back',
    );
  });
  let subscribed = false;
  // node-redis subscribes again by itself after a reconnect; 'ready' comes after each connect.
  subscriber.on('ready', () => {
    unreachable = false;
    if (subscribed) options.onResubscribed?.();
  });
  // A connection in subscriber mode cannot publish: confirmations go on one of their own. Its
  // errors are the subscriber's (one Redis): that one says so; a confirmation not sent only makes
  // the sender wait for its bound.
  const confirmations = subscriber.duplicate();
  confirmations.on('error', () => undefined);
  confirmations.connect().catch(() => undefined);
  const confirm = async (id: string) => {
    if (confirmations.isReady) await confirmations.publish(ACK_CHANNEL, id);
  };
  const listener = (raw: string) => {
    const message = parse(raw, log);
    if (message === undefined) return;
    Promise.resolve()
      .then(() => options.onMessage(message))
      .then(() => (message.ack === undefined ? undefined : confirm(message.ack)))
      .catch((error: unknown) => log.error({ err: error }, 'invalidation failed'));
  };
  // connect() settles once connected, however long Redis is away (or rejects when closed first).
  const subscribing = subscriber
    .connect()
    .then(() => subscriber.subscribe(INVALIDATION_CHANNEL, listener))
    .then(() => {
      subscribed = true;
      return true;
    });
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), options.waitMs ?? DEFAULT_WAIT_MS);
  });
  const inTime = await Promise.race([subscribing, waited]).finally(() => clearTimeout(timer));
  if (!inTime) {
    subscribing.then(
      () => options.onResubscribed?.(),
      () => undefined,
    );
  }
  return {
    async close() {
      if (subscriber.isReady) {
        await subscriber.unsubscribe(INVALIDATION_CHANNEL);
        await subscriber.quit();
      } else if (subscriber.isOpen) subscriber.destroy();
      if (confirmations.isReady) await confirmations.close();
      else if (confirmations.isOpen) confirmations.destroy();
    },
  };
}
