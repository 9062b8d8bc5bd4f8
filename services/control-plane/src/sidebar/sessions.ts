/**
 * Sidebar sessions: a person opens one (the console does when the sidebar opens) and gets a
 * short-lived token an agent may drive it with. Only the token's SHA-256 is stored. A token works
 * on its own session's command and proposal routes and nowhere else: the admin API looks tokens up
 * among admin tokens, the gateway among api keys, personal keys and its OAuth tokens, and none of
 * them holds it.
 */
import type { CreateSidebarSessionBody, SidebarSession as SessionBody } from '@bindery/contracts';
import type { SidebarSession } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { hashSecret, newCredential, newId } from '../domain/ids.ts';
import type { Db, Principal } from '../domain/context.ts';
import { findOwnTable } from '../context/tables.ts';
import { contextPointer } from './paths.ts';

export const DEFAULT_SESSION_TTL_SECONDS = 3_600;
/** Sessions one person may hold open at once (each console tab opens one). */
export const MAX_OPEN_SESSIONS = 50;

/** Who acts on a sidebar route: the person (an admin token of theirs) or an agent (a session token). */
export type SidebarActor =
  { kind: 'person'; principal: Principal } | { kind: 'agent'; userId: string; sessionId: string };

export function actorUser(actor: SidebarActor): string {
  return actor.kind === 'person' ? actor.principal.userId : actor.userId;
}

export function sessionBody(s: SidebarSession): SessionBody {
  return {
    id: s.id,
    status: s.status === 'paused' || s.status === 'ended' ? s.status : 'active',
    table_id: s.tableId,
    path: s.pointer,
    expires_at: s.expiresAt.toISOString(),
    created_at: s.createdAt.toISOString(),
  };
}

export async function createSession(db: Db, caller: Principal, body: CreateSidebarSessionBody) {
  let pointer = '';
  if (body.table_id !== undefined) {
    await findOwnTable(db, caller, body.table_id);
    pointer = contextPointer(body.path ?? '');
  }
  const open = await db.sidebarSession.count({
    where: { userId: caller.userId, status: { not: 'ended' }, expiresAt: { gt: new Date() } },
  });
  if (open >= MAX_OPEN_SESSIONS) {
    throw new DomainError(
      'RATE_LIMITED',
      `you have ${open} open sidebar sessions; end one (PATCH its status to "ended") before opening another`,
      { limit: MAX_OPEN_SESSIONS },
    );
  }
  const credential = newCredential('sidebar');
  const ttl = body.ttl_seconds ?? DEFAULT_SESSION_TTL_SECONDS;
  const row = await db.sidebarSession.create({
    data: {
      id: newId('sbs'),
      userId: caller.userId,
      tokenHash: credential.hash,
      tableId: body.table_id ?? null,
      pointer,
      expiresAt: new Date(Date.now() + ttl * 1000),
    },
  });
  return { id: row.id, token: credential.secret, expires_at: row.expiresAt.toISOString() };
}

/** The session a sidebar token opens; UNAUTHORIZED (saying why) when unknown, expired or ended. */
export async function authenticateSidebarToken(db: Db, token: string): Promise<SidebarActor> {
  const row = await db.sidebarSession.findUnique({
    where: { tokenHash: hashSecret(token) },
    include: { user: { select: { disabledAt: true } } },
  });
  if (!row) throw new DomainError('UNAUTHORIZED', 'unknown sidebar token');
  if (row.status === 'ended') {
    throw new DomainError('UNAUTHORIZED', `sidebar session ${row.id} has ended`, { reason: 'ended' });
  }
  if (row.expiresAt <= new Date()) {
    throw new DomainError(
      'UNAUTHORIZED',
      `sidebar session ${row.id} expired at ${row.expiresAt.toISOString()}`,
      {
        reason: 'expired',
      },
    );
  }
  if (row.user.disabledAt !== null) {
    throw new DomainError('UNAUTHORIZED', "the sidebar session's user is disabled", {
      reason: 'user_disabled',
    });
  }
  return { kind: 'agent', userId: row.userId, sessionId: row.id };
}

/**
 * The session `id` as `actor` may use it: the person's own, or the agent's own (any other is
 * NOT_FOUND, so a token learns nothing of other sessions). `use` also refuses an ended session and,
 * for an agent, a paused one.
 */
export async function sessionFor(
  db: Db,
  actor: SidebarActor,
  id: string,
  use = false,
): Promise<SidebarSession> {
  if (actor.kind === 'agent' && actor.sessionId !== id) throw notFound('sidebar session', id);
  const row = await db.sidebarSession.findFirst({ where: { id, userId: actorUser(actor) } });
  if (!row) throw notFound('sidebar session', id);
  if (use && row.status === 'ended') {
    throw new DomainError('CONFLICT', `sidebar session ${id} has ended; open a new one`, { status: 'ended' });
  }
  if (use && actor.kind === 'agent' && row.status === 'paused') {
    throw new DomainError('FORBIDDEN', `the person paused sidebar session ${id}; wait until they resume it`, {
      status: 'paused',
    });
  }
  if (use && row.expiresAt <= new Date()) {
    throw new DomainError('CONFLICT', `sidebar session ${id} expired; open a new one`, { status: 'expired' });
  }
  return row;
}

export async function listSessions(db: Db, caller: Principal): Promise<SessionBody[]> {
  const rows = await db.sidebarSession.findMany({
    where: { userId: caller.userId, status: { not: 'ended' }, expiresAt: { gt: new Date() } },
    orderBy: { id: 'desc' },
    take: 50,
  });
  return rows.map(sessionBody);
}

/** Pauses, resumes or ends a session (the person only); ending withdraws its pending proposals. */
export async function setSessionStatus(
  db: Db,
  caller: Principal,
  id: string,
  status: 'active' | 'paused' | 'ended',
): Promise<SessionBody> {
  const row = await sessionFor(db, { kind: 'person', principal: caller }, id);
  if (row.status === 'ended' && status !== 'ended') {
    throw new DomainError('CONFLICT', `sidebar session ${id} has ended; open a new one`, { status: 'ended' });
  }
  return db.$transaction(async (tx) => {
    // Conditional: an end that lands first is never undone by a resume racing it.
    const moved = await tx.sidebarSession.updateMany({
      where: { id, status: { not: 'ended' } },
      data: { status },
    });
    if (moved.count === 0 && status !== 'ended') {
      throw new DomainError('CONFLICT', `sidebar session ${id} has ended; open a new one`, {
        status: 'ended',
      });
    }
    const updated = await tx.sidebarSession.findUniqueOrThrow({ where: { id } });
    if (status === 'ended') {
      await tx.sidebarProposal.updateMany({
        where: { sessionId: id, status: 'pending' },
        data: { status: 'withdrawn', decidedAt: new Date(), decidedBy: caller.userId },
      });
    }
    return sessionBody(updated);
  });
}
