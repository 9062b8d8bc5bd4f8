/**
 * Wire shapes of `POST /api/v2/openapi-imports`: an OpenAPI document (or its URL) in, one HTTP ADI
 * per operation out, and on a re-import of the same document into the same project, what was
 * added, changed and removed.
 */
import { Type, type Static } from 'typebox';
import { HTTP_METHODS } from './http-tool.ts';
import { AdiProjectField } from './tool-kinds/http.ts';

export const OpenApiImportBody = Type.Object(
  {
    document: Type.Optional(
      Type.Union([Type.String({ minLength: 1 }), Type.Record(Type.String(), Type.Unknown())], {
        description:
          'the OpenAPI 3.0/3.1 or Swagger 2.0 document: an object, or its JSON or YAML text (give this or url)',
      }),
    ),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description:
          'where to fetch the document (http or https; through the outgoing-request guard, bounded in size and time)',
      }),
    ),
    project_id: Type.Optional(Type.Union([AdiProjectField, Type.Null()])),
    base_url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: 'the API’s absolute base URL; replaces the document’s servers',
      }),
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ maxLength: 200 }), {
        maxItems: 200,
        description: 'only operations with one of these tags',
      }),
    ),
    paths: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
        maxItems: 200,
        description: 'only operations whose path matches one of these globs (`*` one segment, `**` any)',
      }),
    ),
    methods: Type.Optional(
      Type.Array(Type.String({ maxLength: 16 }), {
        maxItems: HTTP_METHODS.length,
        description: `only operations of these methods (${HTTP_METHODS.join(', ')})`,
      }),
    ),
    dry_run: Type.Optional(
      Type.Boolean({ default: false, description: 'report what would be done and change nothing' }),
    ),
  },
  { additionalProperties: false },
);
export type OpenApiImportBody = Static<typeof OpenApiImportBody>;

const ImportedOperation = Type.Object({
  operation_id: Type.String(),
  name: Type.String({ description: 'the tool (ADI) name' }),
  id: Type.Union([Type.String(), Type.Null()], {
    description: 'the ADI’s id (null on a dry run for an ADI not created yet)',
  }),
});

export const OpenApiImportResult = Type.Object({
  dry_run: Type.Boolean(),
  project_id: Type.Union([Type.String(), Type.Null()]),
  api: Type.String({ description: 'the document’s info.title: re-imports match tools by it' }),
  added: Type.Array(ImportedOperation, { description: 'operations that got a new ADI' }),
  changed: Type.Array(ImportedOperation, { description: 'operations whose ADI was updated in place' }),
  removed: Type.Array(ImportedOperation, {
    description: 'ADIs of an earlier import whose operation the document no longer has: deleted, unbound',
  }),
  unchanged: Type.Integer({ minimum: 0, description: 'operations whose ADI already matched' }),
  adis: Type.Array(
    Type.Object({
      id: Type.Union([Type.String(), Type.Null()]),
      name: Type.String(),
      operation_id: Type.String(),
    }),
    { description: 'every ADI of this import, in document order' },
  ),
  warnings: Type.Array(
    Type.Object({
      operation_id: Type.Union([Type.String(), Type.Null()]),
      message: Type.String(),
    }),
  ),
  secrets_to_create: Type.Array(
    Type.Object({
      name: Type.String(),
      scheme: Type.String({ description: 'the security scheme it stands for' }),
      holds: Type.String({ description: 'what the secret must hold' }),
    }),
    {
      description: 'secrets the tools reference that you do not have yet: create them (POST /api/v2/secrets)',
    },
  ),
  bindings_disabled: Type.Array(
    Type.Object({
      binding_id: Type.String(),
      aei_id: Type.String(),
      tool_name: Type.String(),
      reason: Type.String({ description: 'why the override no longer fits the changed tool' }),
    }),
    {
      description:
        'bindings of changed tools whose input_schema override the new operation no longer accepts: disabled (never left wider than the tool); fix or clear the override, then enable them',
    },
  ),
});
export type OpenApiImportResult = Static<typeof OpenApiImportResult>;
