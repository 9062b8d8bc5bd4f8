/**
 * ADIs: one tool each, of a kind (kinds/registry.ts): one operation on one context, and later custom
 * code or an HTTP call. An ADI's `name` is the tool name its bindings inherit, so a rename is
 * checked against every AEI it is bound to before it lands. Its json_path, when it has one, must
 * exist in the table's data when it is saved; its `status` says whether it still does.
 */
import {
  COMMON_ADI_PATCH_FIELDS,
  DEFAULT_ADI_KIND,
  TOOL_NAME_RE,
  isOperationType,
  type Adi as AdiBody,
  type AdiKind,
  type AdiStatus,
  type CreateAdiBody,
  type PageQuery,
  type UpdateAdiBody,
} from '@bindery/contracts';
import { parsePointer } from '@bindery/context-ops';
import type { Adi, Prisma } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal, SourceChecker } from '../domain/context.ts';
import { brokenOverrides } from './binding-overrides.ts';
import { contextStatuses, requireContext } from '../context/context-presence.ts';
import { bumpForAdis, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';
import { findOwnProject } from '../context/projects.ts';
import { findOwnTable } from '../context/tables.ts';
import {
  checkColumns,
  checkPatchFields,
  columnsOf,
  kindOf,
  offeredKind,
  type KindColumns,
  type RegisteredKind,
} from './registry.ts';

type AdiWithTable = Adi & { table: { projectId: string | null; name: string } | null };

/**
 * The project an ADI belongs to: its table's, when it has a table (moving the table moves its
 * tools), else its own `project_id` (tools without a table; null: no project, the default app).
 */
export function projectIdOf(adi: Pick<Adi, 'projectId'> & { table: { projectId: string | null } | null }) {
  return adi.table ? adi.table.projectId : adi.projectId;
}

export function adiBody(adi: AdiWithTable, status: AdiStatus): AdiBody {
  const module = kindOf(adi);
  const columns = columnsOf(adi);
  const op = adi.operationType;
  return {
    id: adi.id,
    kind: module.kind,
    table_id: adi.tableId,
    project_id: projectIdOf(adi),
    json_path: adi.jsonPath,
    operation_type: op !== null && isOperationType(op) ? op : null,
    name: adi.name,
    description: adi.description,
    category: adi.category,
    config: adi.config as Record<string, unknown>,
    input_schema: module.inputSchema(columns),
    output_schema: module.outputSchema(columns),
    annotations: module.annotations(columns, { tableName: adi.table?.name ?? null }),
    status,
    created_at: adi.createdAt.toISOString(),
    updated_at: adi.updatedAt.toISOString(),
  };
}

const WITH_TABLE = { table: { select: { projectId: true, name: true } } } as const;

/** The caller's ADI, or NOT_FOUND (also for other users' ADIs, so their ids are not revealed). */
export async function findOwnAdi(db: Db, caller: Principal, id: string): Promise<AdiWithTable> {
  const adi = await db.adi.findFirst({ where: { id, userId: caller.userId }, include: WITH_TABLE });
  if (!adi) throw notFound('ADI', id);
  return adi;
}

/** The bodies of these ADIs, each with its status read from its table's current data. */
async function adiBodies(db: Db, adis: AdiWithTable[]): Promise<AdiBody[]> {
  const refs = adis.flatMap((a) =>
    a.tableId !== null && a.jsonPath !== null
      ? [{ id: a.id, tableId: a.tableId, tokens: parsePointer(a.jsonPath) }]
      : [],
  );
  const statuses = await contextStatuses(db, refs);
  // An ADI without a context has nothing to go missing.
  return adis.map((a) => adiBody(a, a.tableId === null ? 'ok' : (statuses.get(a.id) ?? 'context_missing')));
}

async function adiBodyNow(db: Db, adi: AdiWithTable): Promise<AdiBody> {
  const [body] = await adiBodies(db, [adi]);
  // adiBodies answers one body per ADI given.
  return body as AdiBody;
}

function checkToolName(name: string, field: string): void {
  if (!TOOL_NAME_RE.test(name)) {
    throw new DomainError('VALIDATION_FAILED', `${field} must match ^[A-Za-z0-9_.-]{1,64}$, got "${name}"`, {
      field,
    });
  }
}

/** Refuses a context the caller does not own (NOT_FOUND) or that is not in its table's data. */
async function requireOwnContext(db: Db, caller: Principal, columns: KindColumns): Promise<void> {
  if (columns.tableId === null || columns.jsonPath === null) return;
  const table = await findOwnTable(db, caller, columns.tableId);
  await requireContext(db, table, columns.jsonPath, parsePointer(columns.jsonPath));
}

/** The field an ADI's placement (not its kind) is changed by; adis.ts handles it for every kind. */
const PROJECT_FIELD = 'project_id';

/**
 * The project_id to store: null unless given; given, it must be one of the caller's projects
 * (NOT_FOUND otherwise) and the ADI must have no table (a tool with a table is in its table's).
 */
async function checkedProject(
  db: Db,
  caller: Principal,
  projectId: string | null | undefined,
  columns: KindColumns,
): Promise<string | null> {
  if (projectId === undefined || projectId === null) return null;
  if (columns.tableId !== null) {
    throw new DomainError(
      'VALIDATION_FAILED',
      'project_id: an ADI with a table belongs to its table’s project; move the table instead',
      { field: PROJECT_FIELD },
    );
  }
  await findOwnProject(db, caller, projectId);
  return projectId;
}

function storedColumns(columns: KindColumns) {
  return {
    tableId: columns.tableId,
    jsonPath: columns.jsonPath,
    operationType: columns.operationType,
    config: columns.config as Prisma.InputJsonObject,
  };
}

/**
 * Every check a create body passes before it is stored, with its errors: the kind offered, the
 * name, the kind's own checks (a custom tool's source in `sandbox`), the context and the project.
 * A trial run (trial-runs.ts) checks its config through here too.
 */
export async function checkAdiDraft(
  db: Db,
  caller: Principal,
  input: CreateAdiBody,
  sandbox?: SourceChecker,
): Promise<{ module: RegisteredKind; columns: KindColumns; projectId: string | null }> {
  const module = offeredKind(input.kind ?? DEFAULT_ADI_KIND);
  if (input.name !== undefined) checkToolName(input.name, 'name');
  const columns = await checkColumns(module, module.columnsOf(input), { db, caller, sandbox });
  await requireOwnContext(db, caller, columns);
  const projectId = await checkedProject(
    db,
    caller,
    PROJECT_FIELD in input ? (input as { project_id?: string | null }).project_id : undefined,
    columns,
  );
  return { module, columns, projectId };
}

/**
 * Creates an ADI of the body's kind (context when absent). A kind this server does not offer is
 * VALIDATION_FAILED naming `kind`; a table that is not the caller's is NOT_FOUND. `sandbox` checks
 * a custom tool's source.
 */
export async function createAdi(
  db: Db,
  caller: Principal,
  input: CreateAdiBody,
  sandbox?: SourceChecker,
): Promise<AdiBody> {
  const { module, columns, projectId } = await checkAdiDraft(db, caller, input, sandbox);
  const id = newId('adi');
  const adi = await db.adi.create({
    data: {
      id,
      userId: caller.userId,
      kind: module.kind,
      projectId,
      ...storedColumns(columns),
      name: input.name ?? module.defaultName(columns, id),
      description: input.description ?? null,
      category: input.category ?? null,
    },
    include: WITH_TABLE,
  });
  return adiBody(adi, 'ok');
}

export async function getAdi(db: Db, caller: Principal, id: string): Promise<AdiBody> {
  return adiBodyNow(db, await findOwnAdi(db, caller, id));
}

export async function listAdis(
  db: Db,
  caller: Principal,
  query: PageQuery & { table_id?: string; kind?: AdiKind; upstream_server_id?: string },
) {
  const w = pageWindow(query);
  const rows = await db.adi.findMany({
    where: {
      userId: caller.userId,
      ...(query.table_id !== undefined && { tableId: query.table_id }),
      ...(query.kind !== undefined && { kind: query.kind }),
      ...(query.upstream_server_id !== undefined && { upstreamServerId: query.upstream_server_id }),
      ...w.idAfter,
    },
    orderBy: w.orderBy,
    take: w.take,
    include: WITH_TABLE,
  });
  const page = toPage(rows, query, (row) => row);
  return { items: await adiBodies(db, page.items), next_cursor: page.next_cursor };
}

/**
 * Updates an ADI. Fields of another kind are refused (VALIDATION_FAILED); the kind's own fields
 * are checked as at creation, and a new `json_path` must exist in the table's data. A new `name`
 * renames every binding that inherits it; if that would clash with another tool of any of those
 * AEIs the whole update is refused with CONFLICT naming them.
 */
export async function updateAdi(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  input: UpdateAdiBody,
): Promise<AdiBody> {
  if (input.name !== undefined) checkToolName(input.name, 'name');
  return changeExposure(ctx, async (tx) => {
    const current = await findOwnAdi(tx, caller, id);
    const module = kindOf(current);
    checkPatchFields(module, input, COMMON_ADI_PATCH_FIELDS);
    const before = columnsOf(current);
    // project_id places the ADI; its kind's settings stay as they are (and are not checked again).
    const changesKind = module.patchFields.some((field) => field !== PROJECT_FIELD && field in input);
    const columns = changesKind
      ? await checkColumns(module, module.patched(before, input), { db: tx, caller, sandbox: ctx.sandbox })
      : undefined;
    if (columns && (columns.tableId !== before.tableId || columns.jsonPath !== before.jsonPath)) {
      await requireOwnContext(tx, caller, columns);
    }
    if (columns) {
      const broken = await brokenOverrides(tx, [{ id, module, columns }]);
      if (broken.length > 0) {
        throw new DomainError(
          'CONFLICT',
          `this change would leave ${broken.length} binding override(s) promising what the tool no longer does ` +
            `(${broken.map((b) => `"${b.tool_name}"`).join(', ')}); change or clear their input_schema or output_schema first`,
          {
            binding_ids: broken.map((b) => b.binding_id),
            aei_ids: broken.map((b) => b.aei_id),
            bindings: broken,
          },
        );
      }
    }
    const projectId =
      input.project_id !== undefined
        ? await checkedProject(tx, caller, input.project_id, columns ?? before)
        : undefined;
    if (input.name !== undefined && input.name !== current.name) {
      await renameInheritingBindings(tx, id, input.name);
    }
    const adi = await tx.adi.update({
      where: { id },
      data: {
        ...(columns && storedColumns(columns)),
        ...(projectId !== undefined && { projectId }),
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.category !== undefined && { category: input.category }),
      },
      include: WITH_TABLE,
    });
    return { result: await adiBodyNow(tx, adi), changedAeis: await bumpForAdis(tx, [id]) };
  });
}

/**
 * Renames the bindings of an ADI that inherit its name; CONFLICT naming the exposures where another
 * tool already has that name (the OpenAPI re-import renames through here too).
 */
export async function renameInheritingBindings(tx: Db, adiId: string, name: string): Promise<void> {
  const inheriting = await tx.aeiBinding.findMany({
    where: { adiId, toolNameInherited: true },
    select: { id: true, aeiId: true },
  });
  if (inheriting.length === 0) return;
  const clashes = await tx.aeiBinding.findMany({
    where: { aeiId: { in: inheriting.map((b) => b.aeiId) }, toolName: name, adiId: { not: adiId } },
    select: { aeiId: true, id: true },
  });
  if (clashes.length > 0) {
    throw new DomainError(
      'CONFLICT',
      `renaming this ADI to "${name}" would clash with a tool of the same name in ${clashes.length} exposure(s)`,
      { tool_name: name, aei_ids: clashes.map((c) => c.aeiId), binding_ids: clashes.map((c) => c.id) },
    );
  }
  try {
    await tx.aeiBinding.updateMany({ where: { adiId, toolNameInherited: true }, data: { toolName: name } });
  } catch (error) {
    if (uniqueViolation(error)) {
      throw new DomainError('CONFLICT', `tool name "${name}" is already taken in an exposure of this ADI`, {
        tool_name: name,
      });
    }
    throw error;
  }
}

/** Deletes an ADI; refused with CONFLICT while bound unless `force`, which unbinds it everywhere. */
export async function deleteAdi(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  force: boolean,
): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    await findOwnAdi(tx, caller, id);
    const bindings = await tx.aeiBinding.findMany({ where: { adiId: id }, select: { aeiId: true } });
    if (bindings.length > 0 && !force) {
      throw new DomainError(
        'CONFLICT',
        `ADI ${id} is bound to ${bindings.length} exposure(s); unbind it or pass ?force=true`,
        { aei_ids: bindings.map((b) => b.aeiId) },
      );
    }
    const changedAeis = await bumpForAdis(tx, [id]);
    await tx.adi.delete({ where: { id } });
    return { result: undefined, changedAeis };
  });
}
