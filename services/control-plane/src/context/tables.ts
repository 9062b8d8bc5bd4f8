/**
 * Tables: named JSON documents whose subtrees are contexts. Every write of `data` bumps `version`,
 * which is also the table's ETag for optimistic concurrency (If-Match). How the data is stored
 * (a snapshot and the patches of the writes since) is table-data.ts's business.
 */
import type {
  CreateTableBody,
  PageQuery,
  Table as TableBody,
  TableRules,
  TableSummary,
  UpdateTableBody,
} from '@bindery/contracts';
import { MAX_JSON_DEPTH } from '@bindery/contracts';
import { checkValueArgument, diffChanges, type JsonValue } from '@bindery/context-ops';
import { Prisma, type Table } from '../generated/prisma/client.ts';
import { DomainError, fromOpError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpForAdis, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { findOwnProject } from './projects.ts';
import { dataBytes, firstSnapshot, replaceData, tableDocuments } from './table-data.ts';
import { checkTableBytes, DEFAULT_TABLE_LIMITS, type TableLimits } from './table-limits.ts';
import { DELETED } from './table-versions.ts';
import { checkDataKeepsRules, checkRules, compileRules, storableRules, storedRules } from './table-rules.ts';

// What the summary reads of a row (its data's size stays with the writes that keep it).
type TableRow = Omit<Table, 'bytes' | 'rules'>;
const SUMMARY_FIELDS = {
  id: true,
  userId: true,
  projectId: true,
  name: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} as const;

/** Refuses table data nesting deeper than MAX_JSON_DEPTH (whatever the body around it added). */
function checkData(value: unknown): void {
  fromOpError(() => checkValueArgument(value, 'data', MAX_JSON_DEPTH));
}

export function tableSummary(t: TableRow): TableSummary {
  return {
    id: t.id,
    name: t.name,
    project_id: t.projectId,
    version: t.version,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
  };
}

/** The caller's table (without its data), or NOT_FOUND. */
export async function findOwnTable(db: Db, caller: Principal, id: string): Promise<TableRow> {
  const table = await db.table.findFirst({ where: { id, userId: caller.userId }, select: SUMMARY_FIELDS });
  if (!table) throw notFound('table', id);
  return table;
}

/** Creates a table; its data may be at most `limits.maxBytes` (PAYLOAD_TOO_LARGE above). */
export async function createTable(
  db: Db,
  caller: Principal,
  input: CreateTableBody,
  limits: TableLimits = DEFAULT_TABLE_LIMITS,
): Promise<TableSummary> {
  if (input.project_id != null) await findOwnProject(db, caller, input.project_id);
  const data = input.data === undefined ? {} : input.data;
  checkData(data);
  const text = JSON.stringify(data);
  const bytes = dataBytes(text);
  checkTableBytes(limits, bytes);
  const table = await db.table.create({
    data: {
      id: newId('tbl'),
      userId: caller.userId,
      projectId: input.project_id ?? null,
      name: input.name,
      bytes,
      snapshot: { create: firstSnapshot(data, text) },
    },
    select: SUMMARY_FIELDS,
  });
  return tableSummary(table);
}

export async function getTable(db: Db, caller: Principal, id: string): Promise<TableBody> {
  const table = await findOwnTable(db, caller, id);
  const document = (await tableDocuments(db, [id])).get(id);
  if (!document) throw notFound('table', id);
  // The data's own version: a write may have come in since the summary was read.
  return { ...tableSummary(table), version: document.version, data: document.data };
}

export async function listTables(db: Db, caller: Principal, query: PageQuery & { project_id?: string }) {
  const w = pageWindow(query);
  const rows = await db.table.findMany({
    where: {
      userId: caller.userId,
      ...(query.project_id !== undefined && { projectId: query.project_id }),
      ...w.idAfter,
    },
    orderBy: w.orderBy,
    take: w.take,
    select: SUMMARY_FIELDS,
  });
  return toPage(rows, query, tableSummary);
}

/**
 * Replaces a table's data. With `expectedVersion` (from If-Match) the write happens only if the
 * table is still at that version, else PRECONDITION_FAILED; either way the version goes up by one.
 * Data larger than the table cap (ctx.tableLimits) is PAYLOAD_TOO_LARGE, before anything is locked.
 */
export async function replaceTableData(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  data: unknown,
  expectedVersion: number | undefined,
): Promise<TableSummary> {
  checkData(data);
  const text = JSON.stringify(data);
  const bytes = dataBytes(text);
  checkTableBytes(ctx.tableLimits ?? DEFAULT_TABLE_LIMITS, bytes, { tableId: id });
  const table = await ctx.prisma.$transaction(
    async (tx) => {
      // Locks the row: writes through tools wait, and the version check below cannot go stale.
      const rows = await tx.$queryRaw<{ version: number; rules: string | null }[]>`
        SELECT version, rules::text AS rules FROM "table" WHERE id = ${id} AND user_id = ${caller.userId} FOR UPDATE`;
      const current = rows[0];
      if (!current) throw notFound('table', id);
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw new DomainError(
          'PRECONDITION_FAILED',
          `table ${id} is at version ${current.version}, not ${expectedVersion}; reload it and retry`,
          { current_version: current.version, expected_version: expectedVersion },
        );
      }
      const rules = storedRules(current.rules);
      if (rules !== undefined) {
        // The person's own replacement keeps the table's rules too (person-only paths aside).
        const before = (await tableDocuments(tx, [id])).get(id)?.data ?? null;
        const after = data as JsonValue;
        checkRules(
          rules,
          { at: [], before, after, changes: diffChanges(before, after, []), by: 'person' },
          id,
        );
      }
      const updated = await tx.table.update({
        where: { id },
        data: { version: { increment: 1 }, bytes },
        select: SUMMARY_FIELDS,
      });
      await replaceData(tx, id, updated.version, text);
      await ctx.contexts?.versions.announce(id, updated.version, tx);
      return updated;
    },
    // Large documents take a while to store (the body limit bounds them).
    { maxWait: 30_000, timeout: 120_000 },
  );
  await ctx.contexts?.replaced(id, table.version);
  return tableSummary(table);
}

/** Renames a table or moves it to another project; AEIs exposing its tools get a new config_version. */
export async function updateTable(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  input: UpdateTableBody,
): Promise<TableSummary> {
  return changeExposure(ctx, async (tx) => {
    await findOwnTable(tx, caller, id);
    if (input.project_id != null) await findOwnProject(tx, caller, input.project_id);
    const table = await tx.table.update({
      where: { id },
      data: {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.project_id !== undefined && { projectId: input.project_id }),
      },
      select: SUMMARY_FIELDS,
    });
    const adis = await tx.adi.findMany({ where: { tableId: id }, select: { id: true } });
    const changedAeis = await bumpForAdis(
      tx,
      adis.map((a) => a.id),
    );
    return { result: tableSummary(table), changedAeis };
  });
}

/**
 * Deletes a table with its ADIs. While any of those ADIs is bound to an AEI the delete is refused
 * (CONFLICT naming the AEIs) unless `force`, which also removes the bindings.
 */
export async function deleteTable(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  force: boolean,
): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await findOwnTable(tx, caller, id);
    const adis = await tx.adi.findMany({ where: { tableId: id }, select: { id: true } });
    const bound = await tx.aeiBinding.findMany({
      where: { adiId: { in: adis.map((a) => a.id) } },
      select: { aeiId: true },
      distinct: ['aeiId'],
    });
    if (bound.length > 0 && !force) {
      throw new DomainError(
        'CONFLICT',
        `table ${id} has tools bound to ${bound.length} exposure(s); unbind them or pass ?force=true`,
        { aei_ids: bound.map((b) => b.aeiId) },
      );
    }
    const changedAeis = await bumpForAdis(
      tx,
      adis.map((a) => a.id),
    );
    await tx.table.delete({ where: { id } });
    // Last before commit: no control plane serves the data from a cache once it is gone.
    await ctx.contexts?.versions.deleting(id, tx);
    return { result: undefined, changedAeis };
  });
  ctx.contexts?.versions.deleted(id);
  await ctx.contexts?.versions.settle(id, DELETED);
}

/** The table's rules (table-rules.ts); `{}` when it has none. */
export async function getTableRules(db: Db, caller: Principal, id: string): Promise<TableRules> {
  const table = await db.table.findFirst({ where: { id, userId: caller.userId }, select: { rules: true } });
  if (!table) throw notFound('table', id);
  return (table.rules ?? {}) as TableRules;
}

/**
 * Sets the table's rules (`{}` clears them). Checked first: pointers, the schema (which the data
 * must satisfy already, else VALIDATION_FAILED naming where it does not). From the commit on, every
 * write is checked against them, on every control plane: writers read the rules under the table's lock.
 */
export async function putTableRules(
  db: Db,
  caller: Principal,
  id: string,
  rules: TableRules,
): Promise<TableRules> {
  const compiled = compileRules(rules);
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ version: number }[]>`
      SELECT version FROM "table" WHERE id = ${id} AND user_id = ${caller.userId} FOR UPDATE`;
    if (!rows[0]) throw notFound('table', id);
    if (compiled.schema !== undefined) {
      checkDataKeepsRules(compiled, (await tableDocuments(tx, [id])).get(id)?.data ?? null);
    }
    const stored = storableRules(rules);
    await tx.table.update({
      where: { id },
      data: { rules: stored === null ? Prisma.DbNull : (stored as Prisma.InputJsonValue) },
      select: { id: true },
    });
    return stored ?? {};
  });
}
