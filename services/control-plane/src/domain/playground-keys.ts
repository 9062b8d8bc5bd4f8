/**
 * Playground keys (`bnd_pg_…`): short-lived keys of one AEI that the admin console makes to call
 * the AEI's tools, read its resources and get its prompts through the real gateway, without ever
 * holding the AEI's api_key (stored hashed, shown once). A gateway serves a live one exactly like
 * the AEI's own key (same config, same ETag), and audits its calls with the caller `console`.
 *
 * - Each lives PLAYGROUND_KEY_TTL_SECONDS (an hour) from its creation; an expired key is unknown
 *   to the lookup (404, also when revalidated with If-None-Match, never 304), and a gateway stops
 *   serving it at `expires_at` even from its cache.
 * - An AEI holds at most MAX_PLAYGROUND_KEYS (10): making an 11th removes the oldest, and its
 *   expired keys are deleted whenever a new one is made (no background job). A key pushed out that
 *   way may still be served by a gateway that had it cached, for at most the cache's TTL
 *   (CONFIG_CACHE_TTL_MS): announcing it would drop every cached entry of the AEI, its own key's
 *   too, for a key that expires within the hour anyway.
 * - The gateways' lookup (`lookupApiKey` in exposure-config.ts) finds them by SHA-256, like api_keys.
 * - Only the SHA-256 is stored; the key is in its creation answer only, in no list.
 * - They go with their AEI (foreign key, on delete cascade). Rotating the AEI's api_key does not
 *   revoke them: they are the console's, not the clients', and expire on their own.
 */
import { MAX_PLAYGROUND_KEYS, PLAYGROUND_KEY_TTL_SECONDS } from '@bindery/contracts';
import { newCredential, newId } from '../ids.ts';
import { findOwnAei } from './aeis.ts';
import type { DomainContext, Principal } from './context.ts';
import { changeExposure } from './exposure.ts';

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
    await findOwnAei(tx, principal, aeiId);
    await tx.$queryRaw`SELECT id FROM "aei" WHERE id = ${aeiId} FOR UPDATE`;
    await tx.aeiPlaygroundKey.deleteMany({ where: { aeiId, expiresAt: { lte: now } } });
    const credential = newCredential('playground');
    const expiresAt = new Date(now.getTime() + PLAYGROUND_KEY_TTL_SECONDS * 1000);
    await tx.aeiPlaygroundKey.create({
      data: { id: newId('pgk'), aeiId, keyHash: credential.hash, expiresAt, createdAt: now },
    });
    // Ids sort by creation time: everything after the newest MAX_PLAYGROUND_KEYS goes.
    const surplus = await tx.aeiPlaygroundKey.findMany({
      where: { aeiId },
      orderBy: { id: 'desc' },
      skip: MAX_PLAYGROUND_KEYS,
      select: { id: true },
    });
    if (surplus.length > 0) {
      await tx.aeiPlaygroundKey.deleteMany({ where: { id: { in: surplus.map((k) => k.id) } } });
    }
    // A new key is in no gateway's cache: nothing to announce.
    return { result: { secret: credential.secret, aeiId, expiresAt }, changedAeis: [] };
  });
}
