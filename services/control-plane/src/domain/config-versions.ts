/**
 * config_version bookkeeping: every change to what an AEI exposes bumps its version, and the
 * listener hears about it after commit (the gateway drops its cached config on that signal).
 */
import type { Db, DomainContext } from './context.ts';

/** Bumps config_version of the given AEIs (duplicates ignored); returns the distinct ids bumped. */
export async function bumpConfigVersions(db: Db, aeiIds: Iterable<string>): Promise<string[]> {
  const ids = [...new Set(aeiIds)];
  if (ids.length > 0) {
    await db.aei.updateMany({ where: { id: { in: ids } }, data: { configVersion: { increment: 1 } } });
  }
  return ids;
}

/** The AEIs that bind any of these ADIs. */
export async function aeisBindingAdis(db: Db, adiIds: readonly string[]): Promise<string[]> {
  if (adiIds.length === 0) return [];
  const rows = await db.aeiBinding.findMany({
    where: { adiId: { in: [...adiIds] } },
    select: { aeiId: true },
    distinct: ['aeiId'],
  });
  return rows.map((r) => r.aeiId);
}

/** Bumps the AEIs binding these ADIs; returns their ids. */
export async function bumpForAdis(db: Db, adiIds: readonly string[]): Promise<string[]> {
  return bumpConfigVersions(db, await aeisBindingAdis(db, adiIds));
}

// Prisma's default (5 s) is short for a batch of hundreds of bindings on a busy machine; an admin
// change is rare and must not fail half-way through a slow moment.
const EXPOSURE_TRANSACTION = { maxWait: 10_000, timeout: 30_000 } as const;

/**
 * Runs `work` in one transaction; the AEI ids it returns are announced to the listener once the
 * transaction has committed (never for a rolled-back change), and the answer waits for that.
 */
export async function changeExposure<T>(
  ctx: DomainContext,
  work: (tx: Db) => Promise<{ result: T; changedAeis: readonly string[] }>,
  /** A longer bound for a change known to be large (an import of thousands of tools). */
  timeoutMs: number = EXPOSURE_TRANSACTION.timeout,
): Promise<T> {
  const { result, changedAeis } = await ctx.prisma.$transaction((tx) => work(tx), {
    ...EXPOSURE_TRANSACTION,
    timeout: timeoutMs,
  });
  // Answered once the gateways know (within the listener's bound): a rotated key or a disabled
  // exposure is refused everywhere by the time its admin sees the answer.
  if (changedAeis.length > 0) await ctx.listener.configChanged(changedAeis);
  return result;
}
