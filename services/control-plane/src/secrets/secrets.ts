/**
 * Each user's secrets: created, listed, replaced and deleted by name, values encrypted with the
 * keyring before they reach the database. Nothing here ever returns a value: the API shows names
 * and timestamps, and only `resolveSecrets` (secret-references.ts) decrypts, for a tool's call.
 */
import {
  MAX_SECRET_VALUE_BYTES,
  MIN_SECRET_VALUE_CHARS,
  type PageQuery,
  type Secret,
} from '@bindery/contracts';
import type { Secret as SecretRow } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';
import { requireKeyring } from './secret-keyring.ts';
import { forgetSecrets, valueChars } from './secret-references.ts';

/** The API's view of a secret: never the value. */
function secretBody(row: Pick<SecretRow, 'name' | 'createdAt' | 'updatedAt' | 'lastUsedAt'>): Secret {
  return {
    name: row.name,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
  };
}

/**
 * The bounds of a value: at least MIN_SECRET_VALUE_CHARS characters (a shorter one cannot be told
 * apart from ordinary text in answers), at most MAX_SECRET_VALUE_BYTES bytes of UTF-8 (the schema
 * bounds characters, which may take up to 4 bytes each).
 */
function checkValue(value: string): void {
  const chars = valueChars(value);
  if (chars < MIN_SECRET_VALUE_CHARS) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `body/value is ${chars} character${chars === 1 ? '' : 's'}; a secret holds at least ${MIN_SECRET_VALUE_CHARS}, since its value is taken out of every tool answer and a shorter one is ordinary text (a letter, a word) that could not be taken out without garbling answers and showing what it is`,
      { location: 'body', pointer: '/value', rule: 'min_length', min_length: MIN_SECRET_VALUE_CHARS },
    );
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_SECRET_VALUE_BYTES) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `body/value is ${bytes} bytes of UTF-8; a secret holds at most ${MAX_SECRET_VALUE_BYTES}`,
      { location: 'body', pointer: '/value', max_bytes: MAX_SECRET_VALUE_BYTES },
    );
  }
}

const notFound = (name: string) =>
  new DomainError('NOT_FOUND', `you have no secret named ${name}`, { secret: name });

/** Stores a new secret for the caller; a name the caller already uses is CONFLICT. */
export async function createSecret(
  ctx: Pick<DomainContext, 'prisma' | 'keyring'> & Partial<Pick<DomainContext, 'listener'>>,
  caller: Principal,
  input: { name: string; value: string },
): Promise<Secret> {
  const keyring = requireKeyring(ctx);
  checkValue(input.value);
  const sealed = keyring.seal(input.value, { userId: caller.userId, name: input.name });
  try {
    const row = await ctx.prisma.secret.create({
      data: { id: newId('sec'), userId: caller.userId, name: input.name, ...sealed },
    });
    secretsChanged(ctx, caller.userId);
    return secretBody(row);
  } catch (error) {
    if (uniqueViolation(error)) {
      throw new DomainError(
        'CONFLICT',
        `you already have a secret named ${input.name}; replace its value with PUT /api/v2/secrets/${input.name}`,
        { secret: input.name },
      );
    }
    throw error;
  }
}

/** The caller's secrets, oldest first, without values. Needs no key: nothing is decrypted. */
export async function listSecrets(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.secret.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
    select: { id: true, name: true, createdAt: true, updatedAt: true, lastUsedAt: true },
  });
  return toPage(rows, query, secretBody);
}

/** Replaces a secret's value (encrypted with the current key, whichever key wrote the old one). */
export async function updateSecret(
  ctx: Pick<DomainContext, 'prisma' | 'keyring'> & Partial<Pick<DomainContext, 'listener'>>,
  caller: Principal,
  name: string,
  value: string,
): Promise<Secret> {
  const keyring = requireKeyring(ctx);
  checkValue(value);
  const sealed = keyring.seal(value, { userId: caller.userId, name });
  const updated = await ctx.prisma.secret.updateMany({
    where: { userId: caller.userId, name },
    data: sealed,
  });
  if (updated.count === 0) throw notFound(name);
  secretsChanged(ctx, caller.userId);
  const row = await ctx.prisma.secret.findUnique({ where: { userId_name: { userId: caller.userId, name } } });
  // Deleted between the two statements: as if the delete came after the update.
  if (!row) throw notFound(name);
  return secretBody(row);
}

/** Deletes one of the caller's secrets. Needs no key, so secrets stay removable without one. */
export async function deleteSecret(
  ctx: Pick<DomainContext, 'prisma' | 'listener'>,
  caller: Principal,
  name: string,
): Promise<void> {
  const deleted = await ctx.prisma.secret.deleteMany({ where: { userId: caller.userId, name } });
  if (deleted.count === 0) throw notFound(name);
  secretsChanged(ctx, caller.userId);
}

/** What this control plane decrypted of the user's secrets is dropped now; the others are told. */
export function secretsChanged(ctx: Partial<Pick<DomainContext, 'listener'>>, userId: string): void {
  forgetSecrets(userId);
  ctx.listener?.secretsChanged?.(userId);
}
