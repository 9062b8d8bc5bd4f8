/** OpenAPI import: `POST /api/v2/openapi-imports`, a document (or its URL) in, HTTP ADIs out. */
import { OpenApiImportBody, OpenApiImportResult } from '@bindery/contracts';
import { importOpenApi, type OpenApiImportDeps } from '../kinds/openapi-imports.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

/** The setting bounding this route's body (and a document fetched by URL). */
export const OPENAPI_IMPORT_LIMIT_SETTING = 'OPENAPI_IMPORT_MAX_BYTES';

export function openApiImportRoutes(options: OpenApiImportDeps) {
  return async function routes(app: AdminApp): Promise<void> {
    app.post(
      '/openapi-imports',
      {
        // Real API descriptions reach tens of megabytes: this route has its own limit.
        bodyLimit: options.maxDocumentBytes,
        config: { bodyLimitSetting: OPENAPI_IMPORT_LIMIT_SETTING },
        schema: {
          tags: ['openapi imports'],
          summary:
            'Turn an OpenAPI document (or its URL) into one HTTP ADI per operation in a project; ' +
            're-importing it there updates them in place (added / changed / removed); dry_run: only report',
          security: adminSecurity,
          body: OpenApiImportBody,
          response: {
            200: OpenApiImportResult,
            201: OpenApiImportResult,
            ...errorResponses(403, 404, 409, 413, 422, 429, 502, 504),
          },
        },
      },
      async (request, reply) => {
        const result = await importOpenApi(app.domain, request.principal, request.body, options);
        return reply.status(result.dry_run ? 200 : 201).send(result);
      },
    );
  };
}
