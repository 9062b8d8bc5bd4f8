/**
 * Wire shapes of the admin REST API (`/api/v2`, legacy `/api/v1/mcp`): request bodies and resource
 * objects, as JSON Schema with their static types. Fields are snake_case; every resource has `id`.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { SLUG_PATTERN, TOOL_NAME_PATTERN } from './naming.ts';
import { OperationTypeSchema } from './tool-kinds/context.ts';
import { AdiKindSchema } from './tool-kinds/kinds.ts';
import { ToolAnnotations } from './tool-kinds/tool-annotations.ts';

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** Any JSON value (table data, JSON Schemas, configs). */
export const JsonValue = Type.Unknown({ description: 'Any JSON value' });
const JsonObject = Type.Record(Type.String(), Type.Unknown());

export { OperationTypeSchema };
export const ToolName = Type.String({
  pattern: TOOL_NAME_PATTERN,
  description: 'MCP tool name, unique in an AEI',
});
export const Slug = Type.String({ pattern: SLUG_PATTERN, maxLength: 64 });

/** `{items, next_cursor}`: every list answer. */
export const Page = <T extends TSchema>(item: T) =>
  Type.Object({ items: Type.Array(item), next_cursor: Nullable(Type.String()) });

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'next_cursor of the previous page' })),
});
export type PageQuery = Static<typeof PageQuery>;

export const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
/** A body's reference to another record by id: `""` names nothing and is refused with the schema. */
const ReferenceId = Type.String({ minLength: 1, maxLength: 64 });
export const ForceQuery = Type.Object({
  force: Type.Optional(Type.Boolean({ default: false, description: 'also remove what depends on it' })),
});

// users ---------------------------------------------------------------------------------------
export const CreateUserBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export const CreatedUser = Type.Object({
  id: Type.String(),
  name: Type.String(),
  token: Type.String({ description: 'the new user’s admin token; shown only in this answer' }),
});
export const UserStatus = Type.Union([Type.Literal('enabled'), Type.Literal('disabled')], {
  description: 'a disabled user’s tokens get 401 and its exposures stop serving',
});
export const User = Type.Object({
  id: Type.String(),
  name: Type.String(),
  is_root: Type.Boolean(),
  status: UserStatus,
  disabled_at: Nullable(Timestamp),
  created_at: Timestamp,
});
export type User = Static<typeof User>;
export const UpdateUserBody = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), status: Type.Optional(UserStatus) },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateUserBody = Static<typeof UpdateUserBody>;
/** What a user owns: a user owning anything is deleted only with `?cascade=true`. */
export const UserHoldings = Type.Object({
  projects: Type.Integer(),
  tables: Type.Integer(),
  adis: Type.Integer(),
  aeis: Type.Integer(),
  legacy_instances: Type.Integer(),
});
export type UserHoldings = Static<typeof UserHoldings>;
export const UserDetail = Type.Intersect([User, Type.Object({ owns: UserHoldings })]);
export type UserDetail = Static<typeof UserDetail>;
export const DeleteUserQuery = Type.Object({
  cascade: Type.Optional(
    Type.Boolean({ default: false, description: 'also delete everything the user owns' }),
  ),
});

// admin tokens --------------------------------------------------------------------------------
/** RFC 3339 date-time with a zone (request schemas carry no `format`: the pattern checks it). */
const DATE_TIME_PATTERN =
  '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|z|[+-]\\d{2}:\\d{2})$';
export const MAX_TOKEN_DAYS = 3650;
/** `PUT /api/v2/me/password`: the caller's password for console sign-in (decision 072). */
export const SetPasswordBody = Type.Object(
  {
    password: Type.String({ minLength: 12, maxLength: 1024 }),
    current_password: Type.Optional(
      Type.String({ maxLength: 1024, description: 'the password set now, when there is one' }),
    ),
  },
  { additionalProperties: false },
);
export type SetPasswordBody = Static<typeof SetPasswordBody>;
/** `POST /api/v2/sign-in`: a person's name (any case) and password. */
export const SignInBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.String({ minLength: 1, maxLength: 4096 }),
  },
  { additionalProperties: false },
);
export type SignInBody = Static<typeof SignInBody>;
/** A sign-in's answer: an admin token (shown once) that expires, and who signed in. */
export const SignInAnswer = Type.Object({
  token: Type.String(),
  expires_at: Timestamp,
  user: User,
});
export type SignInAnswer = Static<typeof SignInAnswer>;
export const CreateTokenBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'what the token is for' }),
    expires_at: Type.Optional(
      Type.String({
        pattern: DATE_TIME_PATTERN,
        maxLength: 40,
        description: 'RFC 3339 date-time in the future; omit (and expires_in_days) for no expiry',
      }),
    ),
    expires_in_days: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_TOKEN_DAYS, description: 'instead of expires_at' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateTokenBody = Static<typeof CreateTokenBody>;
export const TokenStatus = Type.Union([
  Type.Literal('active'),
  Type.Literal('expired'),
  Type.Literal('revoked'),
]);
export type TokenStatus = Static<typeof TokenStatus>;
export const AdminToken = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String({ description: 'null for tokens the system made (a user’s first token)' })),
  prefix: Type.String({ description: 'the first characters of the token, for recognising it' }),
  status: TokenStatus,
  current: Type.Boolean({ description: 'true for the token this request was made with' }),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  expires_at: Nullable(Timestamp),
  revoked_at: Nullable(Timestamp),
});
export type AdminToken = Static<typeof AdminToken>;
export const CreatedToken = Type.Intersect([
  AdminToken,
  Type.Object({ token: Type.String({ description: 'shown only in this answer; store it now' }) }),
]);

// projects ------------------------------------------------------------------------------------
export const CreateProjectBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    slug: Type.Optional(Slug),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  },
  { additionalProperties: false },
);
export type CreateProjectBody = Static<typeof CreateProjectBody>;
export const UpdateProjectBody = Type.Partial(CreateProjectBody, {
  additionalProperties: false,
  minProperties: 1,
});
export type UpdateProjectBody = Static<typeof UpdateProjectBody>;
export const Project = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Project = Static<typeof Project>;

// tables --------------------------------------------------------------------------------------
export const CreateTableBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    project_id: Type.Optional(Nullable(ReferenceId)),
    data: Type.Optional(JsonValue),
  },
  { additionalProperties: false },
);
export type CreateTableBody = Static<typeof CreateTableBody>;
export const UpdateTableBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    project_id: Type.Optional(Nullable(ReferenceId)),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateTableBody = Static<typeof UpdateTableBody>;
export const TableSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  project_id: Nullable(Type.String()),
  version: Type.Integer({ description: 'bumped by every write to data' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type TableSummary = Static<typeof TableSummary>;
export const Table = Type.Intersect([TableSummary, Type.Object({ data: JsonValue })]);
export type Table = Static<typeof Table>;
export const TableListQuery = Type.Intersect([
  PageQuery,
  Type.Object({ project_id: Type.Optional(Type.String({ maxLength: 64 })) }),
]);

// adis ----------------------------------------------------------------------------------------
// The create and update bodies are composed from each kind's fields: tool-kinds/adi-bodies.ts.
export const AdiStatus = Type.Union([Type.Literal('ok'), Type.Literal('context_missing')], {
  description:
    'context_missing: the table’s current data has nothing at json_path (its calls answer NOT_FOUND)',
});
export type AdiStatus = Static<typeof AdiStatus>;
export const Adi = Type.Object({
  id: Type.String(),
  kind: AdiKindSchema,
  table_id: Nullable(Type.String({ description: 'the table of its context; null for a kind without one' })),
  project_id: Nullable(Type.String()),
  json_path: Nullable(Type.String()),
  operation_type: Nullable(OperationTypeSchema),
  name: Type.String(),
  description: Nullable(Type.String()),
  category: Nullable(Type.String()),
  config: Type.Record(Type.String(), Type.Unknown(), { description: 'the kind’s own settings' }),
  input_schema: JsonObject,
  output_schema: Nullable(JsonObject),
  annotations: ToolAnnotations,
  status: AdiStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Adi = Static<typeof Adi>;
export const AdiListQuery = Type.Intersect([
  PageQuery,
  Type.Object({
    table_id: Type.Optional(Type.String({ maxLength: 64 })),
    kind: Type.Optional(AdiKindSchema),
    upstream_server_id: Type.Optional(
      Type.String({ maxLength: 64, description: 'only the tools synced from this upstream server' }),
    ),
  }),
]);

// aeis ----------------------------------------------------------------------------------------
export const AeiStatus = Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]);
export const ExposureMode = Type.Union([Type.Literal('direct'), Type.Literal('progressive')]);
export const CreateAeiBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Optional(Type.Literal('mcp')),
    exposure_mode: Type.Optional(ExposureMode),
    status: Type.Optional(AeiStatus),
    catalog_search: Type.Optional(
      Type.Boolean({ description: 'progressive mode: also offer search_apis (default false)' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateAeiBody = Static<typeof CreateAeiBody>;
export const UpdateAeiBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    exposure_mode: Type.Optional(ExposureMode),
    status: Type.Optional(AeiStatus),
    catalog_search: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateAeiBody = Static<typeof UpdateAeiBody>;
export const Aei = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Literal('mcp'),
  status: AeiStatus,
  exposure_mode: ExposureMode,
  catalog_search: Type.Boolean(),
  api_key_prefix: Type.String({ description: 'the first characters of the api_key, for recognising it' }),
  config_version: Type.Integer({ description: 'bumped by every change to what this AEI exposes' }),
  default_profile: Type.Boolean({
    description: 'true for your default profile: what callers you mapped to no profile get',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Aei = Static<typeof Aei>;
/** Where a gateway serves an exposure: `{gateway}/api/v2/mcp/server/{api_key}`, or without the key
 * when it comes as `Authorization: Bearer <api_key>`. */
export const MCP_SERVER_PATH = '/api/v2/mcp/server';
/** A configuration snippet for one MCP client, to merge into the file it names. */
const ClientFile = Type.Object({
  file: Type.String({ description: 'the client’s configuration file this goes into' }),
  config: JsonObject,
});
/** Ready-to-paste client configurations; each holds the api_key. */
export const ClientConfigs = Type.Object({
  claude_desktop: ClientFile,
  vscode: ClientFile,
  cursor: ClientFile,
  mcp_inspector: Type.Object({ command: Type.String({ description: 'lists the tools from a shell' }) }),
});
export type ClientConfigs = Static<typeof ClientConfigs>;
/**
 * Ready-to-paste configurations of the stdio entry `bindery-mcp <caller>`: it relays to the
 * gateway's caller entry with a personal MCP key, so they hold no key of their own (the user puts
 * theirs in `BINDERY_KEY`).
 */
export const StdioConfigs = Type.Object({
  caller: Type.String({ description: 'the caller name the entry is started with' }),
  note: Type.String({ description: 'what the caller must be mapped to for these to serve this profile' }),
  claude_desktop: ClientFile,
  vscode: ClientFile,
  cursor: ClientFile,
});
export type StdioConfigs = Static<typeof StdioConfigs>;
/** How an MCP client reaches an exposure, answered with its api_key (create and rotate only). */
export const AeiConnection = Type.Object({
  mcp_url: Type.String({ description: 'the MCP endpoint with the api_key in its path' }),
  mcp_url_header: Type.String({
    description: 'the MCP endpoint without the key: send "Authorization: Bearer <api_key>"',
  }),
  client_configs: ClientConfigs,
  stdio_configs: Type.Optional(StdioConfigs),
});
export type AeiConnection = Static<typeof AeiConnection>;
export const AeiWithKey = Type.Intersect([
  Aei,
  Type.Object({ api_key: Type.String({ description: 'shown only in this answer; store it now' }) }),
  AeiConnection,
]);

/**
 * How long a playground key works: an hour, enough for a session in the console's playground
 * (the console makes a new one when it runs out). Short because the console keeps it in a
 * browser page.
 */
export const PLAYGROUND_KEY_TTL_SECONDS = 3600;
/** Live playground keys one AEI holds at most: a new one beyond that removes the oldest. */
export const MAX_PLAYGROUND_KEYS = 10;
/**
 * `POST /api/v2/aeis/{id}/playground-keys` (no body): a short-lived key (`bnd_pg_…`) that the
 * gateway serves like the AEI's api_key until `expires_at`, its calls audited with the caller
 * `@console`. It is in this answer only (stored as SHA-256).
 */
export const PlaygroundKey = Type.Object({
  api_key: Type.String({ description: 'the playground key: shown only in this answer' }),
  aei_id: Type.String(),
  expires_at: Type.String({ format: 'date-time', description: 'when the key stops working' }),
  mcp_url: Type.String({
    description: 'the gateway’s MCP endpoint (Streamable HTTP): send "Authorization: Bearer <api_key>"',
  }),
  rest_url: Type.String({
    description: 'the base of the gateway’s REST entry (`/tools`, `/tool-calls`, …), same header',
  }),
});
export type PlaygroundKey = Static<typeof PlaygroundKey>;

// bindings ------------------------------------------------------------------------------------
/**
 * A binding's narrowing of its tool's output schema: what `tools/list` shows as `outputSchema`;
 * every answer is checked against it (the tool must declare an output schema to narrow).
 */
const OutputSchemaOverride = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'narrows the tool’s output schema (same rules as input_schema); the tool’s answers are checked against it',
});
export const CreateBindingItem = Type.Object(
  {
    adi_id: ReferenceId,
    tool_name: Type.Optional(ToolName),
    tool_description: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
    input_schema: Type.Optional(Nullable(JsonObject)),
    output_schema: Type.Optional(Nullable(OutputSchemaOverride)),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreateBindingItem = Static<typeof CreateBindingItem>;
/** Attaches a whole upstream server: each of its tools, now and after every sync, as `{prefix}_{tool}`. */
export const AttachUpstreamBody = Type.Object(
  {
    upstream_server_id: ReferenceId,
    prefix: Type.Optional(
      Type.String({
        pattern: '^(|[A-Za-z0-9][A-Za-z0-9_.-]{0,31})$',
        description:
          'tool and prompt names become {prefix}_{name} (capped at 64 with a hash); "" keeps the upstream’s names as they are (a clash with a name the AEI has is refused); default: "" when the server is the AEI’s first and only source (no bindings, attachments or prompts yet), else the server’s slug',
      }),
    ),
  },
  { additionalProperties: false },
);
export type AttachUpstreamBody = Static<typeof AttachUpstreamBody>;
export const CreateBindingsBody = Type.Union([
  CreateBindingItem,
  Type.Array(CreateBindingItem, { minItems: 1, maxItems: 500 }),
  AttachUpstreamBody,
]);
export const UpdateBindingBody = Type.Object(
  {
    tool_name: Type.Optional(Nullable(ToolName)),
    tool_description: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
    input_schema: Type.Optional(Nullable(JsonObject)),
    output_schema: Type.Optional(Nullable(OutputSchemaOverride)),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateBindingBody = Static<typeof UpdateBindingBody>;
export const Binding = Type.Object({
  id: Type.String(),
  aei_id: Type.String(),
  adi_id: Type.String(),
  tool_name: Type.String(),
  tool_name_inherited: Type.Boolean({ description: 'true while the name follows the ADI’s name' }),
  tool_description: Nullable(Type.String()),
  input_schema: Nullable(JsonObject),
  output_schema: Nullable(JsonObject),
  enabled: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Binding = Static<typeof Binding>;
export const BindingParams = Type.Object({
  id: Type.String({ maxLength: 64 }),
  bid: Type.String({ maxLength: 64 }),
});

/** One MCP tool as `tools/list` will show it. */
export const ToolPreview = Type.Object({
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.String(),
  inputSchema: JsonObject,
  outputSchema: Type.Optional(JsonObject),
  annotations: Type.Optional(ToolAnnotations),
  icons: Type.Optional(Type.Array(Type.Unknown())),
  _meta: Type.Optional(JsonObject),
});
export type ToolPreview = Static<typeof ToolPreview>;
export const ToolList = Type.Object({ tools: Type.Array(ToolPreview) });

// legacy v1 instances -------------------------------------------------------------------------
export const LegacyToolDefinition = Type.Object(
  {
    name: ToolName,
    operation_type: OperationTypeSchema,
    description: Type.Optional(Type.String({ maxLength: 4000 })),
  },
  { additionalProperties: false },
);
export type LegacyToolDefinition = Static<typeof LegacyToolDefinition>;
export const CreateMcpInstanceBody = Type.Object(
  {
    table_id: ReferenceId,
    json_pointer: Type.String({ maxLength: 2048 }),
    tools_definition: Type.Optional(
      Nullable(Type.Array(LegacyToolDefinition, { minItems: 1, maxItems: 50 })),
    ),
    preview_keys: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
  },
  { additionalProperties: false },
);
export type CreateMcpInstanceBody = Static<typeof CreateMcpInstanceBody>;
/** `migrated`: turned into ADIs + an AEI, which now holds its api_key (`migrated_to_aei_id`). */
export const McpInstanceStatus = Type.Union([
  Type.Literal('enabled'),
  Type.Literal('disabled'),
  Type.Literal('migrated'),
]);
export const McpInstance = Type.Object({
  id: Type.String(),
  table_id: Type.String(),
  json_pointer: Type.String(),
  tools_definition: Type.Array(LegacyToolDefinition),
  preview_keys: Type.Array(Type.String()),
  status: McpInstanceStatus,
  api_key_prefix: Type.String(),
  migrated_to_aei_id: Nullable(
    Type.String({
      description: 'the AEI this instance was migrated to; null when not migrated or that AEI was deleted',
    }),
  ),
  migrated_at: Nullable(Timestamp),
  created_at: Timestamp,
});
export type McpInstance = Static<typeof McpInstance>;
export const McpInstanceWithKey = Type.Intersect([McpInstance, Type.Object({ api_key: Type.String() })]);

// overview ------------------------------------------------------------------------------------
/** `GET /api/v2/audit/summary`: how far back the summary looks, in minutes. */
export const AuditSummaryQuery = Type.Object({
  minutes: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1440,
      default: 60,
      description: 'the last N minutes, the current one included',
    }),
  ),
});
export type AuditSummaryQuery = Static<typeof AuditSummaryQuery>;
export const AuditSummaryMinute = Type.Object({
  minute: Type.String({ format: 'date-time', description: 'the start of the minute (UTC)' }),
  calls: Type.Integer({ minimum: 0 }),
  errors: Type.Integer({ minimum: 0, description: 'calls whose status is error or refused' }),
});
export type AuditSummaryMinute = Static<typeof AuditSummaryMinute>;
/**
 * The caller's audit events (the same ones `GET /api/v2/audit` lists: tool calls, resource reads
 * and refusals on the caller's own exposures) counted per minute. Errors are the events whose
 * status is `error` or `refused`; `replayed` counts as a call, not an error.
 */
export const AuditSummary = Type.Object({
  minutes: Type.Integer({ minimum: 1, maximum: 1440 }),
  from: Type.String({ format: 'date-time', description: 'the start of the first minute' }),
  to: Type.String({ format: 'date-time', description: 'the end of the last minute (exclusive)' }),
  buckets: Type.Array(AuditSummaryMinute, {
    description: 'one per minute, oldest first; minutes without calls have zeros',
  }),
  totals: Type.Object({
    calls: Type.Integer({ minimum: 0 }),
    errors: Type.Integer({ minimum: 0, description: 'calls whose status is error or refused' }),
    error_rate: Type.Number({ minimum: 0, maximum: 1, description: 'errors / calls; 0 without calls' }),
  }),
});
export type AuditSummary = Static<typeof AuditSummary>;
/**
 * A gateway's `/readyz` as the control plane saw it: `ready`, `degraded` (its control plane
 * failing) and `waiting` are what the gateway says; `failing` is any other answer (an error status,
 * a redirect, a body that is not the gateway's), `unreachable` no answer within the timeout.
 */
export const GatewayStatus = Type.Union([
  Type.Literal('ready'),
  Type.Literal('degraded'),
  Type.Literal('waiting'),
  Type.Literal('failing'),
  Type.Literal('unreachable'),
]);
export type GatewayStatus = Static<typeof GatewayStatus>;
export const GatewayProbe = Type.Object({
  url: Type.String({ description: 'the gateway’s base URL, from GATEWAY_URLS (any password hidden)' }),
  status: GatewayStatus,
  http_status: Nullable(Type.Integer({ description: 'the status /readyz answered; null without an answer' })),
  detail: Type.String({ description: 'what the gateway said, or why it could not be reached' }),
});
export type GatewayProbe = Static<typeof GatewayProbe>;
/** `GET /api/v2/gateways`: the gateways this control plane tells about changes, probed now. */
export const GatewayList = Type.Object({
  public_url: Type.String({ description: 'where MCP clients reach a gateway (GATEWAY_PUBLIC_URL)' }),
  gateways: Type.Array(GatewayProbe, {
    description: 'one per GATEWAY_URLS entry, in its order; empty without',
  }),
  demo: Nullable(
    Type.Object(
      {
        aei_id: Type.String(),
        name: Type.String(),
        mcp_url: Type.String({
          description: 'the public gateway’s MCP endpoint: send the exposure’s api_key as a Bearer token',
        }),
      },
      { description: 'the demo exposure seeded on the first start, when it is the caller’s; else null' },
    ),
  ),
});
export type GatewayList = Static<typeof GatewayList>;
