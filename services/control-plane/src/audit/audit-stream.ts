/**
 * The live audit trail behind `GET /api/v2/audit/stream`: each control plane has one hub, and every
 * stream open on it shares the hub's one poller.
 *
 * Rows may be written by any control plane, so the hub reads them from the database rather than
 * hearing them from this process's writer. While any stream is open it asks, every `pollMs`, for
 * the rows of the users with a stream whose id is newer than `lookbackMs` ago (ids start with their
 * creation time), and hands each row it has not seen yet to the streams of its user whose filters
 * it matches. Reading a window rather than "after the last id seen" is what makes this right with
 * several writers: a row can commit after a row with a later id (another control plane's INSERT
 * finished first, or its clock is a little behind), and it is still in the window when it shows up.
 * The audit writer makes a row's id just before its INSERT, so the window only has to cover an
 * INSERT's time plus the clock skew between control planes; rows seen are remembered for as long
 * as they are in the window, so none is sent twice.
 *
 * A user's rows already written when their first stream opens are marked seen before it starts
 * (the stream shows what happens from then on); a stream opened with the id of an event it already
 * has (Last-Event-ID) is first sent the user's matching rows after that id, then joins the live
 * rows, skipping those it was already sent.
 */
import type { AuditEvent as AuditEventBody, AuditStreamQuery } from '@bindery/contracts';
import type { AuditEvent } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import { auditBody } from './audit.ts';
import type { Db } from '../domain/context.ts';

export interface AuditStreamOptions {
  /** How often the hub reads new rows while a stream is open. */
  pollMs: number;
  /** How far back (by the ids' time) each read looks for rows committed late. */
  lookbackMs: number;
  /** Streams open at most per user; one more is refused (RATE_LIMITED). */
  perUser: number;
  /** Streams open at most on this control plane. */
  total: number;
  /** Rows per read. */
  pageSize: number;
  /** How often an idle stream gets a `: keep-alive` comment, so proxies and browsers keep it open. */
  keepAliveMs: number;
  /** The operator's trace page template (TRACE_URL_TEMPLATE): rows with a trace id link to it. */
  traceUrl?: string | undefined;
}

export const AUDIT_STREAM_DEFAULTS: AuditStreamOptions = {
  pollMs: 500,
  lookbackMs: 5_000,
  perUser: 5,
  total: 200,
  pageSize: 500,
  keepAliveMs: 15_000,
};

/** Where a stream's events go (the HTTP answer). */
export interface AuditSink {
  event(event: AuditEventBody): void;
  /** Resolves once the client has taken what was sent (or is gone). */
  drained(): Promise<void>;
  /** Ends the stream (the hub is closing). */
  end(): void;
}

/** A slot taken by `reserve`: start it, or release it. */
export interface AuditStreamTicket {
  /**
   * Marks the user's rows written so far as seen (on their first stream), then starts delivery: the
   * rows after `after` first when given (sent from the background, so the answer can start), then
   * the live rows. Rejects (and releases the slot) when `after` is not one of the user's events or
   * the database fails.
   */
  start(sink: AuditSink): Promise<void>;
  /** Stops delivery and frees the slot; the last stream of a user drops its state, the last of all stops the poller. */
  release(): void;
}

const ID_PREFIX = 'evt_';
const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/** The smallest id made at `ms` or later: every such id sorts after it. */
export function auditIdFloor(ms: number): string {
  let time = Math.max(0, Math.floor(ms));
  let stamp = '';
  for (let i = 0; i < 10; i++) {
    stamp = CROCKFORD[time % 32] + stamp;
    time = Math.floor(time / 32);
  }
  return ID_PREFIX + stamp;
}

function matches(filter: AuditStreamQuery, event: AuditEventBody): boolean {
  return (
    (filter.aei_id === undefined || event.aei_id === filter.aei_id) &&
    (filter.status === undefined || event.status === filter.status) &&
    (filter.caller === undefined || event.caller === filter.caller) &&
    (filter.tool_name === undefined || event.tool_name === filter.tool_name)
  );
}

class Subscription {
  sink: AuditSink | undefined;
  /** Live rows that arrived while the rows after Last-Event-ID were being sent. */
  held: AuditEventBody[] | undefined;
  /** Ids sent from the database after Last-Event-ID that the poller may still find new. */
  readonly sent = new Set<string>();
  closed = false;

  constructor(
    readonly userId: string,
    readonly filter: AuditStreamQuery,
  ) {}

  offer(event: AuditEventBody): void {
    if (this.closed || !this.sink || !matches(this.filter, event)) return;
    if (this.held) {
      this.held.push(event);
      return;
    }
    if (this.sent.size > 0 && this.sent.delete(event.id)) return;
    this.sink.event(event);
  }
}

interface UserState {
  subscriptions: Set<Subscription>;
  /** The ids read in the window so far (only once `ready`). */
  seen: Set<string>;
  ready: boolean;
  priming: Promise<void> | undefined;
}

export class AuditStreamHub {
  readonly #db: Db;
  readonly #options: AuditStreamOptions;
  readonly #log: { warn(details: object, message: string): void } | undefined;
  readonly #users = new Map<string, UserState>();
  #open = 0;
  #timer: NodeJS.Timeout | undefined;
  #polling = false;
  #closed = false;

  constructor(
    db: Db,
    options: Partial<AuditStreamOptions> = {},
    log?: { warn(details: object, message: string): void },
  ) {
    this.#db = db;
    this.#options = { ...AUDIT_STREAM_DEFAULTS, ...options };
    this.#log = log;
  }

  get options(): Readonly<AuditStreamOptions> {
    return this.#options;
  }

  /** Streams open now. */
  get open(): number {
    return this.#open;
  }

  /** True while the poller runs (a read in flight, or the next one due). */
  get polling(): boolean {
    return this.#timer !== undefined || this.#polling;
  }

  /** Takes a stream slot for `userId`, or throws RATE_LIMITED when the user or the server has no more. */
  reserve(userId: string, filter: AuditStreamQuery, after?: string): AuditStreamTicket {
    if (this.#closed) throw new DomainError('RATE_LIMITED', 'the server is shutting down: reconnect shortly');
    const state = this.#users.get(userId);
    const mine = state?.subscriptions.size ?? 0;
    if (mine >= this.#options.perUser) {
      throw new DomainError(
        'RATE_LIMITED',
        `at most ${this.#options.perUser} audit streams may be open per user on a control plane: close one first`,
        { limit: this.#options.perUser },
      );
    }
    if (this.#open >= this.#options.total) {
      throw new DomainError(
        'RATE_LIMITED',
        `this control plane has ${this.#options.total} audit streams open, its limit: try again later`,
        { limit: this.#options.total },
      );
    }
    const user: UserState = state ?? {
      subscriptions: new Set(),
      seen: new Set(),
      ready: false,
      priming: undefined,
    };
    this.#users.set(userId, user);
    const sub = new Subscription(userId, filter);
    user.subscriptions.add(sub);
    this.#open += 1;
    const release = () => {
      if (sub.closed) return;
      sub.closed = true;
      sub.sent.clear();
      sub.held = undefined;
      this.#open -= 1;
      user.subscriptions.delete(sub);
      if (user.subscriptions.size === 0 && this.#users.get(userId) === user) this.#users.delete(userId);
      if (this.#users.size === 0) this.#stop();
    };
    const start = async (sink: AuditSink) => {
      try {
        if (after !== undefined) {
          const anchor = await this.#db.auditEvent.findFirst({
            where: { id: after, userId },
            select: { id: true },
          });
          if (!anchor) {
            throw new DomainError(
              'VALIDATION_FAILED',
              `Last-Event-ID ${after} is not one of your audit events`,
              {
                field: 'Last-Event-ID',
              },
            );
          }
          sub.held = [];
        }
        if (!user.ready) {
          user.priming ??= this.#prime(userId, user);
          await user.priming;
        }
        if (sub.closed) return;
        sub.sink = sink;
        this.#schedule();
      } catch (error) {
        release();
        throw error;
      }
      if (after !== undefined) {
        this.#catchUp(sub, after, sink).catch((error: unknown) => {
          this.#log?.warn({ err: error }, 'could not read the audit events after Last-Event-ID');
          sink.end();
          release();
        });
      }
    };
    return { start, release };
  }

  /** Ends every stream and stops the poller (the app is closing). */
  close(): void {
    this.#closed = true;
    for (const user of [...this.#users.values()]) {
      for (const sub of [...user.subscriptions]) sub.sink?.end();
    }
    this.#stop();
  }

  /** Marks the user's rows in the window as seen, so their first stream starts from now. */
  async #prime(userId: string, user: UserState): Promise<void> {
    try {
      const floor = auditIdFloor(Date.now() - this.#options.lookbackMs);
      await this.#read([userId], floor, (row) => user.seen.add(row.id));
      user.ready = true;
    } finally {
      user.priming = undefined;
    }
  }

  /** Sends `sub` its user's matching rows after `after`, then the live rows held meanwhile. */
  async #catchUp(sub: Subscription, after: string, sink: AuditSink): Promise<void> {
    const { aei_id, status, caller, tool_name } = sub.filter;
    let cursor = after;
    for (;;) {
      const rows = await this.#db.auditEvent.findMany({
        where: {
          userId: sub.userId,
          id: { gt: cursor },
          ...(aei_id !== undefined && { aeiId: aei_id }),
          ...(status !== undefined && { status }),
          ...(caller !== undefined && { caller }),
          ...(tool_name !== undefined && { toolName: tool_name }),
        },
        orderBy: { id: 'asc' },
        take: this.#options.pageSize,
      });
      if (sub.closed) return;
      const floor = auditIdFloor(Date.now() - this.#options.lookbackMs);
      for (const row of rows) {
        // Rows older than the window are never new to the poller: no need to remember them.
        if (row.id >= floor) sub.sent.add(row.id);
        sink.event(auditBody(row, this.#options.traceUrl));
      }
      if (rows.length < this.#options.pageSize) break;
      cursor = rows.at(-1)!.id;
      await sink.drained();
      if (sub.closed) return;
    }
    const held = sub.held ?? [];
    sub.held = undefined;
    for (const event of held) sub.offer(event);
  }

  /** Reads the rows of `users` with an id above `floor`, page by page, in id order. */
  async #read(users: string[], floor: string, each: (row: AuditEvent) => void): Promise<void> {
    let cursor = floor;
    for (;;) {
      const rows = await this.#db.auditEvent.findMany({
        where: { userId: users.length === 1 ? users[0]! : { in: users }, id: { gt: cursor } },
        orderBy: { id: 'asc' },
        take: this.#options.pageSize,
      });
      for (const row of rows) each(row);
      if (rows.length < this.#options.pageSize) return;
      cursor = rows.at(-1)!.id;
    }
  }

  #schedule(): void {
    if (this.#timer || this.#polling || this.#closed || this.#users.size === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#poll();
    }, this.#options.pollMs);
  }

  #stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #poll(): Promise<void> {
    this.#polling = true;
    try {
      const users = [...this.#users].filter(([, user]) => user.ready).map(([id]) => id);
      if (users.length === 0) return;
      const floor = auditIdFloor(Date.now() - this.#options.lookbackMs);
      await this.#read(users, floor, (row) => {
        const user = this.#users.get(row.userId);
        if (!user?.ready || user.seen.has(row.id)) return;
        user.seen.add(row.id);
        const event = auditBody(row, this.#options.traceUrl);
        for (const sub of user.subscriptions) sub.offer(event);
      });
      for (const user of this.#users.values()) {
        for (const id of user.seen) if (id <= floor) user.seen.delete(id);
        for (const sub of user.subscriptions) for (const id of sub.sent) if (id <= floor) sub.sent.delete(id);
      }
    } catch (error) {
      this.#log?.warn({ err: error }, 'could not read new audit events for the live streams');
    } finally {
      this.#polling = false;
      this.#schedule();
    }
  }
}
