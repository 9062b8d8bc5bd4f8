/**
 * Personal MCP keys (`bnd_pk_…`): the credentials of the caller entries (the gateway's
 * `/api/v2/mcp/caller/{caller}`, the stdio entry `bindery-mcp <caller>`, the REST entry with a
 * caller). Each user creates, lists, rotates and deletes their own. Only a key's SHA-256 and a
 * display prefix are stored; the key itself is in its creation (or rotation) answer only.
 *
 * Deleting or rotating a key announces every AEI of its user to the gateways: what a gateway
 * cached for a key is indexed under the profile its caller resolved to, which may be any of them,
 * and announcing them all is what drops every entry of that key at once.
 */
import type { CreateMcpKeyBody, McpKey as McpKeyBody, McpKeyWithSecret, PageQuery } from '@bindery/contracts';
import { isWellFormedPersonalKey } from '@bindery/contracts';
import type { McpKey } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { hashSecret, newCredential, newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';

/** last_used_at is written at most this often per key: a write per lookup would cost every session. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function mcpKeyBody(key: McpKey): McpKeyBody {
  return {
    id: key.id,
    name: key.name,
    key_prefix: key.keyPrefix,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
  };
}

/** The caller's key, or NOT_FOUND (also for other users' keys). */
async function findOwnKey(db: Db, caller: Principal, id: string): Promise<McpKey> {
  const key = await db.mcpKey.findFirst({ where: { id, userId: caller.userId } });
  if (!key) throw notFound('MCP key', id);
  return key;
}

/** The ids of every AEI of a user: what the gateways drop when one of the user's keys goes. */
async function aeiIdsOf(db: Db, userId: string): Promise<string[]> {
  const rows = await db.aei.findMany({ where: { userId }, select: { id: true } });
  return rows.map((r) => r.id);
}

/** Personal keys one user may hold (one per device or script is plenty). */
export const MAX_MCP_KEYS = 100;

/** Creates a personal MCP key for the caller; the answer holds the key, shown this once. */
export async function createMcpKey(
  db: Db,
  caller: Principal,
  input: CreateMcpKeyBody,
): Promise<McpKeyWithSecret> {
  // Counted before the insert without a lock: a burst may pass the cap by a few, which bounds
  // storage all the same.
  if ((await db.mcpKey.count({ where: { userId: caller.userId } })) >= MAX_MCP_KEYS) {
    throw new DomainError(
      'CONFLICT',
      `a user holds at most ${MAX_MCP_KEYS} personal keys; delete one first`,
      {
        limit: MAX_MCP_KEYS,
      },
    );
  }
  const credential = newCredential('personal');
  const key = await db.mcpKey.create({
    data: {
      id: newId('mck'),
      userId: caller.userId,
      name: input.name,
      keyHash: credential.hash,
      keyPrefix: credential.prefix,
    },
  });
  return { ...mcpKeyBody(key), key: credential.secret };
}

/** The caller's own keys, oldest first (never a key itself). */
export async function listMcpKeys(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.mcpKey.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
  });
  return toPage(rows, query, mcpKeyBody);
}

/** Deletes one of the caller's keys: it stops working at once, on every gateway. */
export async function deleteMcpKey(ctx: DomainContext, caller: Principal, id: string): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await findOwnKey(tx, caller, id);
    await tx.mcpKey.deleteMany({ where: { id } });
    return { result: undefined, changedAeis: await aeiIdsOf(tx, caller.userId) };
  });
}

/**
 * Replaces one of the caller's keys, keeping its id and name: the old key stops working at once,
 * the new one is in this answer only. last_used_at starts again (the new key was never used).
 */
export async function rotateMcpKey(
  ctx: DomainContext,
  caller: Principal,
  id: string,
): Promise<McpKeyWithSecret> {
  return changeExposure(ctx, async (tx) => {
    await findOwnKey(tx, caller, id);
    const credential = newCredential('personal');
    const key = await tx.mcpKey.update({
      where: { id },
      data: { keyHash: credential.hash, keyPrefix: credential.prefix, lastUsedAt: null },
    });
    return {
      result: { ...mcpKeyBody(key), key: credential.secret },
      changedAeis: await aeiIdsOf(tx, caller.userId),
    };
  });
}

/** Who holds a personal key. */
export interface PersonalKeyHolder {
  keyId: string;
  userId: string;
}

/**
 * The holder of a personal key, or undefined when no key matches (never issued, deleted, rotated
 * away) or its user is disabled: a gateway is told no more than "unknown" either way. Looked up by
 * the key's SHA-256; records when the key was last used (to the minute).
 */
export async function lookupPersonalKey(db: Db, key: string): Promise<PersonalKeyHolder | undefined> {
  // A string that could never have been issued costs no query.
  if (!isWellFormedPersonalKey(key)) return undefined;
  const row = await db.mcpKey.findUnique({
    where: { keyHash: hashSecret(key) },
    include: { user: { select: { disabledAt: true } } },
  });
  if (!row || row.user.disabledAt !== null) return undefined;
  const now = Date.now();
  if (row.lastUsedAt === null || now - row.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
    // Conditional, so concurrent lookups of one key write it once a minute at most.
    await db.mcpKey.updateMany({
      where: {
        id: row.id,
        OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now - LAST_USED_RESOLUTION_MS) } }],
      },
      data: { lastUsedAt: new Date(now) },
    });
  }
  return { keyId: row.id, userId: row.userId };
}
