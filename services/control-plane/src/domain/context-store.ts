/**
 * Reading and writing one context (the subtree of `table.data` at a JSON Pointer) in PostgreSQL.
 * Reads fetch only the subtree (`data #> path`), never the whole row, and only when the cached
 * parse is not of the current version. Writes lock the table row for one transaction, so
 * concurrent writers queue and no update is lost; each write bumps `table.version`.
 */
import type { JsonValue } from '@bindery/context-ops';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { DomainError } from '../errors.ts';
import { trackWrite, type WriteMeter } from '../metrics.ts';
import type { ContextCache } from './context-cache.ts';
import type { Db } from './context.ts';

// Generous: writers on one hot table queue behind the row lock, and a pool slot may be busy.
const WRITE_TRANSACTION = { maxWait: 30_000, timeout: 120_000 } as const;

export interface ContextLocation {
  tableId: string;
  tokens: string[];
  pointer: string;
  /** The tool reading or writing it, named when its context is missing. */
  toolName?: string;
}

/** The tool's context is gone from its table (the data was edited since the tool was saved). */
function contextMissing(at: ContextLocation, tableName: string): DomainError {
  const tool = at.toolName === undefined ? 'the tool' : `tool "${at.toolName}"`;
  return new DomainError(
    'NOT_FOUND',
    `${tool}: table "${tableName}" (${at.tableId}) has no data at "${at.pointer}" (the tool's json_path) ` +
      "any more; the tool's owner must restore the data there or change the tool's json_path",
    {
      ...(at.toolName !== undefined && { tool_name: at.toolName }),
      table_id: at.tableId,
      table_name: tableName,
      json_path: at.pointer,
    },
  );
}

function tableMissing(at: ContextLocation): DomainError {
  return new DomainError('NOT_FOUND', `table ${at.tableId} not found`, { table_id: at.tableId });
}

async function currentVersion(db: Db, at: ContextLocation, lock: boolean): Promise<number> {
  const rows = lock
    ? await db.$queryRaw<
        { version: number }[]
      >`SELECT version FROM "table" WHERE id = ${at.tableId} FOR UPDATE`
    : await db.$queryRaw<{ version: number }[]>`SELECT version FROM "table" WHERE id = ${at.tableId}`;
  const row = rows[0];
  if (!row) throw tableMissing(at);
  return row.version;
}

/** The node at `version` from the cache, else fetched as text and parsed (and then cached). */
async function nodeAt(
  db: Db,
  cache: ContextCache,
  at: ContextLocation,
  version: number,
): Promise<{ node: JsonValue; text: string }> {
  const cached = cache.get(at.tableId, at.pointer, version);
  if (cached !== undefined) return cached;
  const rows = await db.$queryRaw<{ text: string | null; version: number; name: string }[]>`
    SELECT (data #> ${at.tokens}::text[])::text AS text, version, name FROM "table" WHERE id = ${at.tableId}`;
  const row = rows[0];
  if (!row) throw tableMissing(at);
  if (row.text === null) throw contextMissing(at, row.name);
  const node = JSON.parse(row.text) as JsonValue;
  cache.set(at.tableId, at.pointer, row.version, node, row.text);
  return { node, text: row.text };
}

/** The context node, its JSON text, and the table's version. */
export async function readContext(
  db: Db,
  cache: ContextCache,
  at: ContextLocation,
): Promise<{ node: JsonValue; text: string; version: number }> {
  const version = await currentVersion(db, at, false);
  return { ...(await nodeAt(db, cache, at, version)), version };
}

/**
 * Thrown by a write hook to end the write without changing anything because nothing needs doing
 * (a retry answered from its first outcome): the transaction rolls back like a failure, but the
 * write is metered as skipped, not failed.
 */
export class SkippedWrite extends Error {
  override name = 'SkippedWrite';
}

/** Work a write does inside its transaction besides the change itself. */
export interface WriteHooks<T> {
  /** Under the row lock, before the change; throwing rolls the transaction back, nothing written. */
  beforeChange?(tx: Db): Promise<void>;
  /** After the change is stored, before commit: it commits with the write, or neither does. */
  afterChange?(tx: Db, written: { result: T; version: number }): Promise<void>;
}

/**
 * Runs `change` on the context node under the table's row lock and stores the node it returns;
 * answers what `change` answered plus the table's new version. With `expectedVersion`, a table that
 * has moved on is CONFLICT and nothing is written. `meter` follows the write through its lock.
 */
export async function writeContext<T>(
  prisma: PrismaClient,
  cache: ContextCache,
  at: ContextLocation,
  expectedVersion: number | undefined,
  change: (node: JsonValue) => { context: JsonValue; result: T },
  meter: WriteMeter,
  hooks: WriteHooks<T> = {},
): Promise<{ result: T; version: number }> {
  const tracked = trackWrite(meter);
  const written = await prisma
    .$transaction(async (tx) => {
      const version = await currentVersion(tx, at, true);
      tracked.locked();
      await hooks.beforeChange?.(tx);
      if (expectedVersion !== undefined && expectedVersion !== version) {
        throw new DomainError(
          'CONFLICT',
          `the data changed since version ${expectedVersion} (now ${version}); read it again and retry`,
          { expected_version: expectedVersion, current_version: version },
        );
      }
      const { context, result } = change((await nodeAt(tx, cache, at, version)).node);
      const text = JSON.stringify(context);
      const updated = await tx.$queryRaw<{ version: number }[]>`
      UPDATE "table"
      SET data = CASE WHEN cardinality(${at.tokens}::text[]) = 0 THEN ${text}::jsonb
                      ELSE jsonb_set(data, ${at.tokens}::text[], ${text}::jsonb) END,
          version = version + 1,
          updated_at = now()
      WHERE id = ${at.tableId}
      RETURNING version`;
      const newVersion = updated[0]?.version ?? version + 1;
      await hooks.afterChange?.(tx, { result, version: newVersion });
      return { result, context, text, version: newVersion };
    }, WRITE_TRANSACTION)
    .then(tracked.committed, (error: unknown) =>
      error instanceof SkippedWrite ? tracked.skipped(error) : tracked.failed(error),
    );
  // Only after commit: a rolled-back write must never be served from the cache.
  cache.set(at.tableId, at.pointer, written.version, written.context, written.text);
  return { result: written.result, version: written.version };
}
