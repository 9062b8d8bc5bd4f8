/**
 * Callers and their profiles (contracts callers.ts). A profile is an AEI. Each user has a default
 * profile (`user.default_aei_id`, made at the first need) and maps caller names (`vscode`,
 * `claude`) to profiles; a caller entry (a personal MCP key and a caller name) serves the profile
 * its caller maps to, else the default one.
 *
 * Changing a mapping tells the gateways to drop what they cached under the profile the caller had
 * and the one it has now. No config_version moves: what each profile exposes did not change, only
 * which one a caller gets (and the caller lookup's ETag names the AEI, so a remap never matches).
 */
import {
  CALLER_NAME_PATTERN,
  DEFAULT_CALLER,
  isCallerName,
  type CallerIdentity,
  type CallerList,
  type CallerMapping,
  type CallerResolution,
  type ConfigV2,
  type PutCallerBody,
  type StdioConfigs,
} from '@bindery/contracts';
import type { Aei, CallerProfile, PrismaClient } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { newCredential, newId } from '../domain/ids.ts';
import { findOwnAei } from './aeis.ts';
import { serverName, stdioConfigs } from './client-configs.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { changeExposure } from '../domain/config-versions.ts';
import { OWNER_STATUS, type WithOwner } from '../accounts/users.ts';
import { configOf } from './exposure-config.ts';
import { lookupPersonalKey } from '../accounts/mcp-keys.ts';
import type { ClashLog } from './upstream-catalog.ts';

/** The name of a default profile when it is made (its user may rename it like any AEI). */
export const DEFAULT_PROFILE_NAME = 'Default profile';

/** A profile as the caller lookup serves it: an AEI read with its owner's status. */
export type ProfileAei = Aei & WithOwner;

/**
 * The user's default profile, made on first need: a direct, enabled AEI named "Default profile"
 * without bindings, with a fresh api_key that nobody is shown (rotating it through the AEI's key
 * rotation gives one). Two first needs at once end with one default: the maker locks the user's
 * row before anything else, so a concurrent one waits there and then finds the default made.
 * (Making the AEI first and claiming the column after deadlocks instead: each insert holds a share
 * lock on the user's row that the other's claim must wait for.)
 */
export async function defaultProfile(db: PrismaClient, userId: string): Promise<ProfileAei> {
  const user = await db.user.findUnique({
    where: { id: userId },
    select: { defaultAei: { include: OWNER_STATUS } },
  });
  if (!user) throw notFound('user', userId);
  if (user.defaultAei) return user.defaultAei;
  return db.$transaction(async (tx) => {
    const [locked] = await tx.$queryRaw<{ default_aei_id: string | null }[]>`
      SELECT default_aei_id FROM "user" WHERE id = ${userId} FOR UPDATE`;
    if (!locked) throw notFound('user', userId);
    // Made meanwhile by the request this one waited for. Deleting it would clear the column,
    // which waits for this lock: it is still there.
    if (locked.default_aei_id !== null) {
      return tx.aei.findUniqueOrThrow({ where: { id: locked.default_aei_id }, include: OWNER_STATUS });
    }
    const key = newCredential('key');
    const aei = await tx.aei.create({
      data: {
        id: newId('aei'),
        userId,
        name: DEFAULT_PROFILE_NAME,
        apiKeyHash: key.hash,
        apiKeyPrefix: key.prefix,
        status: 'enabled',
        exposureMode: 'direct',
      },
      include: OWNER_STATUS,
    });
    await tx.user.update({ where: { id: userId }, data: { defaultAeiId: aei.id } });
    return aei;
  });
}

/** How a caller resolves now: its mapping, else the default profile (made if need be). */
export async function resolveCaller(
  db: PrismaClient,
  userId: string,
  caller: string | null,
): Promise<{ aei: ProfileAei; via: 'map' | 'default' }> {
  if (caller !== null) {
    const mapped = await db.callerProfile.findUnique({
      where: { userId_caller: { userId, caller } },
      include: { aei: { include: OWNER_STATUS } },
    });
    // Only putCaller writes mappings, to the user's own AEIs; checked here all the same.
    if (mapped && mapped.aei.userId === userId) return { aei: mapped.aei, via: 'map' };
  }
  return { aei: await defaultProfile(db, userId), via: 'default' };
}

function mappingBody(row: CallerProfile & { aei: { name: string } }): CallerMapping {
  return {
    caller: row.caller,
    aei_id: row.aeiId,
    aei_name: row.aei.name,
    updated_at: row.updatedAt.toISOString(),
  };
}

/** The caller's default profile (made if need be) and every caller they mapped, by name. */
export async function listCallers(db: PrismaClient, principal: Principal): Promise<CallerList> {
  const profile = await defaultProfile(db, principal.userId);
  const rows = await db.callerProfile.findMany({
    where: { userId: principal.userId },
    include: { aei: { select: { name: true } } },
    orderBy: { caller: 'asc' },
  });
  return {
    default_profile: { aei_id: profile.id, aei_name: profile.name },
    callers: rows.map(mappingBody),
  };
}

/** The user's default profile's id, if they have one yet (nothing is made). */
async function defaultProfileId(db: Db, userId: string): Promise<string | null> {
  const user = await db.user.findUnique({ where: { id: userId }, select: { defaultAeiId: true } });
  return user?.defaultAeiId ?? null;
}

/**
 * Maps a caller to one of the principal's AEIs (NOT_FOUND for another user's), replacing its
 * mapping if it had one. The gateways drop what they cached under the profile it had (its old
 * mapping, or the default profile) and the one it has now.
 */
export async function putCaller(
  ctx: DomainContext,
  principal: Principal,
  caller: string,
  input: PutCallerBody,
): Promise<CallerMapping> {
  if (caller === DEFAULT_CALLER) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `"${DEFAULT_CALLER}" is reserved: it names the default profile (callers that name none); map another name, or change the default profile itself`,
      { caller },
    );
  }
  return changeExposure(ctx, async (tx) => {
    await lockCallers(tx, principal.userId);
    const aei = await findOwnAei(tx, principal, input.aei_id);
    const key = { userId_caller: { userId: principal.userId, caller } };
    const before = await tx.callerProfile.findUnique({ where: key, select: { aeiId: true } });
    if (!before && (await tx.callerProfile.count({ where: { userId: principal.userId } })) >= MAX_CALLERS) {
      throw new DomainError('CONFLICT', `a user maps at most ${MAX_CALLERS} callers; delete one first`, {
        limit: MAX_CALLERS,
      });
    }
    const previous = before ? before.aeiId : await defaultProfileId(tx, principal.userId);
    const row = await tx.callerProfile.upsert({
      where: key,
      create: { userId: principal.userId, caller, aeiId: aei.id },
      update: { aeiId: aei.id },
      include: { aei: { select: { name: true } } },
    });
    return { result: mappingBody(row), changedAeis: distinct([previous, aei.id]) };
  });
}

/**
 * Removes a caller's mapping (NOT_FOUND when it has none): it gets the default profile again. The
 * gateways drop what they cached under both.
 */
export async function deleteCaller(ctx: DomainContext, principal: Principal, caller: string): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await lockCallers(tx, principal.userId);
    const key = { userId_caller: { userId: principal.userId, caller } };
    const row = await tx.callerProfile.findUnique({ where: key, select: { aeiId: true } });
    const { count } = await tx.callerProfile.deleteMany({ where: { userId: principal.userId, caller } });
    if (!row || count === 0) {
      throw new DomainError('NOT_FOUND', `caller "${caller}" is mapped to no profile`, { caller });
    }
    return {
      result: undefined,
      changedAeis: distinct([row.aeiId, await defaultProfileId(tx, principal.userId)]),
    };
  });
}

/** Callers one user may map: a list a person reads, and a bound on what one account can store. */
export const MAX_CALLERS = 500;

/**
 * Serialises one user's mapping changes (their user row, locked to the end of the transaction), so
 * two changes of a caller at once each name the profile the other left as the one before.
 */
async function lockCallers(tx: Db, userId: string): Promise<void> {
  await tx.$queryRaw`SELECT id FROM "user" WHERE id = ${userId} FOR UPDATE`;
}

function distinct(ids: readonly (string | null)[]): string[] {
  return [...new Set(ids.filter((id): id is string => id !== null))];
}

/**
 * How a caller resolves now (the default profile, made if need be, when it is mapped to none),
 * with the stdio entry's snippets for it.
 */
export async function getCaller(
  db: PrismaClient,
  principal: Principal,
  caller: string,
  gatewayPublicUrl: string,
): Promise<CallerResolution> {
  const { aei, via } = await resolveCaller(db, principal.userId, caller);
  const note =
    via === 'map'
      ? `caller "${caller}" is mapped to profile "${aei.name}": these serve it while that mapping stays`
      : `caller "${caller}" is mapped to no profile: these serve your default profile "${aei.name}" ` +
        `until you map it (PUT /api/v2/callers/${caller})`;
  return {
    caller,
    aei_id: aei.id,
    aei_name: aei.name,
    via,
    stdio_configs: stdioConfigs(gatewayPublicUrl, caller, note),
  };
}

/**
 * The stdio entry's snippets for an AEI's connection answer: for a caller already mapped to it
 * (the first by name), else for its name as a caller name, which must then be mapped to it.
 */
export async function stdioConfigsForAei(
  db: Db,
  gatewayPublicUrl: string,
  aei: { id: string; name: string; default_profile: boolean },
): Promise<StdioConfigs> {
  const mapped = await db.callerProfile.findFirst({
    where: { aeiId: aei.id },
    orderBy: { caller: 'asc' },
    select: { caller: true },
  });
  const caller = mapped?.caller ?? serverName(aei.name);
  const map = `PUT /api/v2/callers/${caller} with {"aei_id": "${aei.id}"}`;
  let note: string;
  if (mapped) {
    note = `caller "${caller}" is mapped to this exposure: these serve it while that mapping stays (${map})`;
  } else if (aei.default_profile) {
    note =
      `this is your default profile: caller "${caller}" gets it while it is mapped to no other ` +
      `profile; to keep it here whatever the default becomes, ${map}`;
  } else {
    note = `caller "${caller}" must be mapped to this exposure for these to serve it: ${map}`;
  }
  return stdioConfigs(gatewayPublicUrl, caller, note);
}

/**
 * The ETag of a caller lookup: the profile, its version and how the caller reached it, so neither
 * a remap nor a mapping to the default profile itself ever matches the old answer.
 */
export function callerEtag(aeiId: string, configVersion: number, via: 'map' | 'default'): string {
  return `"${aeiId}.${configVersion}.${via}"`;
}

export type CallerLookup =
  | { kind: 'aei'; config: ConfigV2; caller: CallerIdentity; etag: string }
  /** The profile's config is still the one the gateway holds (its ETag matched): none was built. */
  | { kind: 'aei-unchanged'; etag: string }
  | { kind: 'unknown' };

/**
 * What a caller entry serves: the personal key's holder, the profile the caller resolves to (the
 * default one, made if need be, when `caller` is null or mapped to none) and its config v2, unless
 * the gateway's ETag (`unchanged`) still names it. An unknown or revoked key, or a key of a
 * disabled user, is `unknown`. A caller name that is not one is VALIDATION_FAILED.
 */
export async function lookupCaller(
  db: PrismaClient,
  personalKey: string,
  caller: string | null,
  unchanged: (etag: string) => boolean = () => false,
  clashes?: ClashLog,
): Promise<CallerLookup> {
  if (caller !== null && !isCallerName(caller)) {
    throw new DomainError('VALIDATION_FAILED', `caller must match pattern "${CALLER_NAME_PATTERN}"`, {
      field: 'caller',
      pattern: CALLER_NAME_PATTERN,
    });
  }
  const holder = await lookupPersonalKey(db, personalKey);
  if (!holder) return { kind: 'unknown' };
  const { aei, via } = await resolveCaller(db, holder.userId, caller);
  const etag = callerEtag(aei.id, aei.configVersion, via);
  if (unchanged(etag)) return { kind: 'aei-unchanged', etag };
  return {
    kind: 'aei',
    config: await configOf(db, aei, clashes),
    caller: { name: caller, via, key_id: holder.keyId, user_id: holder.userId },
    etag,
  };
}
