/** Moving a user's configuration between installations: `GET /api/v2/export`, `POST /api/v2/import`. */
import { DryRunQuery, ExportDocument, ImportResult } from '@bindery/contracts';
import { exportDocument } from '../transfer/export-document.ts';
import { importDocument } from '../transfer/import-document.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function exportImportRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const tags = ['export / import'];
  app.get(
    '/export',
    {
      schema: {
        tags,
        summary:
          'Your projects, tables with data, ADIs, AEIs (no keys) and bindings as one versioned document',
        security: adminSecurity,
        response: { 200: ExportDocument, ...errorResponses() },
      },
    },
    async (request, reply) => {
      const doc = await exportDocument(ctx.prisma, request.principal);
      const day = (doc.exported_at ?? '').slice(0, 10);
      return reply
        .header('content-disposition', `attachment; filename="bindery-export-${day}.json"`)
        .send(doc);
    },
  );
  app.post(
    '/import',
    {
      schema: {
        tags,
        summary:
          'Recreate an export document for you with new ids and new api keys (shown once); names ' +
          'you already use get a number; dry_run: only check and report',
        security: adminSecurity,
        querystring: DryRunQuery,
        body: ExportDocument,
        response: { 200: ImportResult, 201: ImportResult, ...errorResponses(409, 413) },
      },
    },
    async (request, reply) => {
      const dryRun = request.query.dry_run ?? false;
      const result = await importDocument(ctx, request.principal, request.body, dryRun);
      return reply.status(dryRun ? 200 : 201).send(result);
    },
  );
}
