/**
 * The export document (`GET /api/v2/export`, `POST /api/v2/import`): one user's projects, tables
 * with their data, ADIs, AEIs and bindings, as one versioned JSON document. Ids are the exporting
 * installation's and serve only as references inside the document; an import gives everything new
 * ids. AEIs travel without keys or key hashes: an import issues new keys. Secrets travel by name
 * only, never their values: the importing user creates the ones they lack.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { AeiStatus, ExposureMode, JsonValue, OperationTypeSchema, Slug, ToolName } from './admin-api.ts';
import { TOOL_NAME_PATTERN } from './naming.ts';
import { PromptArgument, PromptMessage, PROMPT_LIMITS, PROMPT_NAME_PATTERN } from './prompts.ts';
import { TableRules } from './sidebar.ts';
import { SecretName } from './secrets.ts';
import { AdiKindSchema } from './tool-kinds/kinds.ts';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const JsonObject = Type.Record(Type.String(), Type.Unknown());
const Ref = (what: string) => Type.String({ minLength: 1, maxLength: 64, description: `id of ${what}` });
const Closed = { additionalProperties: false } as const;

export const EXPORT_FORMAT = 'bindery-export';
export const EXPORT_VERSION = 1;

export const ExportProject = Type.Object(
  {
    id: Ref('this project'),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    slug: Slug,
    description: Nullable(Type.String({ maxLength: 2000 })),
  },
  Closed,
);
export const ExportTable = Type.Object(
  {
    id: Ref('this table'),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    project_id: Nullable(Ref('a project of this document')),
    data: JsonValue,
    /** The table's rules (absent: none); documents written before rules have none. */
    rules: Type.Optional(TableRules),
  },
  Closed,
);
/**
 * An ADI as stored: its kind, its context (table and path; always there for a context ADI,
 * optional for other kinds), its operation (context ADIs) and its kind's settings (`config`).
 * Documents written before tool kinds have no `kind`: their ADIs are context ADIs.
 */
export const ExportAdi = Type.Object(
  {
    id: Ref('this ADI'),
    kind: Type.Optional(AdiKindSchema),
    table_id: Nullable(Ref('a table of this document')),
    project_id: Type.Optional(
      Nullable(Ref('a project of this document, for an ADI without a table (absent: none)')),
    ),
    json_path: Nullable(Type.String({ maxLength: 2048 })),
    operation_type: Nullable(OperationTypeSchema),
    name: ToolName,
    description: Nullable(Type.String({ maxLength: 4000 })),
    category: Nullable(Type.String({ minLength: 1, maxLength: 200 })),
    config: JsonObject,
  },
  Closed,
);
export const ExportAei = Type.Object(
  {
    id: Ref('this AEI'),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Literal('mcp'),
    status: AeiStatus,
    exposure_mode: ExposureMode,
    catalog_search: Type.Boolean(),
  },
  Closed,
);
export const ExportBinding = Type.Object(
  {
    aei_id: Ref('an AEI of this document'),
    adi_id: Ref('an ADI of this document'),
    tool_name: Nullable(
      Type.String({
        pattern: TOOL_NAME_PATTERN,
        description: 'the binding’s own tool name; null inherits the ADI’s name',
      }),
    ),
    tool_description: Nullable(Type.String({ maxLength: 4000 })),
    input_schema: Nullable(JsonObject),
    output_schema: Type.Optional(Nullable(JsonObject)),
    enabled: Type.Boolean(),
  },
  Closed,
);

export const ExportPrompt = Type.Object(
  {
    aei_id: Ref('an AEI of this document'),
    name: Type.String({ pattern: PROMPT_NAME_PATTERN }),
    title: Nullable(Type.String({ minLength: 1, maxLength: 256 })),
    description: Nullable(Type.String({ maxLength: PROMPT_LIMITS.maxDescriptionChars })),
    arguments: Type.Array(PromptArgument, { maxItems: PROMPT_LIMITS.maxArguments }),
    messages: Type.Array(PromptMessage, { minItems: 1, maxItems: PROMPT_LIMITS.maxMessages }),
  },
  Closed,
);

export const ExportDocument = Type.Object(
  {
    format: Type.Literal(EXPORT_FORMAT),
    version: Type.Literal(EXPORT_VERSION, {
      description: 'the document version this installation reads and writes',
    }),
    exported_at: Type.Optional(Type.String({ maxLength: 64 })),
    projects: Type.Array(ExportProject),
    tables: Type.Array(ExportTable),
    adis: Type.Array(ExportAdi),
    aeis: Type.Array(ExportAei),
    bindings: Type.Array(ExportBinding, { description: 'in each AEI’s tool order' }),
    prompts: Type.Optional(
      Type.Array(ExportPrompt, { description: 'the AEIs’ prompt templates (absent: none)' }),
    ),
    secrets: Type.Optional(
      Type.Array(Type.Object({ name: SecretName }, Closed), {
        description: 'the names of the exporting user’s secrets (never their values)',
      }),
    ),
    skipped: Type.Optional(
      Type.Object(
        {
          legacy_instances: Type.Optional(Type.Integer({ minimum: 0 })),
          upstream_tools: Type.Optional(
            Type.Integer({
              minimum: 0,
              description: 'tools of upstream MCP servers (and their bindings): add the servers again',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'what the export left out: legacy v1 instances (migrate them first), tools of upstream MCP servers',
        },
      ),
    ),
  },
  Closed,
);
export type ExportDocument = Static<typeof ExportDocument>;

export const ImportClash = Type.Object({
  kind: Type.Union([Type.Literal('project'), Type.Literal('table'), Type.Literal('aei')]),
  source_id: Type.String(),
  name: Type.String(),
  imported_name: Type.String({ description: 'the name it was (or would be) imported under' }),
  slug: Type.Optional(Type.String()),
  imported_slug: Type.Optional(Type.String()),
});
export type ImportClash = Static<typeof ImportClash>;

export const ImportedAei = Type.Object({
  source_id: Type.String(),
  id: Nullable(Type.String()),
  name: Type.String(),
  api_key: Type.Optional(Type.String({ description: 'the new api_key, shown only in this answer' })),
  api_key_prefix: Nullable(Type.String()),
});

export const ImportResult = Type.Object({
  dry_run: Type.Boolean(),
  created: Type.Object({
    projects: Type.Integer(),
    tables: Type.Integer(),
    adis: Type.Integer(),
    aeis: Type.Integer(),
    bindings: Type.Integer(),
    prompts: Type.Integer(),
  }),
  id_map: Type.Record(Type.String(), Type.String(), {
    description: 'document id -> new id (empty in a dry run)',
  }),
  clashes: Type.Array(ImportClash),
  aeis: Type.Array(ImportedAei),
  secrets_to_create: Type.Array(Type.String(), {
    description: 'secrets the document names that you do not have yet: create them (POST /api/v2/secrets)',
  }),
});
export type ImportResult = Static<typeof ImportResult>;
