/**
 * Playground keys (`bnd_pg_…`): short-lived keys of one AEI that the admin console makes to call
 * the AEI's tools, read its resources and get its prompts through the real gateway, without ever
 * holding the AEI's api_key (stored hashed, shown once). A gateway serves a live one exactly like
 * the AEI's own key (same config, same ETag), and audits its calls with the caller `@console`.
 *
 * - Each lives PLAYGROUND_KEY_TTL_SECONDS (an hour) from its creation; an expired key is unknown
 *   to the lookup (404, also when revalidated with If-None-Match, never 304), and a gateway stops
 *   serving it at `expires_at` even from its cache.
 * - An AEI holds at most MAX_PLAYGROUND_KEYS (10): making an 11th removes the oldest, and its
 *   expired keys are deleted whenever a new one is made (no background job). A key pushed out that
 *   way may still be served by a gateway that had it cached, for up to the cache's TTL
 *   (CONFIG_CACHE_TTL_MS), or until it expires while that gateway cannot reach a control plane
 *   (stale-if-error): announcing it would drop every cached entry of the AEI, its own key's
 *   too, for a key that expires within the hour anyway.
 * - The gateways' lookup (`lookupApiKey` in exposure-config.ts) finds them by SHA-256, like api_keys.
 * - Only the SHA-256 is stored; the key is in its creation answer only, in no list.
 * - They go with their AEI (foreign key, on delete cascade). Rotating the AEI's api_key does not
 *   revoke them: they are the console's, not the clients', and expire on their own.
 */
import { MAX_PLAYGROUND_KEYS, PLAYGROUND_KEY_TTL_SECONDS } from '@bindery/contracts';
import { newCredential, newId } from '../domain/ids.ts';
import { notFound } from '../domain/errors.ts';
import type { DomainContext, Principal } from '../domain/context.ts';
import { changeExposure } from '../domain/config-versions.ts';

export interface CreatedPlaygroundKey {
  /** The key itself: for this answer only. */
  secret: string;
  aeiId: string;
  expiresAt: Date;
}

/**
 * Makes a playground key for one of the principal's AEIs (NOT_FOUND for another user's), deletes
 * the AEI's expired keys and, beyond MAX_PLAYGROUND_KEYS, its oldest ones. The AEI's row is locked
 * for it, so concurrent requests keep the cap exactly.
 */
export async function createPlaygroundKey(
  ctx: DomainContext,
  principal: Principal,
  aeiId: string,
  now: Date = new Date(),
): Promise<CreatedPlaygroundKey> {
  return changeExposure(ctx, async (tx) => {
    // Found and locked in one statement: an AEI deleted meanwhile is a 404, not a foreign-key failure.
    const locked = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM "aei" WHERE id = ${aeiId} AND user_id = ${principal.userId} FOR UPDATE`;
    if (locked.length === 0) throw notFound('AEI', aeiId);
    await tx.aeiPlaygroundKey.deleteMany({ where: { aeiId, expiresAt: { lte: now } } });
    const credential = newCredential('playground');
    const expiresAt = new Date(now.getTime() + PLAYGROUND_KEY_TTL_SECONDS * 1000);
    const id = newId('pgk');
    await tx.aeiPlaygroundKey.create({
      data: { id, aeiId, keyHash: credential.hash, expiresAt, createdAt: now },
    });
    // Ids sort by creation time: beyond the new key and the newest MAX_PLAYGROUND_KEYS - 1 others,
    // the rest go. The new key is never among them, even if this control plane's clock is behind
    // the one that made the others.
    const surplus = await tx.aeiPlaygroundKey.findMany({
      where: { aeiId, id: { not: id } },
      orderBy: { id: 'desc' },
      skip: MAX_PLAYGROUND_KEYS - 1,
      select: { id: true },
    });
    if (surplus.length > 0) {
      await tx.aeiPlaygroundKey.deleteMany({ where: { id: { in: surplus.map((k) => k.id) } } });
    }
    // A new key is in no gateway's cache: nothing to announce.
    return { result: { secret: credential.secret, aeiId, expiresAt }, changedAeis: [] };
  });
}
