/**
 * The `context` kind: one of the ten prebuilt operations (context-ops) on the context at
 * `json_path` of a table. The only module that reaches the operation registry: reads come from
 * the context cache (long `query`s from the worker pool), writes go through the row-locked store
 * with their idempotency record in the same transaction.
 */
import {
  CreateContextAdiBody,
  isOperationType,
  type OperationType,
  type ToolAnnotations,
  type UpdateAdiBody,
  WRAPPED_RESULT_OPERATIONS,
} from '@bindery/contracts';
import {
  OPERATIONS,
  executeRead,
  executeWrite,
  parsePointer,
  parsePointerArgument,
  resolveTokens,
  validateAdiConfig,
  type JsonValue,
} from '@bindery/context-ops';
import { DomainError, fromOpError } from '../../domain/errors.ts';
import { idempotent, recordOutcome, replayIfRecorded } from '../idempotency.ts';
import { defaultToolName } from '../tool-naming.ts';
import {
  ToolAnswer,
  type KindColumns,
  type KindServices,
  type ToolCall,
  type ToolKindModule,
  type ToolPlace,
} from '../kind.ts';
import type { QueryPool } from './query-pool.ts';

/** What a context tool's call is given besides every kind's services. */
export interface ContextKindServices extends KindServices {
  /** Runs `query`: in-process for a short slice, then in a worker thread (query-pool.ts). */
  queries: QueryPool;
}

type ContextPatch = Pick<UpdateAdiBody, 'json_path' | 'config'>;

/** A context ADI's columns: all three context columns are set. */
export interface ContextColumns extends KindColumns {
  tableId: string;
  jsonPath: string;
  operationType: OperationType;
}

/** The operation of stored columns; INTERNAL when the row was edited by hand to something else. */
export function operationOf(columns: Pick<KindColumns, 'operationType'>): OperationType {
  const op = columns.operationType;
  if (op === null || !isOperationType(op)) {
    // Only possible if the database was edited by hand: the API accepts the ten types alone.
    throw new DomainError('INTERNAL', `a context ADI has an unknown operation type "${String(op)}"`);
  }
  return op;
}

function contextOf(columns: KindColumns): ContextColumns {
  const op = operationOf(columns);
  if (columns.tableId === null || columns.jsonPath === null) {
    throw new DomainError('INTERNAL', 'a context ADI has no table or json_path');
  }
  return { ...columns, tableId: columns.tableId, jsonPath: columns.jsonPath, operationType: op };
}

/**
 * The config of operation `op`, normalised (`preview_keys`, `id_field`, `item_schema`);
 * VALIDATION_FAILED naming `field` when it does not fit the operation.
 */
export function contextConfig(op: OperationType, config: unknown, field = 'config'): Record<string, unknown> {
  return fromOpError(() => validateAdiConfig(op, config), field);
}

const READ = { readOnlyHint: true, openWorldHint: false } as const;
/** What each operation does to its data, as MCP hints (DESIGN.md §5: writes stay in the table). */
const HINTS: Record<OperationType, Omit<ToolAnnotations, 'title'>> = {
  get_all: READ,
  get_schema: READ,
  preview: READ,
  select: READ,
  query: READ,
  // Adds an item or key; never replaces one (an existing key is a CONFLICT).
  create: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  update: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  delete: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  // Both may replace the value at `to`, and a second call moves or copies again.
  move: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  copy: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
};

const VERBS: Record<OperationType, string> = {
  get_all: 'Get all of',
  get_schema: 'Get the schema of',
  preview: 'Preview',
  select: 'Select from',
  query: 'Query',
  create: 'Add to',
  update: 'Update',
  delete: 'Delete from',
  move: 'Move within',
  copy: 'Copy within',
};

const TITLE_MAX = 200;

/** "Preview CRM /customers": the operation and where it acts, within the title limit. */
function titleOf(op: OperationType, jsonPath: string, place: ToolPlace): string {
  const title = `${VERBS[op]} ${place.tableName ?? 'a table'}${jsonPath === '' ? '' : ` ${jsonPath}`}`;
  return title.length > TITLE_MAX ? `${title.slice(0, TITLE_MAX - 1)}…` : title;
}

/** Every write answer is an object; the new version lets an agent chain expected_version. */
function writeAnswer(result: JsonValue, version: number): Record<string, JsonValue> {
  return { ...(result as Record<string, JsonValue>), table_version: version };
}

/**
 * Runs one operation on its context. A write with an idempotency key records its answer in its
 * own transaction, and a retry of it is answered from that record (ReplayedOutcome) without
 * writing; reads ignore the key, they are safe to repeat.
 */
async function run(call: ToolCall<ContextKindServices>): Promise<JsonValue | ToolAnswer> {
  const { ctx, options, args } = call;
  const adi = contextOf(call.adi);
  const op = adi.operationType;
  const at = {
    tableId: adi.tableId,
    tokens: parsePointer(adi.jsonPath),
    pointer: adi.jsonPath,
    toolName: call.toolName,
  };
  if (OPERATIONS[op].kind === 'read') {
    const read = await options.contexts.read(at);
    if (op === 'query') {
      const place = `${adi.tableId}\u0000${adi.jsonPath}`;
      const context = {
        node: read.node,
        text: () => read.text(),
        key: `${place}\u0000${read.version}`,
        place,
      };
      return ToolAnswer.wrapped(
        await options.queries.run(context, args, adi.config, options.limits, call.userId),
      );
    }
    const result = executeRead(op, read.node, args, adi.config, options.limits).result;
    return WRAPPED_RESULT_OPERATIONS.includes(op) ? ToolAnswer.wrapped(result) : result;
  }
  const { expected_version: expected, ...opArgs } = args;
  const keyed = call.keyed;
  return idempotent(ctx.prisma, keyed, async () => {
    const { result, version } = await options.contexts.write(
      at,
      typeof expected === 'number' ? expected : undefined,
      (node) => executeWrite(op, node, opArgs, adi.config, options.limits),
      options.metrics.writes,
      keyed && {
        // A retry that queued behind its first attempt finds the record once it holds the lock and
        // skips the work; the record's primary key is what guarantees one write either way.
        beforeChange: (tx) => replayIfRecorded(tx, keyed),
        afterChange: (tx, written) => recordOutcome(tx, keyed, writeAnswer(written.result, written.version)),
      },
    );
    return writeAnswer(result, version);
  });
}

/**
 * The node at `pointer` under the tool's context, as `get_all` answers a context (same size limit):
 * what MCP resources/read shows of it. The pointer cannot climb out: `.`/`..` tokens are refused.
 */
async function readContext(call: Pick<ToolCall, 'options' | 'toolName' | 'adi'>, pointer: string) {
  const adi = contextOf(call.adi);
  const tokens = parsePointerArgument(pointer, 'pointer');
  const read = await call.options.contexts.read({
    tableId: adi.tableId,
    tokens: parsePointer(adi.jsonPath),
    pointer: adi.jsonPath,
    toolName: call.toolName,
  });
  const node = resolveTokens(read.node, tokens, { argument: 'pointer', pointer });
  return executeRead('get_all', node, {}, {}, call.options.limits).result;
}

/**
 * The operations whose tool can read the whole context as it is: `get_all`, and `query` and
 * `select` as long as the binding does not narrow their arguments (an override could limit the
 * expressions or keys an agent may ask for). `preview` hides all but key fields, `get_schema` the
 * values, and writes read nothing back: their contexts are not resources.
 */
const WHOLE_CONTEXT_READS: ReadonlySet<string> = new Set(['get_all', 'query', 'select']);

function resourceReadable(columns: KindColumns, override: unknown): boolean {
  const op = columns.operationType;
  return op !== null && WHOLE_CONTEXT_READS.has(op) && (op === 'get_all' || override === null);
}

export const contextKind: ToolKindModule<CreateContextAdiBody, ContextPatch, ContextKindServices> = {
  kind: 'context',
  createBody: CreateContextAdiBody,
  patchFields: ['json_path', 'config'],
  columnsOf: (body) => ({
    tableId: body.table_id,
    jsonPath: body.json_path,
    operationType: body.operation_type,
    config: body.config ?? {},
  }),
  patched: (current, patch) => ({
    ...current,
    ...(patch.json_path !== undefined && { jsonPath: patch.json_path }),
    ...(patch.config !== undefined && { config: patch.config }),
  }),
  check(columns) {
    for (const [field, value] of [
      ['table_id', columns.tableId],
      ['json_path', columns.jsonPath],
      ['operation_type', columns.operationType],
    ] as const) {
      if (value === null) {
        throw new DomainError('VALIDATION_FAILED', `a context ADI needs ${field}`, { field });
      }
    }
    const op = columns.operationType as string;
    if (!isOperationType(op)) {
      throw new DomainError('VALIDATION_FAILED', `unknown operation_type "${op}"`, {
        field: 'operation_type',
      });
    }
    return { ...columns, config: contextConfig(op, columns.config) };
  },
  defaultName: (columns, adiId) => defaultToolName(operationOf(columns), adiId),
  defaultDescription(columns, place) {
    const op = operationOf(columns);
    const jsonPath = columns.jsonPath ?? '';
    const where = jsonPath === '' ? 'the whole table' : `"${jsonPath}"`;
    return `${OPERATIONS[op].summary} Context: ${where} of table "${place.tableName ?? ''}" (operation: ${op}).`;
  },
  inputSchema: (columns) => OPERATIONS[operationOf(columns)].inputSchema,
  // Read before the audit, so it never throws: a hand-edited operation declares nothing.
  outputSchema: (columns) =>
    columns.operationType !== null && isOperationType(columns.operationType)
      ? OPERATIONS[columns.operationType].outputSchema
      : null,
  annotations(columns, place) {
    const op = operationOf(columns);
    return { title: titleOf(op, columns.jsonPath ?? '', place), ...HINTS[op] };
  },
  adiRef(adiId, columns) {
    const adi = contextOf(columns);
    return {
      kind: 'context',
      adi_id: adiId,
      operation_type: adi.operationType,
      table_id: adi.tableId,
      json_path: adi.jsonPath,
      adi_config: adi.config,
    };
  },
  // The stored value as it is: audit rows and metrics name even a row edited by hand.
  operation: (columns) => columns.operationType ?? 'unknown',
  run,
  readContext,
  resourceReadable,
};
