/**
 * Whether tools' contexts exist in their tables' current data. An ADI is saved only on a json_path
 * that exists (the refusal shows what does exist, so the path can be fixed); one whose context
 * disappeared later (the data was edited) is listed as `context_missing`. Existence is PostgreSQL's
 * `data #> path IS NOT NULL`, the same lookup the executor reads a context with, so the two agree.
 */
import type { AdiStatus } from '@bindery/contracts';
import { formatPointer } from '@bindery/context-ops';
import { DomainError } from '../errors.ts';
import type { Db } from './context.ts';

/** Keys of an object shown in the refusal at most: enough to spot a typo, short enough to read. */
const KEYS_SHOWN = 20;

export interface ContextRef {
  id: string;
  tableId: string;
  tokens: readonly string[];
}

/**
 * `ok` or `context_missing` for each ref, by id, from the tables' current data, in one query. Each
 * distinct (table, path) is looked up once: PostgreSQL decompresses a stored document for every
 * lookup in it (about 6 ms for 10 MB), and tools commonly share a context.
 */
export async function contextStatuses(db: Db, refs: readonly ContextRef[]): Promise<Map<string, AdiStatus>> {
  const statuses = new Map<string, AdiStatus>();
  if (refs.length === 0) return statuses;
  const places = new Map<string, { table_id: string; tokens: readonly string[] }>();
  const placeOf = (ref: ContextRef) => JSON.stringify([ref.tableId, ref.tokens]);
  for (const ref of refs) places.set(placeOf(ref), { table_id: ref.tableId, tokens: ref.tokens });
  const rows = JSON.stringify([...places].map(([place, p]) => ({ place, ...p })));
  const found = await db.$queryRaw<{ place: string; present: boolean }[]>`
    SELECT x.place, (t.data #> ARRAY(SELECT jsonb_array_elements_text(x.tokens))) IS NOT NULL AS present
    FROM jsonb_to_recordset(${rows}::jsonb) AS x(place text, table_id text, tokens jsonb)
    JOIN "table" t ON t.id = x.table_id`;
  const present = new Map(found.map((row) => [row.place, row.present]));
  for (const ref of refs) statuses.set(ref.id, present.get(placeOf(ref)) ? 'ok' : 'context_missing');
  return statuses;
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
  const path = [...tokens];
  // Prefixes exist from the root down to some depth: count those that do (prefix 0 is the root).
  const depthRows = await db.$queryRaw<{ depth: number }[]>`
    SELECT (count(*) - 1)::int AS depth
    FROM "table" t, generate_series(0, cardinality(${path}::text[])) AS i
    WHERE t.id = ${table.id} AND t.data #> (${path}::text[])[1:i] IS NOT NULL`;
  const depth = depthRows[0]?.depth ?? -1;
  if (depth >= path.length) return;
  // The table itself is always there (its row was found by the caller); depth -1 means it vanished.
  const prefix = path.slice(0, Math.max(depth, 0));
  const shapeRows = await db.$queryRaw<NodeShape[]>`
    SELECT jsonb_typeof(n) AS type,
      CASE WHEN jsonb_typeof(n) = 'object' THEN ARRAY(
        SELECT k FROM jsonb_object_keys(n) AS k ORDER BY k COLLATE "C" LIMIT ${KEYS_SHOWN}) END AS keys,
      CASE WHEN jsonb_typeof(n) = 'object' THEN (SELECT count(*) FROM jsonb_object_keys(n))::int
           WHEN jsonb_typeof(n) = 'array' THEN jsonb_array_length(n) END AS size
    FROM (SELECT data #> ${prefix}::text[] AS n FROM "table" WHERE id = ${table.id}) AS s`;
  const shape = shapeRows[0] ?? { type: 'null', keys: null, size: null };
  const existing = formatPointer(prefix);
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
