/**
 * How a table's data is stored: a snapshot of the whole document (`table_snapshot`, as of some
 * version) and, for each write since, the edits it made (`table_patch`, one row per version). A
 * write costs its edits, not the document; the snapshot is brought up to date in the background
 * (`foldPatches`). Every read here sees one consistent version: the snapshot and the patches after
 * it come from one statement.
 */
import {
  advanceContext,
  applyChanges,
  nodeAtTokens,
  type DataChange,
  type JsonValue,
  type VersionChanges,
} from '@bindery/context-ops';
import { Prisma, type PrismaClient } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import type { Db } from '../domain/db.ts';

// Folding rewrites the whole snapshot: generous for a large table on a busy embedded database.
const FOLD_TRANSACTION = { maxWait: 30_000, timeout: 300_000 } as const;

function parseVersions(text: string | null): VersionChanges[] {
  return text === null ? [] : (JSON.parse(text) as VersionChanges[]);
}

/**
 * The patches of the versions after the snapshot's (`s`, a table_snapshot row in the query), as
 * the JSON text of a VersionChanges[] (SQL NULL when none).
 */
export const PATCHES_AFTER_SNAPSHOT = Prisma.sql`(
  SELECT json_agg(json_build_object('version', p.version, 'changes', p.changes) ORDER BY p.version)::text
  FROM table_patch p WHERE p.table_id = s.table_id AND p.version > s.version)`;

interface Subtree {
  version: number;
  name: string;
  /** The snapshot's node at the path as JSON text; null when the snapshot has none there. */
  text: string | null;
  patches: VersionChanges[];
}

async function readSubtree(db: Db, tableId: string, tokens: readonly string[]): Promise<Subtree | undefined> {
  const rows = await db.$queryRaw<
    { version: number; name: string; text: string | null; patches: string | null }[]
  >`
    SELECT t.version, t.name, (s.data #> ${[...tokens]}::text[])::text AS text, ${PATCHES_AFTER_SNAPSHOT} AS patches
    FROM "table" t JOIN table_snapshot s ON s.table_id = t.id WHERE t.id = ${tableId}`;
  const row = rows[0];
  return row && { version: row.version, name: row.name, text: row.text, patches: parseVersions(row.patches) };
}

export interface StoredNode {
  /** The table's version the node is read at (its latest). */
  version: number;
  /** The table's name (for messages). */
  name: string;
  /** The node at the path; undefined when there is none. */
  node: JsonValue | undefined;
  /** The node's JSON text when it came as is from the snapshot (no patch reached it). */
  text: string | undefined;
}

/**
 * The node at `tokens` in the table's latest data, or undefined when the table does not exist.
 * Reads the snapshot's subtree and replays the patches since; when a patch may have moved the
 * node (items spliced into an array above it), reads again from the ancestor the patch edits.
 */
export async function readNode(
  db: Db,
  tableId: string,
  tokens: readonly string[],
): Promise<StoredNode | undefined> {
  let depth = tokens.length;
  for (;;) {
    const at = tokens.slice(0, depth);
    const subtree = await readSubtree(db, tableId, at);
    if (!subtree) return undefined;
    const base = subtree.text === null ? undefined : (JSON.parse(subtree.text) as JsonValue);
    const advanced = advanceContext(base, at, subtree.patches);
    if ('rereadFrom' in advanced) {
      // Shallower every time, and the root is never moved: this ends.
      if (advanced.rereadFrom >= depth) throw inconsistent(tableId);
      depth = advanced.rereadFrom;
      continue;
    }
    const exact = depth === tokens.length && subtree.patches.length === 0;
    return {
      version: subtree.version,
      name: subtree.name,
      node: nodeAtTokens(advanced.state as JsonValue | undefined, tokens.slice(depth)),
      text: exact && subtree.text !== null ? subtree.text : undefined,
    };
  }
}

function inconsistent(tableId: string): DomainError {
  return new DomainError('INTERNAL', `the stored changes of table ${tableId} do not fit its data`, {
    table_id: tableId,
  });
}

/** The table's version, or undefined when it does not exist. */
export async function tableVersion(db: Db, tableId: string): Promise<number | undefined> {
  const rows = await db.$queryRaw<{ version: number }[]>`SELECT version FROM "table" WHERE id = ${tableId}`;
  return rows[0]?.version;
}

/**
 * Locks the table row for the rest of the transaction; its version, the size of its data (null
 * while unmeasured) and its rules' JSON text (null: none), or undefined when it does not exist.
 */
export async function lockTable(
  tx: Db,
  tableId: string,
): Promise<{ version: number; bytes: number | null; rules: string | null } | undefined> {
  const rows = await tx.$queryRaw<{ version: number; bytes: number | null; rules: string | null }[]>`
    SELECT version, bytes, rules::text AS rules FROM "table" WHERE id = ${tableId} FOR UPDATE`;
  return rows[0];
}

/** The size `table.bytes` holds for data whose compact JSON is `text`: its UTF-8 length. */
export function dataBytes(text: string): number {
  return Buffer.byteLength(text);
}

/**
 * The size of the table's latest data, measured from the whole document: only for a table whose
 * row does not hold it yet (stored before it was kept). The table row must be locked.
 */
export async function measureData(tx: Db, tableId: string): Promise<number | undefined> {
  const document = (await tableDocuments(tx, [tableId])).get(tableId);
  return document && dataBytes(JSON.stringify(document.data));
}

/** The patches of the versions after `after` that are still stored, in order. */
export async function patchesAfter(db: Db, tableId: string, after: number): Promise<VersionChanges[]> {
  const rows = await db.$queryRaw<{ patches: string | null }[]>`
    SELECT json_agg(json_build_object('version', version, 'changes', changes) ORDER BY version)::text AS patches
    FROM table_patch WHERE table_id = ${tableId} AND version > ${after}`;
  return parseVersions(rows[0]?.patches ?? null);
}

/**
 * Stores the edits of writes as the versions they make (consecutive, the first one after the
 * table's) and moves the table to the last, its data now `bytes` large; the table row must be
 * locked by the transaction. Each patch's `changes` is the JSON text of a DataChange[].
 */
export async function appendPatches(
  tx: Db,
  tableId: string,
  patches: readonly { version: number; changes: string }[],
  bytes: number,
): Promise<void> {
  const last = patches.at(-1);
  if (last === undefined) return;
  await tx.$executeRaw`
    WITH patch AS (
      INSERT INTO table_patch (table_id, version, changes)
      SELECT ${tableId}, x.version, x.changes::json
      FROM unnest(${patches.map((p) => p.version)}::int[], ${patches.map((p) => p.changes)}::text[])
        AS x(version, changes))
    UPDATE "table" SET version = ${last.version}, bytes = ${bytes}, updated_at = now() WHERE id = ${tableId}`;
}

/** A new table's snapshot of `data` (version 1; `text` is its JSON), as Prisma writes it. */
export function firstSnapshot(data: unknown, text = JSON.stringify(data)) {
  return {
    version: 1,
    // Prisma writes a JS null as SQL NULL; a JSON null must be spelled JsonNull.
    data: data === null ? Prisma.JsonNull : (data as Prisma.InputJsonValue),
    bytes: text.length,
  };
}

/**
 * Makes the data whose JSON is `text` the whole data of the table at `version` (the table row
 * already moved there, in this transaction): the snapshot is replaced and every patch before it
 * dropped.
 */
export async function replaceData(tx: Db, tableId: string, version: number, text: string): Promise<void> {
  await tx.$executeRaw`
    UPDATE table_snapshot SET data = ${text}::jsonb, bytes = ${text.length}, version = ${version}
    WHERE table_id = ${tableId}`;
  await tx.$executeRaw`DELETE FROM table_patch WHERE table_id = ${tableId} AND version <= ${version}`;
}

/** Whole documents: the latest data and version of each table in `tableIds` that exists. */
export async function tableDocuments(
  db: Db,
  tableIds: readonly string[],
): Promise<Map<string, { data: JsonValue; version: number }>> {
  if (tableIds.length === 0) return new Map();
  return documentsOf(await db.$queryRaw<DocumentRow[]>(documentsQuery(tableIds)));
}

export interface DocumentRow {
  id: string;
  data: string;
  patches: string | null;
  version: number;
}

function documentsQuery(tableIds: readonly string[]): Prisma.Sql {
  return Prisma.sql`
    SELECT s.table_id AS id, s.data::text AS data, ${PATCHES_AFTER_SNAPSHOT} AS patches, t.version
    FROM table_snapshot s JOIN "table" t ON t.id = s.table_id WHERE s.table_id = ANY(${[...tableIds]}::text[])`;
}

/** The documents of every table of a user, for a batch of queries that must share one snapshot. */
export function ownDocumentsQuery(userId: string): Prisma.Sql {
  return Prisma.sql`
    SELECT s.table_id AS id, s.data::text AS data, ${PATCHES_AFTER_SNAPSHOT} AS patches, t.version
    FROM table_snapshot s JOIN "table" t ON t.id = s.table_id WHERE t.user_id = ${userId}`;
}

/** The documents of `documentsQuery`'s rows, by table id. */
export function documentsOf(rows: readonly DocumentRow[]): Map<string, { data: JsonValue; version: number }> {
  const out = new Map<string, { data: JsonValue; version: number }>();
  for (const row of rows) {
    const changes = parseVersions(row.patches).flatMap((p) => p.changes);
    out.set(row.id, { data: applyChanges(JSON.parse(row.data) as JsonValue, changes), version: row.version });
  }
  return out;
}

/**
 * Folds the table's patches into its snapshot and drops them, once there are at least
 * `minimum(bytes)` of them for a snapshot of `bytes` (a fold rewrites the whole snapshot, so a large
 * one waits for more patches). Answers how many were folded: 0 when too few, or when another fold
 * of the table is under way. Writers are never blocked: the snapshot has its own row.
 */
export async function foldPatches(
  prisma: PrismaClient,
  tableId: string,
  minimum: (bytes: number) => number,
): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const heads = await tx.$queryRaw<{ version: number; bytes: number; pending: number }[]>`
      SELECT s.version, s.bytes,
        (SELECT count(*)::int FROM table_patch p WHERE p.table_id = s.table_id AND p.version > s.version) AS pending
      FROM table_snapshot s WHERE s.table_id = ${tableId} FOR UPDATE SKIP LOCKED`;
    const head = heads[0];
    if (!head || head.pending === 0 || head.pending < minimum(head.bytes)) return 0;
    const rows = await tx.$queryRaw<{ data: string; patches: string | null }[]>`
      SELECT s.data::text AS data, ${PATCHES_AFTER_SNAPSHOT} AS patches
      FROM table_snapshot s WHERE s.table_id = ${tableId}`;
    const row = rows[0];
    const patches = parseVersions(row?.patches ?? null);
    const last = patches.at(-1);
    if (!row || !last) return 0;
    const changes: DataChange[] = patches.flatMap((p) => p.changes);
    const data = JSON.stringify(applyChanges(JSON.parse(row.data) as JsonValue, changes));
    await tx.$executeRaw`
      UPDATE table_snapshot SET data = ${data}::jsonb, bytes = ${data.length}, version = ${last.version}
      WHERE table_id = ${tableId}`;
    await tx.$executeRaw`DELETE FROM table_patch WHERE table_id = ${tableId} AND version <= ${last.version}`;
    return patches.length;
  }, FOLD_TRANSACTION);
}
