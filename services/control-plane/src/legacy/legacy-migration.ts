/**
 * Legacy migration (seed 001, phase 2): a v1 instance becomes one ADI per v1 tool (same tool name,
 * description and preview keys, on the same context), one AEI of the same user holding the
 * instance's api_key (its hash moves; the key itself is never known here), and a binding per ADI
 * that inherits the ADI's name. The AEI remembers the instance, so the instance's v1 URL keeps
 * serving the same key. One instance migrates in one transaction, all or nothing; a second run
 * finds it migrated and does nothing. A rollback undoes it while the AEI exists.
 */
import type {
  InstanceMigration,
  InstanceRollback,
  MigratedTool,
  MigrateInstancesBody,
  MigrationReport,
} from '@bindery/contracts';
import type { Prisma } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import { newId, newIds } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { changeExposure } from '../domain/config-versions.ts';
import { findOwnInstance, type InstanceRow } from './legacy-instances.ts';
import { legacyTools } from '../kinds/context/legacy-tools.ts';
import { contextConfig } from '../kinds/context/context-kind.ts';

const AEI_NAME_MAX = 200;

/** "crm/customers (v1 mcp_…)": where the tools act and where they came from. */
function aeiNameFor(instance: InstanceRow, tableName: string): string {
  const suffix = ` (v1 ${instance.id})`;
  return `${tableName}${instance.jsonPath}`.slice(0, AEI_NAME_MAX - suffix.length) + suffix;
}

/** The ADIs a migration of this instance creates: one per v1 tool, in the v1 order. */
function plannedTools(instance: InstanceRow): MigratedTool[] {
  return legacyTools(instance).map((tool) => {
    const op = tool.operation_type;
    // v1 applied preview_keys to its preview tool only; the ADI carries them in its config, once
    // each (v1 took a key twice, with the same result; an ADI config refuses that).
    const keys = [...new Set(instance.previewKeys)];
    const raw = op === 'preview' && keys.length > 0 ? { preview_keys: keys } : {};
    return {
      tool_name: tool.name,
      operation_type: op,
      description: tool.description ?? null,
      config: contextConfig(op, raw, 'preview_keys'),
      adi_id: null,
      binding_id: null,
    };
  });
}

async function tableNameOf(db: Db, tableId: string): Promise<string> {
  const table = await db.table.findUniqueOrThrow({ where: { id: tableId }, select: { name: true } });
  return table.name;
}

function alreadyMigrated(instance: InstanceRow): InstanceMigration {
  return {
    instance_id: instance.id,
    outcome: 'already_migrated',
    aei_id: instance.migratedTo?.id ?? null,
    aei_name: null,
    api_key_prefix: instance.apiKeyPrefix,
    tools: [],
  };
}

/**
 * Migrates one of the caller's v1 instances (or, with `dryRun`, reports what it would create).
 * NOT_FOUND for an instance that is not the caller's.
 */
export async function migrateInstance(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  dryRun: boolean,
): Promise<InstanceMigration> {
  if (dryRun) {
    const instance = await findOwnInstance(ctx.prisma, caller, id);
    if (instance.migratedAt) return alreadyMigrated(instance);
    return {
      instance_id: id,
      outcome: 'would_migrate',
      aei_id: null,
      aei_name: aeiNameFor(instance, await tableNameOf(ctx.prisma, instance.tableId)),
      api_key_prefix: instance.apiKeyPrefix,
      tools: plannedTools(instance),
    };
  }
  return changeExposure(ctx, async (tx) => {
    const instance = await findOwnInstance(tx, caller, id);
    if (instance.migratedAt || instance.apiKeyHash === null) {
      return { result: alreadyMigrated(instance), changedAeis: [] };
    }
    const tools = plannedTools(instance);
    const aeiId = newId('aei');
    const adiIds = newIds('adi', tools.length);
    const bindingIds = newIds('bnd', tools.length);
    // Claims the instance: a concurrent migration of it blocks on this row, then finds it
    // claimed (count 0) and reports it migrated.
    const migratedAt = new Date();
    const claimed = await tx.mcpInstance.updateMany({
      where: { id, userId: caller.userId, migratedAt: null, apiKeyHash: instance.apiKeyHash },
      data: { apiKeyHash: null, migratedAt, migratedAdiIds: adiIds },
    });
    if (claimed.count === 0) {
      return { result: alreadyMigrated(await findOwnInstance(tx, caller, id)), changedAeis: [] };
    }
    const aeiName = aeiNameFor(instance, await tableNameOf(tx, instance.tableId));
    await tx.aei.create({
      data: {
        id: aeiId,
        userId: caller.userId,
        name: aeiName,
        apiKeyHash: instance.apiKeyHash,
        apiKeyPrefix: instance.apiKeyPrefix,
        status: instance.status === 'disabled' ? 'disabled' : 'enabled',
        legacyInstanceId: id,
      },
    });
    await tx.adi.createMany({
      data: tools.map((tool, i) => ({
        id: adiIds[i]!,
        userId: caller.userId,
        // A v1 tool was one operation on the instance's context: a context ADI.
        kind: 'context',
        tableId: instance.tableId,
        jsonPath: instance.jsonPath,
        operationType: tool.operation_type,
        name: tool.tool_name,
        description: tool.description,
        config: tool.config as Prisma.InputJsonObject,
      })),
    });
    await tx.aeiBinding.createMany({
      data: tools.map((tool, i) => ({
        id: bindingIds[i]!,
        aeiId,
        adiId: adiIds[i]!,
        toolName: tool.tool_name,
        toolNameInherited: true,
      })),
    });
    const result: InstanceMigration = {
      instance_id: id,
      outcome: 'migrated',
      aei_id: aeiId,
      aei_name: aeiName,
      api_key_prefix: instance.apiKeyPrefix,
      tools: tools.map((tool, i) => ({ ...tool, adi_id: adiIds[i]!, binding_id: bindingIds[i]! })),
    };
    // Nothing to announce: no gateway has the new AEI cached, and one holding the instance's
    // config still serves the same tools (its calls run the new bindings) until its entry expires.
    return { result, changedAeis: [] };
  });
}

/**
 * Migrates several of the caller's instances (`ids`, else all of them), each in its own
 * transaction: one that fails is reported and leaves nothing behind, the others go on.
 * `unexpected` hears failures that are not domain errors (they are reported as INTERNAL).
 */
export async function migrateInstances(
  ctx: DomainContext,
  caller: Principal,
  body: MigrateInstancesBody,
  dryRun: boolean,
  unexpected: (error: unknown, instanceId: string) => void,
): Promise<MigrationReport> {
  const ids =
    body.ids !== undefined
      ? [...new Set(body.ids)]
      : (
          await ctx.prisma.mcpInstance.findMany({
            where: { userId: caller.userId },
            select: { id: true },
            orderBy: { id: 'asc' },
          })
        ).map((row) => row.id);
  const items: InstanceMigration[] = [];
  for (const id of ids) {
    try {
      items.push(await migrateInstance(ctx, caller, id, dryRun));
    } catch (error) {
      const known = error instanceof DomainError;
      if (!known) unexpected(error, id);
      items.push({
        instance_id: id,
        outcome: 'failed',
        aei_id: null,
        aei_name: null,
        api_key_prefix: null,
        tools: [],
        error: known
          ? { code: error.code, message: error.message, ...(error.details && { details: error.details }) }
          : { code: 'INTERNAL', message: 'internal error; nothing was changed for this instance' },
      });
    }
  }
  const count = (outcome: InstanceMigration['outcome']) => items.filter((i) => i.outcome === outcome).length;
  return {
    dry_run: dryRun,
    migrated: count('migrated'),
    would_migrate: count('would_migrate'),
    already_migrated: count('already_migrated'),
    failed: count('failed'),
    items,
  };
}

/**
 * Undoes a migration: the AEI's api_key (the one it has now, rotated or not) and status go back to
 * the instance, the AEI and its bindings are deleted, and so are the ADIs the migration created
 * unless another AEI binds them now. CONFLICT when the AEI was deleted (its key went with it).
 */
export async function rollbackInstance(
  ctx: DomainContext,
  caller: Principal,
  id: string,
  dryRun: boolean,
): Promise<InstanceRollback> {
  return changeExposure(ctx, async (tx) => {
    const instance = await findOwnInstance(tx, caller, id);
    const nothing: InstanceRollback = {
      instance_id: id,
      outcome: 'not_migrated',
      aei_id: null,
      deleted_adi_ids: [],
      kept_adi_ids: [],
    };
    if (!instance.migratedAt) return { result: nothing, changedAeis: [] };
    const aei = instance.migratedTo && (await tx.aei.findUnique({ where: { id: instance.migratedTo.id } }));
    if (!aei) {
      throw new DomainError(
        'CONFLICT',
        `MCP instance ${id} cannot be rolled back: the exposure it was migrated to was deleted, and its api_key with it`,
        { instance_id: id },
      );
    }
    const adis = await tx.adi.findMany({
      where: { id: { in: instance.migratedAdiIds }, userId: caller.userId },
      select: { id: true },
      orderBy: { id: 'asc' },
    });
    const elsewhere = await tx.aeiBinding.findMany({
      where: { adiId: { in: adis.map((a) => a.id) }, aeiId: { not: aei.id } },
      select: { adiId: true },
      distinct: ['adiId'],
    });
    const kept = new Set(elsewhere.map((b) => b.adiId));
    const result: InstanceRollback = {
      instance_id: id,
      outcome: dryRun ? 'would_roll_back' : 'rolled_back',
      aei_id: aei.id,
      deleted_adi_ids: adis.map((a) => a.id).filter((a) => !kept.has(a)),
      kept_adi_ids: adis.map((a) => a.id).filter((a) => kept.has(a)),
    };
    if (dryRun) return { result, changedAeis: [] };
    // The AEI's bindings go with it; its key hash is free again once the row is gone.
    await tx.aei.delete({ where: { id: aei.id } });
    await tx.adi.deleteMany({ where: { id: { in: result.deleted_adi_ids } } });
    await tx.mcpInstance.update({
      where: { id },
      data: {
        apiKeyHash: aei.apiKeyHash,
        apiKeyPrefix: aei.apiKeyPrefix,
        status: aei.status === 'disabled' ? 'disabled' : 'enabled',
        migratedAt: null,
        migratedAdiIds: [],
      },
    });
    // Gateways drop the AEI's entry (cached for either URL); the key then finds the instance.
    return { result, changedAeis: [aei.id] };
  });
}
