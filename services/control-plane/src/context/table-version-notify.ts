/**
 * Tables' versions over PostgreSQL's LISTEN/NOTIFY: control planes sharing one database without
 * Redis answer reads from the versions they know, with no round trip, and still never serve a
 * stale read after an acknowledged write, whichever control plane made it.
 *
 * - Every control plane is a member: one connection of its own LISTENs for the versions the others
 *   announce, and renews its lease (a row of `table_version_member`, on the database's clock) every
 *   quarter of a lease.
 * - A writer announces the table's new version inside the write's transaction (`pg_notify`), so
 *   the announcement is delivered if and only if the write commits, to every member listening at
 *   that moment. After the commit, before the write is acknowledged, it lists the members whose
 *   lease may still run and waits until each confirmed (on the writer's own channel) or a whole
 *   lease has passed.
 * - A member applies an announcement (raises the version it knows) before it confirms it, and
 *   answers reads from the versions it knows only while its lease runs, by its own clock: three
 *   quarters of a lease from when it sent the renewal. The renewal NOTIFYs the member itself, so
 *   PostgreSQL delivers every notification committed before it (commits that notify are
 *   serialised by the server) ahead of the renewal's answer: a member whose renewal a writer's
 *   listing missed has applied that writer's version before its lease runs.
 * - A member that may have missed announcements (just started, its connection lost) forgets every
 *   version it knew at its next renewal, and reads them from the database meanwhile; a version
 *   read from the database is kept only if nothing could have been missed since the read began
 *   (`mark`). A member that stops leaves first, so no writer waits for it.
 * - A member that hangs or dies without leaving costs each write made meanwhile at most one lease
 *   (default 2 s) of waiting, until its lease ends.
 * A writer that cannot list the members (the database failed after the commit) waits a whole
 * lease: by then every member has renewed, applying the version, or stopped answering from memory.
 * A renewal whose own notification did not arrive before its answer (LISTEN silently lost, as
 * behind a transaction-pooling proxy) counts as a lost connection. A change that no control plane
 * of this kind announced (an older version during an upgrade, a cascade) is announced by the
 * `table` table's trigger at commit, with no writer to confirm to: such a writer does not wait.
 * Needs a session-mode connection for LISTEN (not a transaction-pooling proxy in between).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../domain/db.ts';
import type { SqlSession } from '../db/migrate.ts';
import type { TableVersionMeter } from '../metrics.ts';
import { confirmedBy, MemberLease, readAnnouncement, type Confirmations } from './table-version-leases.ts';
import { DELETED, KnownVersions, type TableVersions } from './table-versions.ts';

/** The channel every member listens on for announced versions. */
const CHANNEL = 'bindery_table_versions';
/** A member's own channel: confirmations of its announcements, and its renewals' self-notification. */
const ownChannel = (member: string) => `bindery_table_versions_${member}`;
/** Waited beyond a lease (clocks tick at slightly different rates). */
const SETTLE_MS = 25;
/** An announcement whose write never committed is forgotten after this long. */
const ANNOUNCEMENT_TTL_MS = 5 * 60_000;

// $1: the member; $2: the lease in ms; $3: the member's own channel; $4: a nonce. Renews this
// member, drops leases ended more than a lease ago, and notifies the member itself (see the header).
const RENEW_SQL = `
WITH renewed AS (
  INSERT INTO table_version_member (member, lease_until)
  VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond')
  ON CONFLICT (member) DO UPDATE SET lease_until = EXCLUDED.lease_until
  RETURNING 1
), dropped AS (
  DELETE FROM table_version_member
  WHERE lease_until < clock_timestamp() - $2 * interval '1 millisecond' AND member <> $1
  RETURNING 1
)
SELECT pg_notify($3, $4)`;

// $1: the lease in ms. Members whose lease may still run (half a lease of slack for clocks).
const MEMBERS_SQL = `SELECT member FROM table_version_member
  WHERE lease_until > clock_timestamp() - $1 * interval '0.5 millisecond'`;

interface Announcement extends Confirmations {
  at: number;
}

export interface NotifyTableVersionsOptions {
  /** The database's URL: the listening connection's own. */
  url: string;
  /** Statements on the app's pool (the members' listing after a commit). */
  sql: Pick<SqlSession, 'query'>;
  /** Length of a lease in ms (default 2,000). */
  leaseMs?: number;
  meter?: TableVersionMeter;
  log: { warn(details: object, message: string): void; info(details: object, message: string): void };
}

/** `notify`: PostgreSQL carries the versions between control planes (no Redis). */
export class NotifyTableVersions implements TableVersions {
  readonly source = 'notify';
  readonly member = randomBytes(8).toString('hex');
  readonly #options: NotifyTableVersionsOptions;
  readonly #leaseMs: number;
  readonly #known = new KnownVersions();
  /** The listening connection, once connected and listening. */
  #client: pg.Client | undefined;
  #connecting = false;
  #attempts = 0;
  readonly #lease: MemberLease;
  #renewing = false;
  #warned = false;
  #closed = false;
  readonly #timer: NodeJS.Timeout;
  #sequence = 0;
  /** This member's announcements, by table and version, until their write is settled. */
  readonly #announcements = new Map<string, Announcement & { sequence: number }>();
  readonly #bySequence = new Map<number, Announcement>();
  /** Confirmations to send, one statement for all those of a turn. */
  #confirming: { channel: string; payload: string }[] = [];
  readonly #settling = new Set<Promise<void>>();
  /** The nonce the renewal in flight notifies, and the last one heard. */
  #expected = '';
  #heardNonce = '';
  /** Connections given up on (their late errors and end change nothing). */
  readonly #dropped = new WeakSet<pg.Client>();

  constructor(options: NotifyTableVersionsOptions) {
    this.#options = options;
    this.#leaseMs = options.leaseMs ?? 2_000;
    this.#lease = new MemberLease(this.#leaseMs, () => this.#known.clear());
    this.#timer = setInterval(() => this.#tick(), this.#leaseMs / 4);
    this.#timer.unref();
    void this.#connect();
  }

  /** Whether reads may use the versions this member knows (its lease runs). */
  get valid(): boolean {
    return this.#lease.valid;
  }

  async latest(tableId: string): Promise<number | undefined> {
    if (this.valid) {
      const known = this.#known.get(tableId);
      if (known !== undefined) {
        this.#options.meter?.memory.inc();
        return known;
      }
    }
    this.#options.meter?.database.inc();
    return undefined;
  }

  mark(): number {
    return this.#lease.generation;
  }

  observed(tableId: string, version: number, mark: number): void {
    if (mark === this.#lease.generation) this.#known.raise(tableId, version);
  }

  async announce(tableId: string, version: number, tx: Db): Promise<void> {
    const sequence = ++this.#sequence;
    const announcement = {
      sequence,
      confirmed: new Set<string>(),
      waiting: undefined,
      // Replaced by the wait once the members are listed.
      done: () => undefined,
      at: performance.now(),
    };
    const key = `${tableId}\u0000${version}`;
    // The same version announced again (the first write rolled back): the first is forgotten.
    const earlier = this.#announcements.get(key);
    if (earlier !== undefined) this.#bySequence.delete(earlier.sequence);
    this.#announcements.set(key, announcement);
    this.#bySequence.set(sequence, announcement);
    const message = JSON.stringify({ m: this.member, s: sequence, t: tableId, v: version });
    // `bindery.announced` keeps the table's trigger from announcing the same change again.
    await tx.$queryRaw`SELECT set_config('bindery.announced', 'yes', true), pg_notify(${CHANNEL}, ${message})::text`;
  }

  committed(tableId: string, version: number): void {
    this.#known.raise(tableId, version);
  }

  settle(tableId: string, version: number): Promise<void> {
    const key = `${tableId}\u0000${version}`;
    const announcement = this.#announcements.get(key);
    if (announcement === undefined) return Promise.resolve();
    this.#announcements.delete(key);
    const settled = this.#wait(tableId, version, announcement).finally(() => {
      this.#bySequence.delete(announcement.sequence);
      this.#settling.delete(settled);
    });
    this.#settling.add(settled);
    return settled;
  }

  deleting(tableId: string, tx: Db): Promise<void> {
    return this.announce(tableId, DELETED, tx);
  }

  deleted(tableId: string): void {
    this.#known.raise(tableId, DELETED);
  }

  /**
   * Waits for the writes under way to be confirmed (at most a lease), then leaves the members (no
   * writer waits for this one any more) and closes the listening connection.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#lease.end();
    clearInterval(this.#timer);
    await Promise.allSettled([...this.#settling]);
    // On the listening connection, so it lands after any renewal still in flight on it.
    const client = this.#client;
    this.#client = undefined;
    const leave = 'DELETE FROM table_version_member WHERE member = $1';
    if (client !== undefined) await client.query(leave, [this.member]).catch(() => undefined);
    else await this.#options.sql.query(leave, [this.member]).catch(() => undefined);
    await client?.end().catch(() => undefined);
  }

  /** After the commit of `version`: until each member whose lease may run confirmed it, or a lease. */
  async #wait(tableId: string, version: number, announcement: Announcement): Promise<void> {
    let members: string[];
    try {
      const rows = await this.#options.sql.query<{ member: string }>(MEMBERS_SQL, [this.#leaseMs]);
      members = rows.map((row) => row.member);
    } catch (error) {
      this.#options.log.warn(
        { error: error instanceof Error ? error.message : String(error), table_id: tableId, version },
        'the control planes could not be listed after a write; waited a whole table-version lease',
      );
      await new Promise((resolve) => setTimeout(resolve, this.#leaseMs + SETTLE_MS).unref());
      return;
    }
    const waiting = new Set(members.filter((m) => m !== this.member && !announcement.confirmed.has(m)));
    if (waiting.size === 0) return;
    announcement.waiting = waiting;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#options.log.warn(
          { members: [...waiting], table_id: tableId, version },
          'control planes did not confirm a table version; waited until their leases ended',
        );
        resolve();
      }, this.#leaseMs + SETTLE_MS);
      timer.unref();
      announcement.done = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  #tick(): void {
    // Announcements whose write rolled back are never settled: forgotten after a while.
    const now = performance.now();
    for (const [key, announcement] of this.#announcements) {
      if (now - announcement.at < ANNOUNCEMENT_TTL_MS) break;
      this.#announcements.delete(key);
      this.#bySequence.delete(announcement.sequence);
    }
    if (this.#client === undefined) void this.#connect();
    else void this.#renew();
  }

  /** Opens the listening connection and listens, then renews; retried with backoff until it works. */
  async #connect(): Promise<void> {
    if (this.#connecting || this.#closed || this.#client !== undefined) return;
    this.#connecting = true;
    const client = new pg.Client({
      connectionString: this.#options.url,
      application_name: `bindery-versions-${this.member}`,
      keepAlive: true,
      connectionTimeoutMillis: this.#leaseMs,
      // A renewal that does not answer within a lease is a connection to drop.
      query_timeout: this.#leaseMs,
    });
    client.on('notification', (message) => this.#heard(message.channel, message.payload));
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('the connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}; LISTEN ${ownChannel(this.member)}`);
      if (this.#closed) {
        await client.end().catch(() => undefined);
        return;
      }
      this.#client = client;
      this.#attempts = 0;
      if (this.#warned) this.#options.log.info({}, 'table versions heard from the database again');
      this.#warned = false;
    } catch (error) {
      this.#lost(client, error);
      // Backoff: the next tick tries again only once this delay has passed.
      this.#attempts += 1;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** this.#attempts, 5_000)).unref());
      return;
    } finally {
      this.#connecting = false;
    }
    await this.#renew();
  }

  async #renew(): Promise<void> {
    const client = this.#client;
    if (this.#renewing || this.#closed || client === undefined) return;
    this.#renewing = true;
    try {
      const generation = this.#lease.generation;
      const sent = performance.now();
      // The renewal's own notification must be heard before its answer (see the header): if it
      // is not, the connection no longer hears what it listens for (a pooling proxy between, say).
      const nonce = randomBytes(6).toString('hex');
      this.#expected = nonce;
      await client.query(RENEW_SQL, [this.member, this.#leaseMs, ownChannel(this.member), nonce]);
      if (generation !== this.#lease.generation || this.#closed || client !== this.#client) return;
      if (this.#heardNonce !== nonce) {
        this.#lost(client, new Error('the renewal’s own notification did not arrive before its answer'));
        return;
      }
      if (this.#lease.renewed(sent)) {
        this.#options.log.info(
          { member: this.member },
          'table-version lease taken: reads use the versions announced through the database',
        );
      }
    } catch (error) {
      this.#lost(client, error);
    } finally {
      this.#renewing = false;
    }
  }

  #heard(channel: string, payload: string | undefined): void {
    if (payload === undefined || payload === '') return;
    if (channel !== CHANNEL && payload === this.#expected) {
      this.#heardNonce = payload;
      return;
    }
    if (channel === CHANNEL) {
      const announced = readAnnouncement(payload);
      const writer = announced?.writer;
      if (announced === undefined || writer?.member === this.member) return;
      this.#known.raise(announced.tableId, announced.version);
      // The table's trigger names no writer (nobody waits for it).
      if (writer !== undefined)
        this.#confirm(ownChannel(writer.member), `${this.member}:${String(writer.sequence)}`);
      return;
    }
    const [member, sequence] = payload.split(':');
    const announcement = this.#bySequence.get(Number(sequence));
    if (member !== undefined && announcement !== undefined) confirmedBy(announcement, member);
  }

  /** Sends the confirmations heard in this turn in one statement, on the listening connection. */
  #confirm(channel: string, payload: string): void {
    this.#confirming.push({ channel, payload });
    if (this.#confirming.length > 1) return;
    setImmediate(() => {
      const batch = this.#confirming;
      this.#confirming = [];
      const client = this.#client;
      if (client === undefined) return;
      client
        .query('SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS x(c, p)', [
          batch.map((b) => b.channel),
          batch.map((b) => b.payload),
        ])
        .catch((error: unknown) => this.#lost(client, error));
    });
  }

  /** The listening connection failed: reads go to the database until a new one has renewed. */
  #lost(client: pg.Client, error: unknown): void {
    if (this.#dropped.has(client)) return;
    this.#dropped.add(client);
    if (client === this.#client) this.#client = undefined;
    this.#lease.lapse();
    client.end().catch(() => undefined);
    if (this.#warned || this.#closed) return;
    this.#warned = true;
    this.#options.log.warn(
      { error: error instanceof Error ? error.message : String(error) },
      'the connection that hears table versions was lost: reads take versions from the database until it is back',
    );
  }
}
