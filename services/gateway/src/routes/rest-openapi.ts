/**
 * The REST entry's OpenAPI 3.1 document, generated from the tools a credential reaches: one
 * `POST /api/v2/rest/tools/{tool}` operation per tool, its operationId the tool's name (so an
 * OpenAPI importer, ours included, names the tools alike), its request body the tool's input
 * schema, its answer the call item with `result` typed by the tool's output schema. OpenAPI 3.1
 * schemas are JSON Schema 2020-12, so the tools' schemas go in as they are.
 */
import { CALLER_HEADER, REST_PATH } from '@bindery/contracts';
import type { ExposedTool } from '../mcp/tools/tool-index.ts';

export interface OpenApiInput {
  title: string;
  version: string;
  /** Where the gateway was reached (scheme, host and port). */
  serverUrl: string;
  tools: readonly ExposedTool[];
  /** For a personal key: the caller the document was made for (null: the default profile). */
  caller?: string | null | undefined;
}

const ErrorSchema = {
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'string' },
    message: { type: 'string' },
    details: { type: 'object' },
  },
};

const RestError = {
  description: 'the request was refused',
  content: {
    'application/json': {
      schema: { type: 'object', required: ['error'], properties: { error: ErrorSchema } },
    },
  },
};

/** What a tool answers as plain data: its output schema, or what it wraps under `result`. */
function resultSchema(tool: ExposedTool): Record<string, unknown> {
  const schema = tool.outputSchema;
  if (!schema) return {};
  if (!tool.wrapsResult) return schema;
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  return properties?.result ?? {};
}

function operation(tool: ExposedTool, callerHeader: Record<string, unknown> | undefined) {
  return {
    operationId: tool.name,
    ...(tool.title !== undefined && { summary: tool.title }),
    description: tool.description,
    ...(callerHeader && { parameters: [callerHeader] }),
    requestBody: {
      required: true,
      content: { 'application/json': { schema: tool.inputSchema } },
    },
    responses: {
      '200': {
        description: 'the call’s outcome: `result` when ok, else `error` (the tool’s own failure)',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['id', 'tool_name', 'source_used', 'ok'],
              properties: {
                id: { type: ['string', 'integer'] },
                tool_name: { type: 'string' },
                source_used: { type: ['string', 'null'] },
                ok: { type: 'boolean' },
                result: resultSchema(tool),
                error: ErrorSchema,
              },
            },
          },
        },
      },
      '400': RestError,
      '401': RestError,
      '404': RestError,
      '429': RestError,
    },
  };
}

/** The document for `input`'s tools. */
export function openApiDocument(input: OpenApiInput): Record<string, unknown> {
  // A personal key's document names its caller, so an importer calls as the same caller.
  const callerHeader =
    typeof input.caller === 'string'
      ? {
          name: CALLER_HEADER,
          in: 'header',
          required: false,
          description: 'the caller whose profile answers (absent: the default profile)',
          schema: { type: 'string', default: input.caller },
        }
      : undefined;
  const paths: Record<string, unknown> = {};
  for (const tool of input.tools) {
    paths[`${REST_PATH}/tools/${encodeURIComponent(tool.name)}`] = { post: operation(tool, callerHeader) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: input.title,
      version: input.version,
      description: 'Tools of a Bindery exposure, one operation each (generated from its bindings).',
    },
    servers: [{ url: input.serverUrl }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'the exposure’s api_key, or a personal MCP key',
        },
      },
    },
    paths,
  };
}
