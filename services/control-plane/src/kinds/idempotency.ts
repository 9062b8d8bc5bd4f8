/**
 * Idempotent writes: a write sent with an idempotency key records its answer in the write's own
 * transaction, so the record exists exactly when the write was committed. A retry with the same
 * key (in the same exposure) gets that answer back and writes nothing; the same key for another
 * call (another tool or other arguments) is refused. Only committed writes are recorded: a write
 * that failed changed nothing, so running its retry again is what the caller wants.
 */
import type { JsonValue } from '@bindery/context-ops';
import { DomainError } from '../domain/errors.ts';
import { argumentsDigest } from '../audit/audit.ts';
import type { Db } from '../domain/context.ts';
import { SkippedWrite } from '../context/context-store.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';
import type { KeyedWrite, ToolAnswer } from './kind.ts';

export type { KeyedWrite };

/** A keyed write for `key` on `scope`, remembered for `rememberMs`, or undefined without a key. */
export function keyedWrite(
  scope: string,
  key: string | undefined,
  tool: string,
  args: Record<string, unknown>,
  rememberMs: number,
): KeyedWrite | undefined {
  if (key === undefined) return undefined;
  return {
    scope,
    key,
    digest: argumentsDigest({ tool, arguments: args }),
    notBefore: new Date(Date.now() - rememberMs),
  };
}

/**
 * Thrown (inside or outside the write's transaction) when the key already has a committed outcome:
 * the transaction rolls back, nothing is written, and the caller answers `answer` again.
 */
export class ReplayedOutcome extends SkippedWrite {
  override name = 'ReplayedOutcome';
  constructor(readonly answer: JsonValue | ToolAnswer) {
    super('answered from the first outcome of this idempotency key');
  }
}

/**
 * Throws ReplayedOutcome when the key has a recorded outcome for this call, CONFLICT for another
 * call. An expired record (the periodic purge has not reached it yet) is deleted and ignored, so a
 * key's lifetime is the setting's, not the setting's plus up to one purge interval.
 */
export async function replayIfRecorded(db: Db, write: KeyedWrite): Promise<void> {
  const where = { scope_key: { scope: write.scope, key: write.key } };
  const record = await db.idempotencyRecord.findUnique({ where });
  if (!record) return;
  if (record.createdAt < write.notBefore) {
    // deleteMany: another replica may have deleted it first, which is just as good.
    await db.idempotencyRecord.deleteMany({
      where: { scope: write.scope, key: write.key, createdAt: record.createdAt },
    });
    return;
  }
  if (record.requestDigest !== write.digest) {
    throw new DomainError(
      'CONFLICT',
      `idempotency key "${write.key}" was already used for another call (another tool or other arguments); use a new key for a new write`,
      { idempotency_key: write.key },
    );
  }
  throw new ReplayedOutcome(JSON.parse(record.answer) as JsonValue);
}

/** Records the answer of a write (always an object), inside its transaction. */
export async function recordOutcome(
  tx: Db,
  write: KeyedWrite,
  answer: Record<string, JsonValue>,
): Promise<void> {
  await tx.idempotencyRecord.create({
    data: {
      scope: write.scope,
      key: write.key,
      requestDigest: write.digest,
      // Text, not jsonb: jsonb reorders keys, and a replay should be the first answer word for word.
      answer: JSON.stringify(answer),
    },
  });
}

/**
 * Runs a keyed write. `run` performs the write and must call `recordOutcome` in its transaction.
 * Two writes with one key racing on different tables both reach the insert: the loser's
 * transaction fails on the primary key once the winner commits, and it answers the winner's
 * outcome (or CONFLICT) instead.
 */
export async function idempotent(
  db: Db,
  write: KeyedWrite | undefined,
  run: () => Promise<JsonValue>,
): Promise<JsonValue> {
  if (write === undefined) return run();
  await replayIfRecorded(db, write);
  try {
    return await run();
  } catch (error) {
    if (!uniqueViolation(error)) throw error;
    await replayIfRecorded(db, write);
    throw error;
  }
}

/** Deletes records older than `maxAgeMs`; answers how many. */
export async function purgeExpiredOutcomes(db: Db, maxAgeMs: number): Promise<number> {
  const { count } = await db.idempotencyRecord.deleteMany({
    where: { createdAt: { lt: new Date(Date.now() - maxAgeMs) } },
  });
  return count;
}
