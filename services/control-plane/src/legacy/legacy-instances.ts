/**
 * Legacy (v1) MCP instances: one api_key for one context, kept working until migrated to
 * ADI + AEI + bindings. Without a tools_definition an instance exposes every prebuilt operation
 * under its legacy tool name.
 */
import {
  type CreateMcpInstanceBody,
  type McpInstance as McpInstanceBody,
  type PageQuery,
} from '@bindery/contracts';
import { parsePointer } from '@bindery/context-ops';
import { Prisma, type McpInstance } from '../generated/prisma/client.ts';
import { DomainError, fromOpError, notFound } from '../domain/errors.ts';
import { newCredential, newId } from '../domain/ids.ts';
import type { Db, DomainContext, Principal } from '../domain/context.ts';
import { bumpConfigVersions, changeExposure } from '../domain/config-versions.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';
import { findOwnTable } from '../context/tables.ts';
import { legacyTools } from '../kinds/context/legacy-tools.ts';

/** An instance row with the id of the AEI it was migrated to, if any. */
export type InstanceRow = McpInstance & { migratedTo: { id: string } | null };

/** Reads the link to the AEI an instance was migrated to along with the instance. */
export const WITH_MIGRATION = { migratedTo: { select: { id: true } } } as const;

export function instanceBody(i: InstanceRow): McpInstanceBody {
  return {
    id: i.id,
    table_id: i.tableId,
    json_pointer: i.jsonPath,
    tools_definition: legacyTools(i),
    preview_keys: i.previewKeys,
    status: i.migratedAt ? 'migrated' : i.status === 'disabled' ? 'disabled' : 'enabled',
    api_key_prefix: i.apiKeyPrefix,
    migrated_to_aei_id: i.migratedTo?.id ?? null,
    migrated_at: i.migratedAt?.toISOString() ?? null,
    created_at: i.createdAt.toISOString(),
  };
}

/** The caller's instance, or NOT_FOUND (also for other users' instances). */
export async function findOwnInstance(db: Db, caller: Principal, id: string): Promise<InstanceRow> {
  const instance = await db.mcpInstance.findFirst({
    where: { id, userId: caller.userId },
    include: WITH_MIGRATION,
  });
  if (!instance) throw notFound('MCP instance', id);
  return instance;
}

/** Creates a v1 instance; the answer carries its api_key, which is never shown again. */
export async function createInstance(db: Db, caller: Principal, input: CreateMcpInstanceBody) {
  fromOpError(() => parsePointer(input.json_pointer), 'json_pointer');
  const tools = input.tools_definition ?? null;
  if (tools) {
    const names = new Set<string>();
    for (const tool of tools) {
      if (names.has(tool.name)) {
        throw new DomainError('CONFLICT', `tools_definition names "${tool.name}" twice`, {
          tool_name: tool.name,
        });
      }
      names.add(tool.name);
    }
  }
  await findOwnTable(db, caller, input.table_id);
  const key = newCredential('key');
  const instance = await db.mcpInstance.create({
    data: {
      id: newId('mcp'),
      userId: caller.userId,
      tableId: input.table_id,
      jsonPath: input.json_pointer,
      apiKeyHash: key.hash,
      apiKeyPrefix: key.prefix,
      toolsDefinition: tools === null ? Prisma.DbNull : (tools as Prisma.InputJsonArray),
      previewKeys: input.preview_keys ?? [],
    },
    include: WITH_MIGRATION,
  });
  return { ...instanceBody(instance), api_key: key.secret };
}

export async function getInstance(db: Db, caller: Principal, id: string): Promise<McpInstanceBody> {
  return instanceBody(await findOwnInstance(db, caller, id));
}

export async function listInstances(db: Db, caller: Principal, query: PageQuery) {
  const w = pageWindow(query);
  const rows = await db.mcpInstance.findMany({
    where: { userId: caller.userId, ...w.idAfter },
    orderBy: w.orderBy,
    take: w.take,
    include: WITH_MIGRATION,
  });
  return toPage(rows, query, instanceBody);
}

/**
 * Deletes a v1 instance. A migrated one's AEI stays, but its v1 URL stops serving it (the AEI
 * loses the link, and its config_version moves so gateways drop what they cached).
 */
export async function deleteInstance(ctx: DomainContext, caller: Principal, id: string): Promise<void> {
  await changeExposure(ctx, async (tx) => {
    const instance = await findOwnInstance(tx, caller, id);
    await tx.mcpInstance.delete({ where: { id } });
    const aeiId = instance.migratedTo?.id;
    return { result: undefined, changedAeis: aeiId ? await bumpConfigVersions(tx, [aeiId]) : [] };
  });
}
