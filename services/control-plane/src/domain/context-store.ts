/**
 * Reading and writing one context (the subtree of `table.data` at a JSON Pointer) in PostgreSQL.
 * Reads fetch only the subtree (`data #> path`), never the whole row. Writes lock the table row for
 * the length of one transaction, so concurrent writers queue and no update is lost; each write
 * bumps `table.version`.
 */
import type { JsonValue } from '@bindery/context-ops';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './context.ts';

interface NodeRow {
  node: JsonValue;
  missing: boolean;
  version: number;
}

// Generous: writers on one hot table queue behind the row lock, and a pool slot may be busy.
const WRITE_TRANSACTION = { maxWait: 30_000, timeout: 60_000 } as const;

function contextMissing(tableId: string, pointer: string): DomainError {
  return new DomainError(
    'NOT_FOUND',
    `the tool's data no longer exists: table ${tableId} has nothing at "${pointer}"`,
    { table_id: tableId, json_path: pointer },
  );
}

async function selectNode(db: Db, tableId: string, tokens: string[], lock: boolean): Promise<NodeRow> {
  const rows = lock
    ? await db.$queryRaw<NodeRow[]>`
        SELECT data #> ${tokens}::text[] AS node, (data #> ${tokens}::text[]) IS NULL AS missing, version
        FROM "table" WHERE id = ${tableId} FOR UPDATE`
    : await db.$queryRaw<NodeRow[]>`
        SELECT data #> ${tokens}::text[] AS node, (data #> ${tokens}::text[]) IS NULL AS missing, version
        FROM "table" WHERE id = ${tableId}`;
  const row = rows[0];
  if (!row) throw new DomainError('NOT_FOUND', `table ${tableId} not found`, { table_id: tableId });
  return row;
}

/** The context node and the table's version, reading only that subtree. */
export async function readContext(
  db: Db,
  tableId: string,
  tokens: string[],
  pointer: string,
): Promise<{ node: JsonValue; version: number }> {
  const row = await selectNode(db, tableId, tokens, false);
  if (row.missing) throw contextMissing(tableId, pointer);
  return { node: row.node, version: row.version };
}

/**
 * Runs `change` on the context node under the table's row lock and stores the node it returns;
 * answers what `change` answered plus the table's new version. With `expectedVersion`, a table that
 * has moved on is CONFLICT and nothing is written.
 */
export async function writeContext<T>(
  prisma: PrismaClient,
  tableId: string,
  tokens: string[],
  pointer: string,
  expectedVersion: number | undefined,
  change: (node: JsonValue) => { context: JsonValue; result: T },
): Promise<{ result: T; version: number }> {
  return prisma.$transaction(async (tx) => {
    const row = await selectNode(tx, tableId, tokens, true);
    if (row.missing) throw contextMissing(tableId, pointer);
    if (expectedVersion !== undefined && expectedVersion !== row.version) {
      throw new DomainError(
        'CONFLICT',
        `the data changed since version ${expectedVersion} (now ${row.version}); read it again and retry`,
        { expected_version: expectedVersion, current_version: row.version },
      );
    }
    const { context, result } = change(row.node);
    const text = JSON.stringify(context);
    const updated = await tx.$queryRaw<{ version: number }[]>`
      UPDATE "table"
      SET data = CASE WHEN cardinality(${tokens}::text[]) = 0 THEN ${text}::jsonb
                      ELSE jsonb_set(data, ${tokens}::text[], ${text}::jsonb) END,
          version = version + 1,
          updated_at = now()
      WHERE id = ${tableId}
      RETURNING version`;
    return { result, version: updated[0]?.version ?? row.version + 1 };
  }, WRITE_TRANSACTION);
}
