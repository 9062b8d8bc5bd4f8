/**
 * The tools an AEI exposes, resolved from its bindings: effective name, description and input
 * schema. The admin preview and the gateway's config both come from here, so they cannot differ.
 */
import { progressiveTools, type OperationType, type ToolPreview } from '@bindery/contracts';
import { OPERATIONS } from '@bindery/context-ops';
import { operationOf } from './adis.ts';
import { findOwnAei } from './aeis.ts';
import type { Db, Principal } from './context.ts';
import { defaultToolDescription } from './tool-naming.ts';

export interface ResolvedTool extends ToolPreview {
  bindingId: string;
  adi: {
    id: string;
    op: OperationType;
    tableId: string;
    tableName: string;
    project: { id: string; slug: string; name: string } | null;
    jsonPath: string;
    category: string | null;
    config: Record<string, unknown>;
  };
}

/** The enabled bindings of an AEI as MCP tools, in binding order. */
export async function resolveTools(db: Db, aeiId: string): Promise<ResolvedTool[]> {
  const bindings = await db.aeiBinding.findMany({
    where: { aeiId, enabled: true },
    orderBy: { id: 'asc' },
    include: {
      adi: {
        include: {
          table: { select: { name: true, project: { select: { id: true, slug: true, name: true } } } },
        },
      },
    },
  });
  return bindings.map((b) => {
    const op = operationOf(b.adi);
    return {
      bindingId: b.id,
      name: b.toolName,
      description:
        b.toolDescription ??
        b.adi.description ??
        defaultToolDescription(op, b.adi.table.name, b.adi.jsonPath),
      inputSchema: (b.inputSchema as Record<string, unknown> | null) ?? OPERATIONS[op].inputSchema,
      adi: {
        id: b.adiId,
        op,
        tableId: b.adi.tableId,
        tableName: b.adi.table.name,
        project: b.adi.table.project ?? null,
        jsonPath: b.adi.jsonPath,
        category: b.adi.category,
        config: b.adi.config as Record<string, unknown>,
      },
    };
  });
}

/**
 * The exact tool list an MCP client of this AEI will see: its enabled bindings in direct mode, the
 * catalog tools in progressive mode. A disabled AEI exposes nothing, so its list is empty.
 */
export async function previewTools(
  db: Db,
  caller: Principal,
  aeiId: string,
): Promise<{ tools: ToolPreview[] }> {
  const aei = await findOwnAei(db, caller, aeiId);
  if (aei.status !== 'enabled') return { tools: [] };
  if (aei.exposureMode === 'progressive') return { tools: [...progressiveTools(aei.catalogSearch)] };
  const tools = await resolveTools(db, aeiId);
  return { tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })) };
}
