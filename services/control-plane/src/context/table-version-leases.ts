/**
 * Leased table versions: how control planes sharing one PostgreSQL database and one Redis learn
 * each other's writes without asking Redis on every read, and still never serve a stale read after
 * an acknowledged write, whichever control plane made it.
 *
 * - Every control plane is a member: it holds a lease in Redis (a hash of members to the end of
 *   their lease, on Redis's clock, with the time the hash was born), renewed every quarter of the
 *   lease, and listens on a channel for the versions other members announce.
 * - A writer announces a table's new version before its transaction commits, in one script: raise
 *   the table's version key (the fallback readers without a lease use), publish the version, and
 *   list the members whose lease may still run. It then waits until each of them confirmed (on the
 *   writer's own confirmation channel), or for a whole lease since the script answered. When the
 *   hash is younger than a lease (just made, or lost and made again), members may be missing from
 *   it: the writer then waits a whole lease whatever the confirmations. Only then does the write
 *   commit and get acknowledged.
 * - A member applies an announcement (raises the version it knows) before it confirms it, and
 *   answers reads from the versions it knows only while its own lease runs, by its own clock: three
 *   quarters of a lease from when it sent the renewal. The renewal runs on the connection the
 *   announcements arrive on, and only while both subscriptions are in place, so its answer comes
 *   after every announcement published before it.
 * - A member that may have missed announcements (it just started, or its connection dropped)
 *   forgets every version it knew at its next renewal, and reads them again from Redis. A version
 *   read from Redis or the database is kept only if nothing could have been missed since the read
 *   began (`generation`). A member that stops leaves first, so no writer waits for it; pending
 *   announcements of a member that stops fail (their writes are refused).
 * - A member that hangs or dies without leaving costs each write made meanwhile at most one lease
 *   (default 2 s) of waiting, until its lease ends and it is dropped from the hash.
 * An announced version above the committed one (the write then rolled back) is harmless: readers
 * find no cached node at that version and read the database, which has the committed one.
 *
 * Members are scoped (`scope`: the database's name and oid), so control planes of other databases
 * on the same Redis neither wait for nor hear each other (databases of the same name and oid on
 * different servers would share a scope: they only wait for each other's confirmations).
 * Limits: a forward step of Redis's clock by more than three quarters of a lease can leave a
 * running lease out of a writer's list; the Redis user needs the `bindery:table-versions:*`
 * channels (PUBLISH, SUBSCRIBE) besides its keys, or every write is refused.
 */
import { randomBytes } from 'node:crypto';
import { createRedisClient } from '@bindery/service-kit';

export interface VersionLeasesOptions {
  url: string;
  /** What members share: control planes of one database (retried until it answers). */
  scope: () => Promise<string>;
  /** Length of a lease in ms (default 2,000). */
  leaseMs?: number;
  /** Budget of one Redis command in ms (default 500). */
  timeoutMs?: number;
  /** Another member announced `version` of `tableId` (called before it is confirmed). */
  onVersion(tableId: string, version: number): void;
  /** Announcements may have been missed: forget every version known. */
  onLapse(): void;
  log: { warn(details: object, message: string): void; info(details: object, message: string): void };
}

/** The field of the members' hash holding when the hash was made (no member id starts with it). */
const BORN = '~born';

// KEYS[1]: the members' hash. ARGV[1]: this member; ARGV[2]: lease in ms. Notes when the hash was
// born, renews this member, drops leases ended more than half a lease ago (slack for a step of
// Redis's clock), keeps the hash alive while members renew.
const RENEW_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('HSETNX', KEYS[1], '${BORN}', now)
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  if fields[i] ~= '${BORN}' and tonumber(fields[i + 1]) <= now - lease / 2 then
    redis.call('HDEL', KEYS[1], fields[i])
  end
end
redis.call('HSET', KEYS[1], ARGV[1], now + lease)
redis.call('PEXPIRE', KEYS[1], lease * 4)
return now`;

/**
 * Lua raising a table's version in Redis, never lowering it (a write announced late keeps the
 * larger version), and renewing the key's time to live either way. KEYS[1]: the version key;
 * ARGV[1]: a version; ARGV[2]: the key's time to live in ms. Part of every script that writes a
 * version (here and in table-versions.ts), so there is one rule for it.
 */
export const RAISE_VERSION_LUA = `
local known = tonumber(redis.call('GET', KEYS[1]))
local version = tonumber(ARGV[1])
if known == nil or version > known then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end`;

// KEYS[1]: the table's version key; KEYS[2]: the members' hash. ARGV[1]: the version; ARGV[2]: the
// version key's time to live; ARGV[3]: the channel; ARGV[4]: the announcement; ARGV[5]: lease in
// ms. Raises the version (never lowers it), publishes, and answers how long ago the hash was born
// (-1: it is not there) followed by the members whose lease may still run.
const ANNOUNCE_SCRIPT = `${RAISE_VERSION_LUA}
redis.call('PUBLISH', ARGV[3], ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[5])
local reply = {-1}
local fields = redis.call('HGETALL', KEYS[2])
for i = 1, #fields, 2 do
  if fields[i] == '${BORN}' then
    reply[1] = now - tonumber(fields[i + 1])
  elseif tonumber(fields[i + 1]) > now - lease / 2 then
    reply[#reply + 1] = fields[i]
  end
end
return reply`;

/**
 * A member's own lease, whatever carries it (Redis here, PostgreSQL in table-version-notify.ts).
 * Reads may use the versions the member knows only while the lease runs by this process's clock:
 * three quarters of a lease from when the renewal was sent. Once announcements may have been
 * missed (`lapse`), the next renewal forgets every version known (`forget`) before the lease runs
 * again, and `generation` changes, so a version read before is not kept after.
 */
export class MemberLease {
  readonly #leaseMs: number;
  readonly #forget: () => void;
  /** Until when (performance.now()) reads may use the versions known. */
  #validUntil = 0;
  /** Announcements may have been missed since the last renewal (none has happened yet, at start). */
  #lapsed = true;
  #generation = 0;
  /** A lease was held once (said in the log once). */
  #held = false;

  constructor(leaseMs: number, forget: () => void) {
    this.#leaseMs = leaseMs;
    this.#forget = forget;
  }

  get valid(): boolean {
    return performance.now() < this.#validUntil;
  }

  /** Changes whenever announcements may have been missed. */
  get generation(): number {
    return this.#generation;
  }

  /** Announcements may have been missed (a connection lost): reads stop using what is known. */
  lapse(): void {
    this.#validUntil = 0;
    this.#lapsed = true;
    this.#generation += 1;
  }

  /** The member stops: reads stop using what is known. */
  end(): void {
    this.#validUntil = 0;
  }

  /**
   * A renewal sent at `sent` (performance.now()) was answered, and nothing may have been missed
   * since it was sent (the caller checked `generation`). True the first time a lease is held.
   */
  renewed(sent: number): boolean {
    if (this.#lapsed) {
      this.#lapsed = false;
      this.#generation += 1;
      this.#forget();
    }
    this.#validUntil = sent + this.#leaseMs - this.#leaseMs / 4;
    const first = !this.#held;
    this.#held = true;
    return first;
  }
}

/** A writer's announcement, as far as its confirmations go. */
export interface Confirmations {
  /** Members that confirmed before the writer knew whom to wait for. */
  confirmed: Set<string>;
  /** Members still to confirm, once known. */
  waiting: Set<string> | undefined;
  done(): void;
}

/** `member` confirmed `announcement`: noted, and the writer goes on once nobody is awaited. */
export function confirmedBy(announcement: Confirmations, member: string): void {
  if (announcement.waiting === undefined) {
    announcement.confirmed.add(member);
    return;
  }
  announcement.waiting.delete(member);
  if (announcement.waiting.size === 0) announcement.done();
}

/**
 * An announced version (`{"t", "v", "m", "s"}` JSON): the table, its version and, when it names
 * one, the writer waiting for confirmations (member and sequence); undefined when it is not one.
 */
export function readAnnouncement(
  raw: string,
):
  { tableId: string; version: number; writer: { member: string; sequence: number } | undefined } | undefined {
  let message: { m?: unknown; s?: unknown; t?: unknown; v?: unknown };
  try {
    message = JSON.parse(raw) as typeof message;
  } catch {
    return undefined;
  }
  const { m: member, s: sequence, t: tableId, v: version } = message;
  if (typeof tableId !== 'string' || typeof version !== 'number' || !Number.isSafeInteger(version)) {
    return undefined;
  }
  const named =
    typeof member === 'string' &&
    /^[0-9a-f]{16}$/.test(member) &&
    typeof sequence === 'number' &&
    Number.isSafeInteger(sequence);
  return { tableId, version, writer: named ? { member, sequence } : undefined };
}

/** Waited beyond a lease (clocks tick at slightly different rates). */
const SETTLE_MS = 25;

interface Announcement extends Confirmations {
  fail(error: Error): void;
}

export class VersionLeases {
  readonly member = randomBytes(8).toString('hex');
  readonly #options: VersionLeasesOptions;
  readonly #leaseMs: number;
  readonly #timeoutMs: number;
  readonly #client: ReturnType<typeof createLeaseClient>;
  #keys: { members: string; channel: string; confirmations: string } | undefined;
  /** Both subscriptions are in place (node-redis renews them after a reconnect by itself). */
  #subscribed = false;
  #subscribing = false;
  readonly #lease: MemberLease;
  #renewing = false;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  #sequence = 0;
  readonly #announcements = new Map<number, Announcement>();
  /** Who waits for the scope, or for the connection, within a command's budget. */
  readonly #waiters = new Set<() => void>();
  #warned = false;

  constructor(options: VersionLeasesOptions) {
    this.#options = options;
    this.#leaseMs = options.leaseMs ?? 2_000;
    this.#timeoutMs = options.timeoutMs ?? 500;
    this.#lease = new MemberLease(this.#leaseMs, () => options.onLapse());
    this.#client = createLeaseClient(options.url, this.#timeoutMs, `bindery-versions-${this.member}`);
    this.#client.on('error', (error: unknown) => {
      this.#lease.lapse();
      this.#outage(error);
    });
    this.#client.on('reconnecting', () => this.#lease.lapse());
    this.#client.on('ready', () => {
      if (this.#warned) this.#options.log.info({}, 'redis reachable again: table-version lease renewed');
      this.#warned = false;
      this.#wake();
    });
    void this.#start();
  }

  /** Whether reads may use the versions this member knows (its lease runs). */
  get valid(): boolean {
    return this.#lease.valid;
  }

  /** Changes whenever announcements may have been missed. */
  get generation(): number {
    return this.#lease.generation;
  }

  /**
   * Raises `tableId`'s version in Redis to `version`, announces it, and resolves once every member
   * that may hold a lease has confirmed it or a whole lease has passed. Throws when Redis cannot be
   * reached (or this member stops meanwhile): the write must then be refused.
   */
  async announce(tableId: string, version: number, versionKey: string, keyTtlMs: number): Promise<void> {
    const keys = this.#keys ?? (await this.#within(() => this.#keys));
    if (keys === undefined) throw new Error('the members of this database are not known');
    if (!this.#client.isReady && !(await this.#within(() => this.#client.isReady || undefined)))
      throw new Error('not connected');
    const sequence = ++this.#sequence;
    const message = JSON.stringify({ m: this.member, s: sequence, t: tableId, v: version });
    // Registered before the script runs: a confirmation can arrive in the same read as its answer,
    // and be handled before the answer is.
    let settle: { done(): void; fail(error: Error): void } | undefined;
    const announcement: Announcement = {
      confirmed: new Set(),
      waiting: undefined,
      done: () => settle?.done(),
      fail: (error) => settle?.fail(error),
    };
    this.#announcements.set(sequence, announcement);
    try {
      const reply = (await this.#client.eval(ANNOUNCE_SCRIPT, {
        keys: [versionKey, keys.members],
        arguments: [String(version), String(keyTtlMs), keys.channel, message, String(this.#leaseMs)],
      })) as (string | number)[];
      // Stopping meanwhile: refused rather than committed after a wait nobody will see through.
      if (this.#closed) throw new Error('the control plane is stopping');
      const age = Number(reply[0]);
      const waiting = new Set<string>();
      for (const member of reply.slice(1).map(String)) {
        if (member !== this.member && !announcement.confirmed.has(member)) waiting.add(member);
      }
      // A hash younger than a lease may lack members whose lease still runs: wait one out.
      const blind = age < 0 || age < this.#leaseMs;
      if (waiting.size === 0 && !blind) return;
      announcement.waiting = waiting;
      await new Promise<void>((resolve, reject) => {
        // Whoever has not confirmed is waited out: a whole lease since the script answered is
        // longer than any lease the script saw may still run, whatever Redis's clock did.
        const timer = setTimeout(() => {
          if (waiting.size > 0) {
            this.#options.log.warn(
              { members: [...waiting], table_id: tableId, version },
              'control planes did not confirm a table version; waited until their leases ended',
            );
          }
          resolve();
        }, this.#leaseMs + SETTLE_MS);
        settle = {
          done: () => {
            if (blind) return;
            clearTimeout(timer);
            resolve();
          },
          fail: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        if (waiting.size === 0 && !blind) settle.done();
      });
    } finally {
      this.#announcements.delete(sequence);
    }
  }

  /**
   * Leaves the members (no writer waits for this one any more) and closes the connection. Writes
   * still waiting for confirmations fail: they must not commit unconfirmed.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#lease.end();
    clearInterval(this.#timer);
    for (const announcement of this.#announcements.values()) {
      announcement.fail(new Error('the control plane is stopping'));
    }
    this.#wake();
    const keys = this.#keys;
    if (this.#client.isReady && keys !== undefined) {
      await this.#client.hDel(keys.members, this.member).catch(() => undefined);
    }
    if (this.#client.isReady) await this.#client.close();
    else if (this.#client.isOpen) this.#client.destroy();
  }

  /** `check()`'s answer once it has one, or undefined after a command's budget. */
  async #within<T>(check: () => T | undefined): Promise<T | undefined> {
    const now = check();
    if (now !== undefined || this.#closed) return now;
    return new Promise((resolve) => {
      const done = () => {
        const answer = check();
        if (answer === undefined && !this.#closed) return;
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve(answer);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(done);
        resolve(check());
      }, this.#timeoutMs);
      timer.unref();
      this.#waiters.add(done);
    });
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  async #start(): Promise<void> {
    // The database answers its identity once it is reachable: asked again until then.
    for (let attempt = 0; !this.#closed; attempt += 1) {
      try {
        const base = `bindery:table-versions:${await this.#options.scope()}`;
        this.#keys = {
          members: `${base}:members`,
          channel: base,
          confirmations: `${base}:confirmed:${this.member}`,
        };
        break;
      } catch (error) {
        if (attempt === 0) {
          this.#options.log.warn(
            { error: error instanceof Error ? error.message : String(error) },
            'the database could not be named yet: writes are refused and reads ask Redis until it can',
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 5_000)).unref());
      }
    }
    if (this.#closed) return;
    this.#wake();
    this.#timer = setInterval(() => void this.#renew(), this.#leaseMs / 4);
    this.#timer.unref();
    await this.#client.connect().catch(() => undefined);
    await this.#renew();
  }

  /** Subscribes to the announcements and to this member's confirmations, unless it is already. */
  async #subscribe(): Promise<void> {
    const keys = this.#keys;
    if (this.#subscribed || this.#subscribing || keys === undefined || !this.#client.isReady) return;
    this.#subscribing = true;
    try {
      await Promise.all([
        this.#client.subscribe(keys.channel, (raw) => this.#announced(raw, keys.channel)),
        this.#client.subscribe(keys.confirmations, (raw) => this.#confirmed(raw)),
      ]);
      this.#subscribed = true;
    } catch (error) {
      // A subscription whose answer was lost is not renewed by node-redis: try again from scratch.
      await this.#client.unsubscribe([keys.channel, keys.confirmations]).catch(() => undefined);
      this.#outage(error);
    } finally {
      this.#subscribing = false;
    }
  }

  async #renew(): Promise<void> {
    const keys = this.#keys;
    if (this.#renewing || this.#closed || keys === undefined || !this.#client.isReady) return;
    this.#renewing = true;
    try {
      await this.#subscribe();
      if (!this.#subscribed) return;
      const generation = this.#lease.generation;
      const sent = performance.now();
      // On the connection announcements arrive on: its answer comes after each of them published
      // before the renewal, so the lease never runs ahead of what this member has applied.
      await this.#client.eval(RENEW_SCRIPT, {
        keys: [keys.members],
        arguments: [this.member, String(this.#leaseMs)],
      });
      if (generation !== this.#lease.generation || this.#closed) return;
      if (this.#lease.renewed(sent)) {
        this.#options.log.info(
          { member: this.member, members: keys.members },
          'table-version lease taken: reads use the versions announced',
        );
      }
    } catch (error) {
      this.#outage(error);
    } finally {
      this.#renewing = false;
    }
  }

  #announced(raw: string, channel: string): void {
    const announced = readAnnouncement(raw);
    // Every announcement through Redis names its writer.
    const writer = announced?.writer;
    if (announced === undefined || writer === undefined || writer.member === this.member) return;
    this.#options.onVersion(announced.tableId, announced.version);
    const confirmations = `${channel}:confirmed:${writer.member}`;
    this.#client.publish(confirmations, `${this.member}:${String(writer.sequence)}`).catch(() => undefined);
  }

  #confirmed(raw: string): void {
    const [member, sequence] = raw.split(':');
    const announcement = this.#announcements.get(Number(sequence));
    if (member !== undefined && announcement !== undefined) confirmedBy(announcement, member);
  }

  #outage(error: unknown): void {
    if (this.#warned || this.#closed) return;
    this.#warned = true;
    this.#options.log.warn(
      { error: error instanceof Error ? error.message : String(error) },
      'redis unreachable: table-version lease lapsed; reads take versions from the database until it is back',
    );
  }
}

function createLeaseClient(url: string, timeoutMs: number, name: string) {
  return createRedisClient({
    url,
    name,
    // RESP3: one connection carries the subscriptions and the commands, so a renewal's answer is
    // ordered after the announcements published before it.
    RESP: 3,
    disableOfflineQueue: true,
    commandOptions: { timeout: timeoutMs },
    socket: {
      connectTimeout: timeoutMs,
      reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 5_000),
    },
  });
}
