/**
 * Whether tools' contexts exist in their tables' current data. An ADI is saved only on a json_path
 * that exists (the refusal shows what does exist, so the path can be fixed); one whose context
 * disappeared later (the data was edited) is listed as `context_missing`. Existence is PostgreSQL's
 * `data #> path IS NOT NULL` on the table's snapshot, brought forward by the patches since (the
 * same reading of a path the executor's reads make, so the two agree).
 */
import type { AdiStatus } from '@bindery/contracts';
import {
  advanceContext,
  formatPointer,
  nodeAtTokens,
  PRESENT,
  type JsonValue,
  type VersionChanges,
} from '@bindery/context-ops';
import { DomainError } from '../domain/errors.ts';
import type { Db } from '../domain/context.ts';
import { PATCHES_AFTER_SNAPSHOT, readNode } from './table-data.ts';

/** Keys of an object shown in the refusal at most: enough to spot a typo, short enough to read. */
const KEYS_SHOWN = 20;

export interface ContextRef {
  id: string;
  tableId: string;
  tokens: readonly string[];
}

/**
 * `ok` or `context_missing` for each ref, by id, from the tables' current data, in one query (and
 * one more per context a patch may have moved). Each distinct (table, path) is looked up once:
 * PostgreSQL decompresses a stored document for every lookup in it (about 6 ms for 10 MB), and
 * tools commonly share a context.
 */
export async function contextStatuses(db: Db, refs: readonly ContextRef[]): Promise<Map<string, AdiStatus>> {
  const statuses = new Map<string, AdiStatus>();
  if (refs.length === 0) return statuses;
  const places = new Map<string, { table_id: string; tokens: readonly string[] }>();
  const placeOf = (ref: ContextRef) => JSON.stringify([ref.tableId, ref.tokens]);
  for (const ref of refs) places.set(placeOf(ref), { table_id: ref.tableId, tokens: ref.tokens });
  const rows = JSON.stringify([...places].map(([place, p]) => ({ place, ...p })));
  // Each table's patches come once, with its first place (one statement: one consistent view).
  const found = await db.$queryRaw<
    { place: string; table_id: string; present: boolean; patches: string | null }[]
  >`
    SELECT x.place, x.table_id,
      (s.data #> ARRAY(SELECT jsonb_array_elements_text(x.tokens))) IS NOT NULL AS present,
      CASE WHEN row_number() OVER (PARTITION BY x.table_id ORDER BY x.place) = 1
        THEN ${PATCHES_AFTER_SNAPSHOT} END AS patches
    FROM jsonb_to_recordset(${rows}::jsonb) AS x(place text, table_id text, tokens jsonb)
    JOIN table_snapshot s ON s.table_id = x.table_id`;
  const patches = new Map<string, VersionChanges[]>();
  for (const row of found) {
    if (row.patches !== null) patches.set(row.table_id, JSON.parse(row.patches) as VersionChanges[]);
  }
  const present = new Map<string, boolean>();
  for (const row of found) {
    const place = places.get(row.place);
    if (!place) continue;
    const since = patches.get(row.table_id) ?? [];
    present.set(row.place, await presentNow(db, place.table_id, place.tokens, row.present, since));
  }
  for (const ref of refs) statuses.set(ref.id, present.get(placeOf(ref)) ? 'ok' : 'context_missing');
  return statuses;
}

/** Whether a path present (or not) in the snapshot is there after the patches since. */
async function presentNow(
  db: Db,
  tableId: string,
  tokens: readonly string[],
  inSnapshot: boolean,
  patches: readonly VersionChanges[],
): Promise<boolean> {
  if (patches.length === 0) return inSnapshot;
  const advanced = advanceContext(inSnapshot ? PRESENT : undefined, tokens, patches);
  if ('state' in advanced) return advanced.state !== undefined;
  // A patch may have moved it (items spliced into an array above it): read it.
  return (await readNode(db, tableId, tokens))?.node !== undefined;
}

interface NodeShape {
  type: string;
  keys: string[] | null;
  size: number | null;
}

/** What the node at the deepest existing prefix is, in words, for the refusal's message. */
function describe(node: NodeShape): string {
  switch (node.type) {
    case 'object': {
      const count = node.size ?? 0;
      if (count === 0) return 'an empty object';
      const keys = (node.keys ?? []).join(', ');
      return count > KEYS_SHOWN
        ? `an object with ${count} keys, the first ${KEYS_SHOWN}: ${keys}`
        : `an object with keys ${keys}`;
    }
    case 'array': {
      const length = node.size ?? 0;
      return length === 0
        ? 'an empty array'
        : `an array of ${length} item(s): continue with an index from 0 to ${length - 1}`;
    }
    default:
      return `a ${node.type}, which has nothing inside it`;
  }
}

/**
 * Refuses (VALIDATION_FAILED) a json_path with nothing at it in the table's current data, naming
 * the deepest part of it that exists and that node's keys (the first 20, sorted) or length.
 */
export async function requireContext(
  db: Db,
  table: { id: string; name: string },
  pointer: string,
  tokens: readonly string[],
): Promise<void> {
  const statuses = await contextStatuses(db, [{ id: 'context', tableId: table.id, tokens }]);
  if (statuses.get('context') === 'ok') return;
  // Refused: what exists is read from the whole document (only on this path, for the message).
  const root = (await readNode(db, table.id, []))?.node ?? null;
  let depth = 0;
  let node: JsonValue = root;
  for (const token of tokens) {
    const child = nodeAtTokens(node, [token]);
    if (child === undefined) break;
    node = child;
    depth += 1;
  }
  const shape = shapeOf(node);
  const existing = formatPointer(tokens.slice(0, depth));
  const where = existing === '' ? '"" (the whole table)' : `"${existing}"`;
  throw new DomainError(
    'VALIDATION_FAILED',
    `json_path "${pointer}" does not exist in table "${table.name}" (${table.id}): the deepest part ` +
      `that exists is ${where}, ${describe(shape)}`,
    {
      field: 'json_path',
      json_path: pointer,
      table_id: table.id,
      existing_path: existing,
      existing_type: shape.type,
      ...(shape.keys !== null && { keys: shape.keys }),
      ...(shape.size !== null && { [shape.type === 'array' ? 'length' : 'key_count']: shape.size }),
    },
  );
}

/** A node's type as PostgreSQL's jsonb_typeof names it, its first keys (bytewise order) or its length. */
function shapeOf(node: JsonValue): NodeShape {
  if (Array.isArray(node)) return { type: 'array', keys: null, size: node.length };
  if (node === null) return { type: 'null', keys: null, size: null };
  if (typeof node === 'object') {
    const keys = Object.keys(node);
    const sorted = keys.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))).slice(0, KEYS_SHOWN);
    return { type: 'object', keys: sorted, size: keys.length };
  }
  return { type: typeof node, keys: null, size: null };
}
