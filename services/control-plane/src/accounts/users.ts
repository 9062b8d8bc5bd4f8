/**
 * Users. The root user (created at first start) alone manages users: creates, lists, disables and
 * deletes them. Every other resource belongs to one user and is invisible to the others. A
 * disabled user's tokens are refused and its exposures stop serving, as if each were disabled.
 */
import type {
  PageQuery,
  UpdateUserBody,
  User as UserBody,
  UserDetail,
  UserHoldings,
} from '@bindery/contracts';
import type { User } from '../generated/prisma/client.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { credentialOf, newCredential, newId } from '../domain/ids.ts';
import { usableTokens } from './admin-tokens.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpConfigVersions, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { secretsChanged } from '../secrets/secrets.ts';

const ROOT_NAME = 'root';

/**
 * Makes sure a root user with a usable token exists. With `configuredToken` that token becomes the
 * root token, usable whatever happened to it before (the root user's other unnamed tokens, which
 * earlier starts installed, are deleted; tokens it named through the API stay); without it, a token
 * is generated only when the root user has no usable one. Returns the generated token, to be
 * printed once, or undefined.
 */
export async function ensureRootToken(
  db: Db,
  configuredToken: string | undefined,
): Promise<string | undefined> {
  const root =
    (await db.user.findFirst({ where: { isRoot: true }, orderBy: { id: 'asc' } })) ??
    (await db.user.create({ data: { id: newId('usr'), name: ROOT_NAME, isRoot: true } }));
  if (configuredToken !== undefined) {
    const credential = credentialOf(configuredToken);
    const holder = await db.adminToken.findUnique({ where: { tokenHash: credential.hash } });
    if (holder && holder.userId !== root.id) {
      throw new DomainError('CONFLICT', 'BINDERY_ADMIN_TOKEN is already the token of a non-root user');
    }
    await db.adminToken.deleteMany({
      where: { userId: root.id, name: null, tokenHash: { not: credential.hash } },
    });
    if (!holder) {
      await db.adminToken.create({
        data: { id: newId('tok'), userId: root.id, tokenHash: credential.hash, prefix: credential.prefix },
      });
    } else if (holder.revokedAt !== null || holder.expiresAt !== null) {
      await db.adminToken.update({ where: { id: holder.id }, data: { revokedAt: null, expiresAt: null } });
    }
    return undefined;
  }
  if ((await db.adminToken.count({ where: { userId: root.id, ...usableTokens() } })) > 0) return undefined;
  const credential = newCredential('admin');
  await db.adminToken.create({
    data: { id: newId('tok'), userId: root.id, tokenHash: credential.hash, prefix: credential.prefix },
  });
  return credential.secret;
}

/**
 * True when the database refused a write because another user who signs in with a password has
 * the name (the partial unique index of the sign-in name, which Prisma may report as either).
 */
export function signInNameTaken(error: unknown): boolean {
  return uniqueViolation(error) || String((error as Error | null)?.message).includes('user_sign_in_name_key');
}

export function userBody(user: User): UserBody {
  return {
    id: user.id,
    name: user.name,
    is_root: user.isRoot,
    status: user.disabledAt === null ? 'enabled' : 'disabled',
    disabled_at: user.disabledAt?.toISOString() ?? null,
    created_at: user.createdAt.toISOString(),
  };
}

function requireRoot(caller: Principal, action: string): void {
  if (!caller.isRoot) throw new DomainError('FORBIDDEN', `only the root user can ${action}`);
}

async function findUser(db: Db, id: string): Promise<User> {
  const user = await db.user.findUnique({ where: { id } });
  if (!user) throw notFound('user', id);
  return user;
}

/** Counts of what a user owns (its admin tokens aside, which go with it). */
async function holdingsOf(db: Db, userId: string): Promise<UserHoldings> {
  const where = { userId };
  const [projects, tables, adis, aeis, legacyInstances] = await Promise.all([
    db.project.count({ where }),
    db.table.count({ where }),
    db.adi.count({ where }),
    db.aei.count({ where }),
    db.mcpInstance.count({ where }),
  ]);
  return { projects, tables, adis, aeis, legacy_instances: legacyInstances };
}

/** Creates a user with a first admin token (returned once). Root only. */
export async function createUser(db: Db, caller: Principal, name: string) {
  requireRoot(caller, 'create users');
  const credential = newCredential('admin');
  const user = await db.user.create({
    data: {
      id: newId('usr'),
      name,
      adminTokens: { create: { id: newId('tok'), tokenHash: credential.hash, prefix: credential.prefix } },
    },
  });
  return { id: user.id, name: user.name, token: credential.secret };
}

/** The caller's own user record. */
export async function getMe(db: Db, caller: Principal): Promise<UserBody> {
  return userBody(await db.user.findUniqueOrThrow({ where: { id: caller.userId } }));
}

/** Every user, oldest first. Root only. */
export async function listUsers(db: Db, caller: Principal, query: PageQuery) {
  requireRoot(caller, 'list users');
  const w = pageWindow(query);
  const rows = await db.user.findMany({ where: w.idAfter, orderBy: w.orderBy, take: w.take });
  return toPage(rows, query, userBody);
}

/** One user and what it owns. Root only. */
export async function getUser(db: Db, caller: Principal, id: string): Promise<UserDetail> {
  requireRoot(caller, 'read users');
  const user = await findUser(db, id);
  return { ...userBody(user), owns: await holdingsOf(db, id) };
}

/**
 * Renames, disables or enables a user. Root only; the root user cannot be disabled. Disabling or
 * enabling bumps the config_version of every exposure of the user, so gateways drop what they
 * cached and serve it as disabled (or again) at once.
 */
export async function updateUser(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  input: UpdateUserBody,
): Promise<UserBody> {
  requireRoot(caller, 'change users');
  return changeExposure(ctx, async (tx) => {
    const user = await findUser(tx, id);
    if (input.status === 'disabled' && user.isRoot) {
      throw new DomainError('FORBIDDEN', 'the root user cannot be disabled');
    }
    const disabling = input.status === 'disabled' && user.disabledAt === null;
    const enabling = input.status === 'enabled' && user.disabledAt !== null;
    const updated = await tx.user
      .update({
        where: { id },
        data: {
          ...(input.name !== undefined && { name: input.name }),
          ...(disabling && { disabledAt: new Date() }),
          ...(enabling && { disabledAt: null }),
        },
      })
      .catch((error: unknown) => {
        // Among users who sign in with a password, a name (whatever its case) is one person's.
        if (!signInNameTaken(error)) throw error;
        throw new DomainError(
          'CONFLICT',
          `another user who signs in with a password is named "${input.name ?? user.name}"`,
          { field: 'name' },
        );
      });
    let changedAeis: string[] = [];
    if (disabling || enabling) {
      const aeis = await tx.aei.findMany({ where: { userId: id }, select: { id: true } });
      changedAeis = await bumpConfigVersions(
        tx,
        aeis.map((a) => a.id),
      );
    }
    return { result: userBody(updated), changedAeis };
  });
}

/**
 * Deletes a user and its tokens. Root only; never the root user. While the user owns anything the
 * delete is refused (CONFLICT with the counts) unless `cascade`, which deletes all of it; the
 * gateways are told to drop its exposures. Audit events stay: they outlive what they name.
 */
export async function deleteUser(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  cascade: boolean,
): Promise<void> {
  requireRoot(caller, 'delete users');
  await changeExposure(ctx, async (tx) => {
    const user = await findUser(tx, id);
    if (user.isRoot) throw new DomainError('FORBIDDEN', 'the root user cannot be deleted');
    const owns = await holdingsOf(tx, id);
    if (!cascade && Object.values(owns).some((count) => count > 0)) {
      throw new DomainError(
        'CONFLICT',
        `user "${user.name}" (${id}) owns ${describeHoldings(owns)}; delete those first or pass ?cascade=true`,
        { owns },
      );
    }
    const aeis = await tx.aei.findMany({ where: { userId: id }, select: { id: true } });
    await tx.user.delete({ where: { id } });
    return { result: undefined, changedAeis: aeis.map((a) => a.id) };
  });
  // Their secrets went with them: no control plane keeps a decrypted one.
  secretsChanged(ctx, id);
}

const HOLDING_WORDS: Record<keyof UserHoldings, [string, string]> = {
  projects: ['project', 'projects'],
  tables: ['table', 'tables'],
  adis: ['ADI', 'ADIs'],
  aeis: ['AEI', 'AEIs'],
  legacy_instances: ['legacy instance', 'legacy instances'],
};

/** "2 tables, 1 ADI and 1 AEI": the non-zero counts, in words. */
function describeHoldings(owns: UserHoldings): string {
  const parts = (Object.keys(HOLDING_WORDS) as (keyof UserHoldings)[])
    .filter((key) => owns[key] > 0)
    .map((key) => `${owns[key]} ${HOLDING_WORDS[key][owns[key] === 1 ? 0 : 1]}`);
  return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : (parts[0] ?? 'nothing');
}

/** Whether a row's owner is disabled: the owner's status, read with the row (an exposure, a server). */
export const OWNER_STATUS = { user: { select: { disabledAt: true } } } as const;
export type WithOwner = { user: { disabledAt: Date | null } };
