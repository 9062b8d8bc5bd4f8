/**
 * Users and their admin tokens. The root user (created at first start) owns the root token, which
 * alone may create users; every other resource belongs to one user and is invisible to the others.
 */
import type { User as UserBody } from '@bindery/contracts';
import { DomainError } from '../errors.ts';
import { credentialOf, hashSecret, newCredential, newId } from '../secrets.ts';
import type { Db, Principal } from './context.ts';

const ROOT_NAME = 'root';

/**
 * Makes sure a root user with a usable token exists. With `configuredToken` that token becomes the
 * root token (other root tokens are revoked); without it, a token is generated only when the root
 * user has none yet. Returns the generated token, to be printed once, or undefined.
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
    await db.adminToken.deleteMany({ where: { userId: root.id, tokenHash: { not: credential.hash } } });
    if (!holder) {
      await db.adminToken.create({
        data: { id: newId('tok'), userId: root.id, tokenHash: credential.hash, prefix: credential.prefix },
      });
    }
    return undefined;
  }
  if ((await db.adminToken.count({ where: { userId: root.id } })) > 0) return undefined;
  const credential = newCredential('admin');
  await db.adminToken.create({
    data: { id: newId('tok'), userId: root.id, tokenHash: credential.hash, prefix: credential.prefix },
  });
  return credential.secret;
}

/** The caller behind an admin token, or undefined when the token is unknown. */
export async function authenticate(db: Db, token: string): Promise<Principal | undefined> {
  const row = await db.adminToken.findUnique({
    where: { tokenHash: hashSecret(token) },
    select: { user: { select: { id: true, isRoot: true } } },
  });
  return row ? { userId: row.user.id, isRoot: row.user.isRoot } : undefined;
}

/** Creates a user with a first admin token (returned once). Root only. */
export async function createUser(db: Db, caller: Principal, name: string) {
  if (!caller.isRoot) throw new DomainError('FORBIDDEN', 'only the root token can create users');
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
  const user = await db.user.findUniqueOrThrow({ where: { id: caller.userId } });
  return { id: user.id, name: user.name, is_root: user.isRoot, created_at: user.createdAt.toISOString() };
}
