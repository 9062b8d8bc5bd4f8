/**
 * The tools an AEI exposes, resolved from its bindings: effective name, title, description, input
 * and output schema, annotations. The admin preview and the gateway's config both come from here,
 * so they cannot differ.
 */
import {
  progressiveTools,
  type AdiKind,
  type AdiRef,
  type ToolAnnotations,
  type ToolPreview,
} from '@bindery/contracts';
import type { JsonSchema } from '@bindery/context-ops';
import { findOwnAei } from './aeis.ts';
import type { Db, Principal } from '../domain/context.ts';
import { columnsOf, registeredKind } from '../kinds/registry.ts';
import type { ToolPresentation } from '../kinds/kind.ts';

export interface ResolvedTool {
  bindingId: string;
  name: string;
  /**
   * Its title and annotations as tools/list shows them: as its source declares them when the kind
   * says (`presentation`: an upstream tool's, none where it gave none), else the kind's.
   */
  title?: string;
  annotations?: ToolAnnotations;
  /** Its `_meta` and `icons`, as its source declares them (the kind's `presentation`). */
  meta?: Record<string, unknown>;
  icons?: unknown[];
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema | null;
  /** What config v2 tells a gateway about the ADI. */
  adiRef: AdiRef;
  /** Its context is an MCP resource of the AEI (the kind says when). */
  resource: boolean;
  adi: {
    id: string;
    /** The ADI's own name (source routing looks a bare tool name up by it). */
    name: string;
    kind: AdiKind;
    /** The table of its context; null for a kind without one. */
    tableName: string | null;
    project: { id: string; slug: string; name: string } | null;
    category: string | null;
  };
}

const PROJECT = { id: true, slug: true, name: true } as const;

/**
 * The enabled bindings of an AEI as MCP tools, in binding order. A tool of a kind this server does
 * not run (saved by a newer control plane on the same database) is left out: it could not run.
 */
export async function resolveTools(db: Db, aeiId: string): Promise<ResolvedTool[]> {
  const bindings = await db.aeiBinding.findMany({
    where: { aeiId, enabled: true },
    orderBy: { id: 'asc' },
    include: {
      adi: {
        include: {
          table: { select: { name: true, project: { select: PROJECT } } },
          project: { select: PROJECT },
          upstreamServer: { select: { slug: true } },
        },
      },
      attachment: { select: { prefix: true } },
    },
  });
  return bindings.flatMap((b) => {
    const module = registeredKind(b.adi.kind);
    if (!module) return [];
    const columns = columnsOf(b.adi);
    const place = { tableName: b.adi.table?.name ?? null };
    const annotations = module.annotations(columns, place);
    return [
      {
        bindingId: b.id,
        name: b.toolName,
        ...listedAs(module.presentation?.(columns), annotations.title ?? b.adi.name, annotations),
        description: b.toolDescription ?? b.adi.description ?? module.defaultDescription(columns, place),
        inputSchema: (b.inputSchema as JsonSchema | null) ?? module.inputSchema(columns),
        // The binding's narrowing, when it has one: what it shows is what its answers are held to.
        outputSchema: (b.outputSchema as JsonSchema | null) ?? module.outputSchema(columns),
        adiRef: withSource(module.adiRef(b.adiId, columns), b.adi.upstreamServer?.slug, b.attachment?.prefix),
        resource: module.resourceReadable?.(columns, b.inputSchema) ?? false,
        adi: {
          id: b.adiId,
          name: b.adi.name,
          kind: module.kind,
          tableName: place.tableName,
          // A tool with a table is in its table's project; one without, in its own (if any).
          project: b.adi.table ? b.adi.table.project : b.adi.project,
          category: b.adi.category,
        },
      },
    ];
  });
}

/**
 * An upstream tool's reference with what source routing needs besides its ids: the server's slug
 * (`mcp:{slug}`) and the prefix of the attachment that bound it. Both live outside the ADI's own
 * columns (the server's row, the binding's attachment), so the kind cannot say them itself.
 */
function withSource(ref: AdiRef, slug: string | undefined, prefix: string | undefined): AdiRef {
  if (ref.kind !== 'mcp') return ref;
  return {
    ...ref,
    ...(slug !== undefined && { upstream_slug: slug }),
    ...(prefix !== undefined && { prefix }),
  };
}

/** A tool's title, annotations, `_meta` and icons as tools/list shows them (ResolvedTool). */
function listedAs(
  presentation: ToolPresentation | undefined,
  title: string,
  annotations: ToolAnnotations,
): Pick<ResolvedTool, 'title' | 'annotations' | 'meta' | 'icons'> {
  const { meta, icons, listedAs: declared } = presentation ?? {};
  return {
    ...(declared === undefined ? { title, annotations } : declared),
    ...(meta !== undefined && { meta }),
    ...(icons !== undefined && { icons }),
  };
}

/** A resolved tool as `tools/list` shows it. */
export function toolPreview(tool: ResolvedTool): ToolPreview {
  const { title, annotations, icons, meta } = tool;
  return {
    name: tool.name,
    ...(title !== undefined && { title }),
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema !== null && { outputSchema: tool.outputSchema }),
    ...(annotations !== undefined && { annotations }),
    ...(icons !== undefined && { icons }),
    ...(meta !== undefined && { _meta: meta }),
  };
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
  return { tools: tools.map(toolPreview) };
}
