/**
 * AEIs: exposures with their own api_key (shown once, stored as SHA-256 + display prefix). One of a
 * user's AEIs may be their default profile (callers.ts): the body says so.
 */
import type { Aei as AeiBody, CreateAeiBody, PageQuery, UpdateAeiBody } from '@bindery/contracts';
import type { Aei } from '../generated/prisma/client.ts';
import { notFound } from '../domain/errors.ts';
import { newCredential, newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpConfigVersions, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';

/** Whether an AEI is its owner's default profile, read with the AEI. */
export const DEFAULT_OF = { defaultOf: { select: { id: true } } } as const;
type WithDefaultOf = { defaultOf: { id: string } | null };

export function aeiBody(aei: Aei & WithDefaultOf): AeiBody {
  return {
    id: aei.id,
    name: aei.name,
    type: 'mcp',
    status: aei.status === 'disabled' ? 'disabled' : 'enabled',
    exposure_mode: aei.exposureMode === 'progressive' ? 'progressive' : 'direct',
    catalog_search: aei.catalogSearch,
    api_key_prefix: aei.apiKeyPrefix,
    config_version: aei.configVersion,
    default_profile: aei.defaultOf !== null,
    created_at: aei.createdAt.toISOString(),
    updated_at: aei.updatedAt.toISOString(),
  };
}

/** The caller's AEI, or NOT_FOUND (also for other users' AEIs). */
export async function findOwnAei(db: Db, caller: Principal, id: string): Promise<Aei> {
  const aei = await db.aei.findFirst({ where: { id, userId: caller.userId } });
  if (!aei) throw notFound('AEI', id);
  return aei;
}

/** Creates an AEI; the answer carries its api_key, which is never shown again. */
export async function createAei(db: Db, caller: Principal, input: CreateAeiBody) {
  const key = newCredential('key');
  const aei = await db.aei.create({
    data: {
      id: newId('aei'),
      userId: caller.userId,
      type: input.type ?? 'mcp',
      name: input.name,
      apiKeyHash: key.hash,
      apiKeyPrefix: key.prefix,
      status: input.status ?? 'enabled',
      exposureMode: input.exposure_mode ?? 'direct',
      catalogSearch: input.catalog_search ?? false,
    },
    include: DEFAULT_OF,
  });
  return { ...aeiBody(aei), api_key: key.secret };
}

export async function getAei(db: Db, caller: Principal, id: string): Promise<AeiBody> {
  const aei = await db.aei.findFirst({ where: { id, userId: caller.userId }, include: DEFAULT_OF });
  if (!aei) throw notFound('AEI', id);
  return aeiBody(aei);
}

export async function listAeis(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.aei.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
    include: DEFAULT_OF,
  });
  return toPage(rows, query, aeiBody);
}

export async function updateAei(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  input: UpdateAeiBody,
): Promise<AeiBody> {
  return changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, id);
    await tx.aei.update({
      where: { id },
      data: {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.status !== undefined && { status: input.status }),
        ...(input.exposure_mode !== undefined && { exposureMode: input.exposure_mode }),
        ...(input.catalog_search !== undefined && { catalogSearch: input.catalog_search }),
      },
    });
    const changedAeis = await bumpConfigVersions(tx, [id]);
    const updated = await tx.aei.findUniqueOrThrow({ where: { id }, include: DEFAULT_OF });
    return { result: aeiBody(updated), changedAeis };
  });
}

/** Replaces the api_key: the old one stops working at once; the new one is in this answer only. */
export async function rotateAeiKey(ctx: DomainContext, caller: Principal, id: string) {
  return changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, id);
    const key = newCredential('key');
    const aei = await tx.aei.update({
      where: { id },
      data: { apiKeyHash: key.hash, apiKeyPrefix: key.prefix, configVersion: { increment: 1 } },
      include: DEFAULT_OF,
    });
    return { result: { ...aeiBody(aei), api_key: key.secret }, changedAeis: [id] };
  });
}

/**
 * Deletes an AEI. Callers mapped to it get the default profile again (their mappings go with it);
 * when it is the default profile itself, the next need makes a new one.
 */
export async function deleteAei(ctx: DomainContext, caller: Principal, id: string): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, id);
    await tx.aei.delete({ where: { id } });
    return { result: undefined, changedAeis: [id] };
  });
}
