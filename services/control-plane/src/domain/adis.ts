/**
 * ADIs: one operation on one context. An ADI's `name` is the tool name its bindings inherit, so a
 * rename is checked against every AEI it is bound to before it lands. Its json_path must exist in
 * the table's data when it is saved; its `status` says whether it still does.
 */
import {
  TOOL_NAME_RE,
  isOperationType,
  type Adi as AdiBody,
  type AdiStatus,
  type CreateAdiBody,
  type OperationType,
  type PageQuery,
  type UpdateAdiBody,
} from '@bindery/contracts';
import { OPERATIONS, parsePointer, validateAdiConfig } from '@bindery/context-ops';
import type { Adi, Prisma } from '../generated/prisma/client.ts';
import { DomainError, fromOpError, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Db, DomainContext, Principal } from './context.ts';
import { contextStatuses, requireContext } from './context-presence.ts';
import { bumpForAdis, changeExposure } from './exposure.ts';
import { pageWindow, toPage } from './pagination.ts';
import { uniqueViolation } from './prisma-errors.ts';
import { findOwnTable } from './tables.ts';
import { defaultToolName } from './tool-naming.ts';

type AdiWithTable = Adi & { table: { projectId: string | null } };

export function operationOf(adi: Pick<Adi, 'operationType'>): OperationType {
  if (!isOperationType(adi.operationType)) {
    // Only possible if the database was edited by hand: the API accepts the ten types alone.
    throw new DomainError('INTERNAL', `ADI has an unknown operation type "${adi.operationType}"`);
  }
  return adi.operationType;
}

export function adiBody(adi: AdiWithTable, status: AdiStatus): AdiBody {
  const op = operationOf(adi);
  return {
    id: adi.id,
    table_id: adi.tableId,
    project_id: adi.table.projectId,
    json_path: adi.jsonPath,
    operation_type: op,
    name: adi.name,
    description: adi.description,
    category: adi.category,
    config: adi.config as Record<string, unknown>,
    input_schema: OPERATIONS[op].inputSchema,
    status,
    created_at: adi.createdAt.toISOString(),
    updated_at: adi.updatedAt.toISOString(),
  };
}

const WITH_TABLE = { table: { select: { projectId: true } } } as const;

/** The caller's ADI, or NOT_FOUND (also for other users' ADIs, so their ids are not revealed). */
export async function findOwnAdi(db: Db, caller: Principal, id: string): Promise<AdiWithTable> {
  const adi = await db.adi.findFirst({ where: { id, userId: caller.userId }, include: WITH_TABLE });
  if (!adi) throw notFound('ADI', id);
  return adi;
}

function checkPointer(pointer: string): string[] {
  return fromOpError(() => parsePointer(pointer), 'json_path');
}

/** The bodies of these ADIs, each with its status read from its table's current data. */
async function adiBodies(db: Db, adis: AdiWithTable[]): Promise<AdiBody[]> {
  const statuses = await contextStatuses(
    db,
    adis.map((a) => ({ id: a.id, tableId: a.tableId, tokens: parsePointer(a.jsonPath) })),
  );
  return adis.map((a) => adiBody(a, statuses.get(a.id) ?? 'context_missing'));
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

export async function createAdi(db: Db, caller: Principal, input: CreateAdiBody): Promise<AdiBody> {
  if (!isOperationType(input.operation_type)) {
    throw new DomainError('VALIDATION_FAILED', `unknown operation_type "${input.operation_type}"`);
  }
  const op = input.operation_type;
  const tokens = checkPointer(input.json_path);
  if (input.name !== undefined) checkToolName(input.name, 'name');
  const config = fromOpError(() => validateAdiConfig(op, input.config ?? {}), 'config');
  const table = await findOwnTable(db, caller, input.table_id);
  await requireContext(db, table, input.json_path, tokens);
  const id = newId('adi');
  const adi = await db.adi.create({
    data: {
      id,
      userId: caller.userId,
      tableId: input.table_id,
      jsonPath: input.json_path,
      operationType: op,
      name: input.name ?? defaultToolName(op, id),
      description: input.description ?? null,
      category: input.category ?? null,
      config: config as Prisma.InputJsonObject,
    },
    include: WITH_TABLE,
  });
  return adiBody(adi, 'ok');
}

export async function getAdi(db: Db, caller: Principal, id: string): Promise<AdiBody> {
  return adiBodyNow(db, await findOwnAdi(db, caller, id));
}

export async function listAdis(db: Db, caller: Principal, query: PageQuery & { table_id?: string }) {
  const w = pageWindow(query);
  const rows = await db.adi.findMany({
    where: {
      userId: caller.userId,
      ...(query.table_id !== undefined && { tableId: query.table_id }),
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
 * Updates an ADI. A new `json_path` must exist in the table's data (VALIDATION_FAILED otherwise). A
 * new `name` renames every binding that inherits it; if that would clash with another tool of any
 * of those AEIs the whole update is refused with CONFLICT naming them.
 */
export async function updateAdi(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  input: UpdateAdiBody,
): Promise<AdiBody> {
  const tokens = input.json_path !== undefined ? checkPointer(input.json_path) : undefined;
  if (input.name !== undefined) checkToolName(input.name, 'name');
  return changeExposure(ctx, async (tx) => {
    const current = await findOwnAdi(tx, caller, id);
    if (input.json_path !== undefined && tokens !== undefined) {
      await requireContext(tx, await findOwnTable(tx, caller, current.tableId), input.json_path, tokens);
    }
    const op = operationOf(current);
    const config =
      input.config !== undefined
        ? fromOpError(() => validateAdiConfig(op, input.config), 'config')
        : undefined;
    if (input.name !== undefined && input.name !== current.name) {
      await renameInheritingBindings(tx, id, input.name);
    }
    const adi = await tx.adi.update({
      where: { id },
      data: {
        ...(input.json_path !== undefined && { jsonPath: input.json_path }),
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.category !== undefined && { category: input.category }),
        ...(config !== undefined && { config: config as Prisma.InputJsonObject }),
      },
      include: WITH_TABLE,
    });
    return { result: await adiBodyNow(tx, adi), changedAeis: await bumpForAdis(tx, [id]) };
  });
}

async function renameInheritingBindings(tx: Db, adiId: string, name: string): Promise<void> {
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
