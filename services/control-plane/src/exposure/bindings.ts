/**
 * Bindings: AEI -> ADI, each with a tool name unique in the AEI (inherited from the ADI's name
 * unless set), optional description and input-schema overrides, and an on/off switch.
 */
import type {
  Binding as BindingBody,
  CreateBindingItem,
  PageQuery,
  UpdateBindingBody,
} from '@bindery/contracts';
import { Prisma, type Adi, type AeiBinding } from '../generated/prisma/client.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { findOwnAdi } from '../kinds/adis.ts';
import { findOwnAei } from './aeis.ts';
import { checkOutputOverride, checkOverride } from '../kinds/binding-overrides.ts';
import { columnsOf, kindOf } from '../kinds/registry.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpConfigVersions, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { uniqueViolation } from '../domain/prisma-errors.ts';

/** What a binding's overrides are checked against: its ADI's kind and columns as stored. */
function overrideTarget(adi: Adi) {
  return { module: kindOf(adi), columns: columnsOf(adi) };
}

export function bindingBody(b: AeiBinding): BindingBody {
  return {
    id: b.id,
    aei_id: b.aeiId,
    adi_id: b.adiId,
    tool_name: b.toolName,
    tool_name_inherited: b.toolNameInherited,
    tool_description: b.toolDescription,
    input_schema: b.inputSchema as Record<string, unknown> | null,
    output_schema: b.outputSchema as Record<string, unknown> | null,
    enabled: b.enabled,
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt.toISOString(),
  };
}

function nameTaken(name: string, aeiId: string, field: string) {
  return new DomainError('CONFLICT', `tool_name "${name}" is already used in AEI ${aeiId}`, {
    tool_name: name,
    aei_id: aeiId,
    field,
  });
}

/**
 * Binds one or many ADIs of the caller to the caller's AEI, all or nothing. ADIs of other users
 * are NOT_FOUND; a tool_name used twice (in the AEI or the batch) or an ADI bound twice is CONFLICT.
 */
export async function createBindings(
  ctx: DomainContext,
  caller: Principal,
  aeiId: string,
  items: CreateBindingItem[],
): Promise<BindingBody[]> {
  return changeExposure(ctx, async (tx) => {
    await findOwnAei(tx, caller, aeiId);
    const created: BindingBody[] = [];
    const seen = new Map<string, number>();
    for (const [index, item] of items.entries()) {
      const field = items.length > 1 ? `[${index}].` : '';
      const adi = await findOwnAdi(tx, caller, item.adi_id);
      if (item.input_schema) checkOverride(overrideTarget(adi), item.input_schema, `${field}input_schema`);
      if (item.output_schema)
        checkOutputOverride(overrideTarget(adi), item.output_schema, `${field}output_schema`);
      const toolName = item.tool_name ?? adi.name;
      const earlier = seen.get(toolName);
      if (earlier !== undefined) {
        throw new DomainError('CONFLICT', `tool_name "${toolName}" appears twice in this request`, {
          tool_name: toolName,
          indexes: [earlier, index],
        });
      }
      seen.set(toolName, index);
      const clash = await tx.aeiBinding.findFirst({
        where: { aeiId, OR: [{ toolName }, { adiId: adi.id }] },
      });
      if (clash?.adiId === adi.id) {
        throw new DomainError(
          'CONFLICT',
          `ADI ${adi.id} is already bound to AEI ${aeiId} (binding ${clash.id})`,
          {
            adi_id: adi.id,
            binding_id: clash.id,
          },
        );
      }
      if (clash) throw nameTaken(toolName, aeiId, `${field}tool_name`);
      try {
        const binding = await tx.aeiBinding.create({
          data: {
            id: newId('bnd'),
            aeiId,
            adiId: adi.id,
            toolName,
            toolNameInherited: item.tool_name === undefined,
            toolDescription: item.tool_description ?? null,
            inputSchema: (item.input_schema ?? undefined) as Prisma.InputJsonObject | undefined,
            outputSchema: (item.output_schema ?? undefined) as Prisma.InputJsonObject | undefined,
            enabled: item.enabled ?? true,
          },
        });
        created.push(bindingBody(binding));
      } catch (error) {
        if (uniqueViolation(error)) throw nameTaken(toolName, aeiId, `${field}tool_name`);
        throw error;
      }
    }
    return { result: created, changedAeis: await bumpConfigVersions(tx, [aeiId]) };
  });
}

async function findBinding(db: Db, caller: Principal, aeiId: string, bindingId: string) {
  await findOwnAei(db, caller, aeiId);
  const binding = await db.aeiBinding.findFirst({ where: { id: bindingId, aeiId }, include: { adi: true } });
  if (!binding) throw notFound('binding', bindingId);
  return binding;
}

export async function listBindings(db: Db, caller: Principal, aeiId: string, query: PageQuery) {
  await findOwnAei(db, caller, aeiId);
  const w = pageWindow(query);
  const rows = await db.aeiBinding.findMany({
    where: { aeiId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
  });
  return toPage(rows, query, bindingBody);
}

export async function getBinding(db: Db, caller: Principal, aeiId: string, bindingId: string) {
  return bindingBody(await findBinding(db, caller, aeiId, bindingId));
}

/**
 * Updates a binding. `tool_name: null` goes back to inheriting the ADI's name; `tool_description`,
 * `input_schema` and `output_schema` null clear the override.
 */
export async function updateBinding(
  ctx: DomainContext,
  caller: Principal,
  aeiId: string,
  bindingId: string,
  input: UpdateBindingBody,
): Promise<BindingBody> {
  return changeExposure(ctx, async (tx) => {
    const current = await findBinding(tx, caller, aeiId, bindingId);
    if (input.input_schema) checkOverride(overrideTarget(current.adi), input.input_schema, 'input_schema');
    if (input.output_schema)
      checkOutputOverride(overrideTarget(current.adi), input.output_schema, 'output_schema');
    const toolName = input.tool_name === null ? current.adi.name : input.tool_name;
    if (toolName !== undefined && toolName !== current.toolName) {
      const clash = await tx.aeiBinding.findFirst({ where: { aeiId, toolName, id: { not: bindingId } } });
      if (clash) throw nameTaken(toolName, aeiId, 'tool_name');
    }
    let binding: AeiBinding;
    try {
      binding = await tx.aeiBinding.update({
        where: { id: bindingId },
        data: {
          ...(toolName !== undefined && { toolName, toolNameInherited: input.tool_name === null }),
          ...(input.tool_description !== undefined && { toolDescription: input.tool_description }),
          ...(input.input_schema !== undefined && {
            inputSchema:
              input.input_schema === null ? Prisma.DbNull : (input.input_schema as Prisma.InputJsonObject),
          }),
          ...(input.output_schema !== undefined && {
            outputSchema:
              input.output_schema === null ? Prisma.DbNull : (input.output_schema as Prisma.InputJsonObject),
          }),
          ...(input.enabled !== undefined && { enabled: input.enabled }),
        },
      });
    } catch (error) {
      if (uniqueViolation(error)) throw nameTaken(toolName ?? '', aeiId, 'tool_name');
      throw error;
    }
    return { result: bindingBody(binding), changedAeis: await bumpConfigVersions(tx, [aeiId]) };
  });
}

export async function deleteBinding(ctx: DomainContext, caller: Principal, aeiId: string, bindingId: string) {
  await changeExposure(ctx, async (tx) => {
    await findBinding(tx, caller, aeiId, bindingId);
    await tx.aeiBinding.delete({ where: { id: bindingId } });
    return { result: undefined, changedAeis: await bumpConfigVersions(tx, [aeiId]) };
  });
}
