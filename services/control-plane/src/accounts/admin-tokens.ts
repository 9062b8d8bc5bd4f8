/**
 * Admin tokens: the credentials of the admin API. Each user names, lists and revokes their own;
 * a token may expire. Only the token's SHA-256 and a display prefix are stored, and the token
 * itself is in its creation answer only. Authentication tells a caller why their own token no
 * longer works (revoked, expired, user disabled); about other tokens it says nothing, since the
 * lookup is by the hash of the token presented.
 */
import type {
  AdminToken as AdminTokenBody,
  CreateTokenBody,
  PageQuery,
  TokenStatus,
} from '@bindery/contracts';
import type { AdminToken } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { hashSecret, newCredential, newId } from '../domain/ids.ts';
import type { Db, Principal } from '../domain/context.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';

const DAY_MS = 86_400_000;
/** last_used_at is written at most this often per token: a write per request would cost every call. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** How a token is named in messages to its holder: its name, else its display prefix. */
function tokenLabel(token: Pick<AdminToken, 'name' | 'prefix'>): string {
  return token.name !== null ? `admin token "${token.name}"` : `admin token ${token.prefix}…`;
}

export function tokenStatus(
  token: Pick<AdminToken, 'revokedAt' | 'expiresAt'>,
  now = new Date(),
): TokenStatus {
  if (token.revokedAt !== null) return 'revoked';
  if (token.expiresAt !== null && token.expiresAt <= now) return 'expired';
  return 'active';
}

/** The usable tokens of a user, as a Prisma filter: not revoked, not expired. */
export function usableTokens(now = new Date()) {
  return { revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
}

/**
 * The caller behind an admin token. UNAUTHORIZED, saying why, when the token is unknown, revoked
 * or expired, or its user is disabled. Records when the token was last used (to the minute).
 */
export async function authenticate(db: Db, token: string): Promise<Principal> {
  const row = await db.adminToken.findUnique({
    where: { tokenHash: hashSecret(token) },
    include: { user: { select: { id: true, name: true, isRoot: true, disabledAt: true } } },
  });
  if (!row) throw new DomainError('UNAUTHORIZED', 'unknown admin token');
  const now = new Date();
  switch (tokenStatus(row, now)) {
    case 'revoked':
      throw new DomainError(
        'UNAUTHORIZED',
        `${tokenLabel(row)} was revoked at ${row.revokedAt?.toISOString()}; use another token or ask for a new one`,
        { reason: 'revoked' },
      );
    case 'expired':
      throw new DomainError(
        'UNAUTHORIZED',
        `${tokenLabel(row)} expired at ${row.expiresAt?.toISOString()}; use another token or ask for a new one`,
        { reason: 'expired' },
      );
    case 'active':
      break;
  }
  if (row.user.disabledAt !== null) {
    throw new DomainError(
      'UNAUTHORIZED',
      `user "${row.user.name}" (${row.user.id}) is disabled; the root admin can enable it again`,
      { reason: 'user_disabled' },
    );
  }
  if (row.lastUsedAt === null || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
    // Conditional, so concurrent requests with one token write it once.
    await db.adminToken.updateMany({
      where: {
        id: row.id,
        OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - LAST_USED_RESOLUTION_MS) } }],
      },
      data: { lastUsedAt: now },
    });
  }
  return { userId: row.user.id, isRoot: row.user.isRoot, tokenId: row.id };
}

export function tokenBody(token: AdminToken, caller: Principal): AdminTokenBody {
  return {
    id: token.id,
    name: token.name,
    prefix: token.prefix,
    status: tokenStatus(token),
    current: token.id === caller.tokenId,
    created_at: token.createdAt.toISOString(),
    last_used_at: token.lastUsedAt?.toISOString() ?? null,
    expires_at: token.expiresAt?.toISOString() ?? null,
    revoked_at: token.revokedAt?.toISOString() ?? null,
  };
}

/** When a token created now with this body expires: null for never. */
function expiryOf(input: CreateTokenBody, now: Date): Date | null {
  if (input.expires_at !== undefined && input.expires_in_days !== undefined) {
    throw new DomainError('VALIDATION_FAILED', 'give expires_at or expires_in_days, not both', {
      field: 'expires_at',
    });
  }
  if (input.expires_in_days !== undefined) return new Date(now.getTime() + input.expires_in_days * DAY_MS);
  if (input.expires_at === undefined) return null;
  const at = new Date(input.expires_at);
  if (Number.isNaN(at.getTime())) {
    throw new DomainError('VALIDATION_FAILED', `expires_at is not a valid date-time: "${input.expires_at}"`, {
      field: 'expires_at',
    });
  }
  if (at <= now) {
    throw new DomainError('VALIDATION_FAILED', `expires_at must be in the future, got ${at.toISOString()}`, {
      field: 'expires_at',
    });
  }
  return at;
}

/** Creates a named admin token for the caller; the answer holds the token, shown this once. */
export async function createToken(db: Db, caller: Principal, input: CreateTokenBody) {
  const now = new Date();
  const expiresAt = expiryOf(input, now);
  const credential = newCredential('admin');
  const token = await db.adminToken.create({
    data: {
      id: newId('tok'),
      userId: caller.userId,
      tokenHash: credential.hash,
      prefix: credential.prefix,
      name: input.name,
      expiresAt,
    },
  });
  return { ...tokenBody(token, caller), token: credential.secret };
}

/** The caller's own tokens (revoked and expired ones included), oldest first. */
export async function listTokens(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.adminToken.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
  });
  return toPage(rows, query, (row) => tokenBody(row, caller));
}

/**
 * Revokes one of the caller's tokens (the one in use included): it stops working at once. Revoking
 * a revoked token changes nothing. Another user's token is NOT_FOUND, as for any other resource.
 */
export async function revokeToken(db: Db, caller: Principal, id: string): Promise<void> {
  const token = await db.adminToken.findFirst({ where: { id, userId: caller.userId } });
  if (!token) throw notFound('admin token', id);
  if (token.revokedAt === null) {
    await db.adminToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
  }
}
