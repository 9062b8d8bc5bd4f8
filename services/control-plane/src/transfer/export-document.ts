/**
 * Export: one user's projects, tables with their data, ADIs, AEIs (without keys or key hashes),
 * bindings, prompts and secret names (without values) as one versioned document (`format: "bindery-export"`, `version: 1`), each list in
 * creation order, so an import recreates each AEI's tools in the same order.
 */
import { EXPORT_FORMAT, EXPORT_VERSION, type ExportDocument, type TableRules } from '@bindery/contracts';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { DomainError } from '../domain/errors.ts';
import type { Principal } from '../domain/context.ts';
import { documentsOf, ownDocumentsQuery, type DocumentRow } from '../context/table-data.ts';
import { promptTemplate } from '../exposure/prompts.ts';
import { operationOf } from '../kinds/context/context-kind.ts';
import { kindOf } from '../kinds/registry.ts';

const BY_ID = { orderBy: { id: 'asc' } } as const;

/**
 * The caller's configuration and data as an export document, read from one snapshot (a binding
 * never names an ADI the document lacks, whatever changes meanwhile).
 */
export async function exportDocument(prisma: PrismaClient, caller: Principal): Promise<ExportDocument> {
  const own = { where: { userId: caller.userId }, ...BY_ID };
  const [projects, tables, documentRows, adis, aeis, bindings, legacyInstances, secrets, prompts] =
    await prisma.$transaction(
      [
        prisma.project.findMany(own),
        prisma.table.findMany(own),
        prisma.$queryRaw<DocumentRow[]>(ownDocumentsQuery(caller.userId)),
        prisma.adi.findMany(own),
        prisma.aei.findMany(own),
        prisma.aeiBinding.findMany({ where: { aei: { userId: caller.userId } }, ...BY_ID }),
        // Migrated instances travel as their AEIs; the others have nothing but a key, which cannot.
        prisma.mcpInstance.count({ where: { userId: caller.userId, migratedAt: null } }),
        prisma.secret.findMany({ ...own, select: { name: true } }),
        prisma.aeiPrompt.findMany({ where: { aei: { userId: caller.userId } }, ...BY_ID }),
      ],
      { isolationLevel: 'RepeatableRead' },
    );
  // Tools of upstream MCP servers come from their servers (which hold commands and URLs, not data):
  // they and their bindings stay out, counted, and come back by adding the servers again.
  const upstreamTools = new Set(adis.filter((a) => a.kind === 'mcp').map((a) => a.id));
  const documents = documentsOf(documentRows);
  const documentOf = (id: string) => {
    const document = documents.get(id);
    // Both lists come from one snapshot of the database, and every table has its data.
    if (!document) throw new DomainError('INTERNAL', `table ${id} has no data`);
    return document.data;
  };
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exported_at: new Date().toISOString(),
    projects: projects.map((p) => ({ id: p.id, name: p.name, slug: p.slug, description: p.description })),
    tables: tables.map((t) => ({
      id: t.id,
      name: t.name,
      project_id: t.projectId,
      data: documentOf(t.id),
      ...(t.rules !== null && { rules: t.rules as TableRules }),
    })),
    adis: adis
      .filter((a) => !upstreamTools.has(a.id))
      .map((a) => ({
        id: a.id,
        // Every ADI as stored: the kind says what its columns and config mean.
        kind: kindOf(a).kind,
        table_id: a.tableId,
        // Only tools without a table have one of their own; written only then, so documents of
        // context tools stay as they were.
        ...(a.projectId !== null && { project_id: a.projectId }),
        json_path: a.jsonPath,
        operation_type: a.operationType === null ? null : operationOf(a),
        name: a.name,
        description: a.description,
        category: a.category,
        config: a.config as Record<string, unknown>,
      })),
    aeis: aeis.map((a) => ({
      id: a.id,
      name: a.name,
      type: 'mcp' as const,
      status: a.status === 'disabled' ? ('disabled' as const) : ('enabled' as const),
      exposure_mode: a.exposureMode === 'progressive' ? ('progressive' as const) : ('direct' as const),
      catalog_search: a.catalogSearch,
    })),
    bindings: bindings
      .filter((b) => !upstreamTools.has(b.adiId))
      .map((b) => ({
        aei_id: b.aeiId,
        adi_id: b.adiId,
        tool_name: b.toolNameInherited ? null : b.toolName,
        tool_description: b.toolDescription,
        input_schema: b.inputSchema as Record<string, unknown> | null,
        // Only when set: documents without it stay as they were.
        ...(b.outputSchema !== null && { output_schema: b.outputSchema as Record<string, unknown> }),
        enabled: b.enabled,
      })),
    prompts: prompts.map(promptTemplate),
    secrets: secrets.map((s) => ({ name: s.name })),
    ...((legacyInstances > 0 || upstreamTools.size > 0) && {
      skipped: {
        ...(legacyInstances > 0 && { legacy_instances: legacyInstances }),
        ...(upstreamTools.size > 0 && { upstream_tools: upstreamTools.size }),
      },
    }),
  };
}
