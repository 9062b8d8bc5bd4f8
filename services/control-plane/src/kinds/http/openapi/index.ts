/** OpenAPI import: a document in, one HTTP tool config per operation out (no storage here). */
export {
  openApiToHttpTools,
  type ImportedHttpTool,
  type OpenApiConversion,
  type OpenApiImportOptions,
  type OpenApiImportWarning,
} from './openapi-tools.ts';
export type { SecretUse } from './security-schemes.ts';
