/**
 * AEIs: exposures with their own api_key (shown once, stored as SHA-256 + display prefix).
 */
import type { Aei as AeiBody, CreateAeiBody, PageQuery, UpdateAeiBody } from '@bindery/contracts';
import type { Aei } from '../generated/prisma/client.ts';
import { notFound } from '../errors.ts';
import { newCredential, newId } from '../ids.ts';
import type { Db, DomainContext, Principal } from './context.ts';
import { bumpConfigVersions, changeExposure } from './exposure.ts';
import { pageWindow, toPage } from './pagination.ts';

export function aeiBody(aei: Aei): AeiBody {
  return {
    id: aei.id,
    name: aei.name,
    type: 'mcp',
    status: aei.status === 'disabled' ? 'disabled' : 'enabled',
    exposure_mode: aei.exposureMode === 'progressive' ? 'progressive' : 'direct',
    catalog_search: aei.catalogSearch,
    api_key_prefix: aei.apiKeyPrefix,
    config_version: aei.configVersion,
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
  });
  return { ...aeiBody(aei), api_key: key.secret };
}

export async function getAei(db: Db, caller: Principal, id: string): Promise<AeiBody> {
  return aeiBody(await findOwnAei(db, caller, id));
}

export async function listAeis(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.aei.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
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
    return { result: aeiBody(await tx.aei.findUniqueOrThrow({ where: { id } })), changedAeis };
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
    });
    return { result: { ...aeiBody(aei), api_key: key.secret }, changedAeis: [id] };
  });
}

export async function deleteAei(ctx: DomainContext, caller: Principal, id: string): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, id);
    await tx.aei.delete({ where: { id } });
    return { result: undefined, changedAeis: [id] };
  });
}
