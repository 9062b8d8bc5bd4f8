/**
 * Wire shapes of the control plane's internal API, spoken only with gateways (INTERNAL_TOKEN):
 * config v2 of an AEI (DESIGN.md §4), the legacy v1 config, and tool execution with its
 * MCP-ready result.
 */
import { Type, type Static } from 'typebox';
import { AeiStatus, ExposureMode } from './admin-api.ts';
import { ERROR_CODES } from './errors.ts';
import { ContextAdiRef, OperationTypeSchema } from './tool-kinds/context.ts';
import { CustomAdiRef } from './tool-kinds/custom.ts';
import { HttpAdiRef } from './tool-kinds/http.ts';
import { McpAdiRef } from './tool-kinds/mcp.ts';
import { ToolAnnotations } from './tool-kinds/tool-annotations.ts';
import { ConfigPrompt } from './prompts.ts';
import { ClientInput, InputRequired } from './client-input.ts';
import { RelayedTask } from './tasks.ts';
import {
  ConfigUpstreamPrompt,
  ConfigUpstreamResource,
  ConfigUpstreamResourceTemplate,
} from './upstream-catalog.ts';

const JsonObject = Type.Record(Type.String(), Type.Unknown());
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/**
 * What the ADI behind a binding is, one member per kind, told apart by `kind`. A gateway needs
 * only `adi_id` (to run the tool); the rest is for reading.
 */
export const AdiRef = Type.Union([ContextAdiRef, CustomAdiRef, HttpAdiRef, McpAdiRef]);
export type AdiRef = Static<typeof AdiRef>;

export const ConfigBinding = Type.Object({
  binding_id: Type.String(),
  tool_name: Type.String(),
  tool_description: Type.String(),
  title: Type.Optional(Type.String({ description: 'a human-readable name of the tool, for tools/list' })),
  input_schema: JsonObject,
  output_schema: Nullable(JsonObject),
  annotations: Type.Optional(ToolAnnotations),
  meta: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description:
        'the tool’s `_meta` for tools/list, as its source declares it (an upstream tool’s; MCP Apps name their UI resource here)',
    }),
  ),
  icons: Type.Optional(Type.Array(Type.Unknown(), { description: 'the tool’s icons for tools/list' })),
  enabled: Type.Boolean(),
  resource: Type.Optional(
    Type.Boolean({
      description:
        'its context is an MCP resource of the AEI: true only when the tool can already read the whole context (absent: false)',
    }),
  ),
  app: Type.String({ description: 'slug of the ADI’s project, or "default" when it has none' }),
  app_id: Type.String({ description: 'id of the ADI’s project, or "default" when it has none' }),
  app_name: Type.String({ description: 'name of the ADI’s project, or "Default"' }),
  category: Type.String({ description: 'the ADI’s category, or its table’s name when it has none' }),
  adi_ref: AdiRef,
  adi_name: Type.Optional(
    Type.String({ description: 'the ADI’s own name, which source routing looks a bare name up by' }),
  ),
});
export type ConfigBinding = Static<typeof ConfigBinding>;

export const ConfigV2 = Type.Object({
  aei: Type.Object({
    id: Type.String(),
    name: Type.String(),
    user_id: Type.String(),
    status: AeiStatus,
    exposure_mode: ExposureMode,
    catalog_search: Type.Boolean(),
    config_version: Type.Integer(),
    legacy_instance_id: Type.Optional(
      Nullable(
        Type.String({
          description:
            'the legacy instance this AEI was migrated from: its v1 URL serves the AEI too (null or absent: v2 URLs only)',
        }),
      ),
    ),
  }),
  bindings: Type.Array(ConfigBinding, {
    description: 'enabled bindings only; empty while the AEI is disabled',
  }),
  prompts: Type.Optional(
    Type.Array(ConfigPrompt, {
      description: 'the AEI’s prompt templates, by name; empty while the AEI is disabled (absent: none)',
    }),
  ),
  upstream_resources: Type.Optional(
    Type.Array(ConfigUpstreamResource, {
      description:
        'resources of the upstream servers attached to the AEI, in attachment order, one per URI (the first attached wins; absent: none)',
    }),
  ),
  upstream_resource_templates: Type.Optional(
    Type.Array(ConfigUpstreamResourceTemplate, {
      description:
        'resource templates of the upstream servers attached to the AEI, in attachment order, one per template (absent: none); a URI matching one is read from its server',
    }),
  ),
  upstream_prompts: Type.Optional(
    Type.Array(ConfigUpstreamPrompt, {
      description:
        'prompts of the upstream servers attached to the AEI, as `{prefix}_{name}`; a name the AEI’s own prompts use is left out (absent: none)',
    }),
  ),
});
export type ConfigV2 = Static<typeof ConfigV2>;

export const LegacyTool = Type.Object({
  name: Type.String(),
  title: Type.Optional(Type.String()),
  description: Type.String(),
  operation_type: OperationTypeSchema,
  input_schema: JsonObject,
  output_schema: Type.Optional(JsonObject),
  annotations: Type.Optional(ToolAnnotations),
});
export const LegacyConfig = Type.Object({
  instance: Type.Object({
    id: Type.String(),
    user_id: Type.String(),
    status: AeiStatus,
    table_id: Type.String(),
    json_path: Type.String(),
    preview_keys: Type.Array(Type.String()),
  }),
  tools: Type.Array(LegacyTool),
});
export type LegacyConfig = Static<typeof LegacyConfig>;

export const ApiKeyParams = Type.Object({ api_key: Type.String({ minLength: 1, maxLength: 256 }) });

/**
 * Which MCP URL a gateway serves the key on: `v2` (`/api/v2/mcp/...`) serves AEIs and, by
 * fallback, legacy instances; `v1` (`/api/v1/mcp/server/{key}`) serves legacy instances only.
 */
export const KeyFlavor = Type.Union([Type.Literal('v2'), Type.Literal('v1')]);
export type KeyFlavor = Static<typeof KeyFlavor>;
export const KeyConfigQuery = Type.Object(
  { flavor: Type.Optional(KeyFlavor) },
  { additionalProperties: false },
);
export type KeyConfigQuery = Static<typeof KeyConfigQuery>;

/**
 * What an api_key exposes, resolved in one round trip (`GET /internal/keys/{api_key}/config`):
 * config v2 of an AEI or the v1 config of a legacy instance. A live playground key (`bnd_pg_`, v2
 * only) answers its AEI's config with the same ETag as the AEI's own key, marked `playground`.
 * Unknown keys, expired playground keys among them, answer 404 with `details.kind: "unknown"`,
 * which tells them apart from a control plane without this route.
 */
export const KeyConfig = Type.Union([
  Type.Object({
    kind: Type.Literal('aei'),
    config: ConfigV2,
    playground: Type.Optional(
      Type.Object(
        { expires_at: Type.String({ format: 'date-time' }) },
        {
          description:
            'set for a playground key of the AEI (bnd_pg_): serve it until expires_at, and audit its calls with the caller "@console"',
        },
      ),
    ),
  }),
  Type.Object({ kind: Type.Literal('legacy'), config: LegacyConfig }),
]);
export type KeyConfig = Static<typeof KeyConfig>;
export const AdiIdParams = Type.Object({ adi_id: Type.String({ maxLength: 64 }) });

/** Where an MCP client puts a write's idempotency key: `params._meta["bindery/idempotency_key"]`. */
export const IDEMPOTENCY_META_KEY = 'bindery/idempotency_key';

const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{1,255}$';
const IDEMPOTENCY_KEY_RE = new RegExp(IDEMPOTENCY_KEY_PATTERN);

/** True for a well-formed idempotency key: 1-255 visible ASCII characters. */
export function isIdempotencyKey(value: unknown): value is string {
  return typeof value === 'string' && IDEMPOTENCY_KEY_RE.test(value);
}

/** The caller's name for one write, reused on its retries: 1-255 visible ASCII characters. */
export const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: IDEMPOTENCY_KEY_PATTERN,
  description:
    'A write sent again with the same key (in the same exposure) answers the first outcome instead of writing twice; ignored by reads.',
});

/** MCP's log levels (RFC 5424 severities), from the least to the most severe. */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** True for one of MCP's log levels. */
export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** True when a caller hearing `threshold` and above hears a line of `level`. */
export function logLevelAllows(threshold: LogLevel, level: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}

export const ExecuteRequest = Type.Object(
  {
    aei_id: Type.String({ maxLength: 64 }),
    binding_id: Type.String({ maxLength: 64 }),
    /**
     * The AEI's config_version the caller serves: the control plane runs the binding as of that
     * version or later (a cached one that is older is read again).
     */
    config_version: Type.Optional(Type.Integer({ minimum: 0 })),
    arguments: Type.Optional(JsonObject),
    request_id: Type.Optional(Type.String({ maxLength: 128 })),
    idempotency_key: Type.Optional(IdempotencyKey),
    progress: Type.Optional(
      Type.Boolean({
        description:
          'true: the answer is NDJSON, lines {"progress": {progress, total?, message?}} as the tool reports them, then {"result": ToolResult}',
      }),
    ),
    log_level: Type.Optional(
      Type.Enum(LOG_LEVELS, {
        description:
          'the lowest MCP log level the caller hears: the answer is NDJSON, lines {"log": {level, data}} as the tool logs at that level or above (ctx.log of a custom tool), then {"result": ToolResult}',
      }),
    ),
    session_id: Type.Optional(
      Type.String({
        maxLength: 128,
        description:
          'the MCP session the call came in (absent: stateless); upstream servers in per_session mode give each its own upstream session',
      }),
    ),
    caller: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'the caller of a caller entry’s session (personal key + caller), for the audit row',
      }),
    ),
    source_hint: Type.Optional(
      Type.String({ maxLength: 128, description: 'the source hint the call came with (seed 004), as sent' }),
    ),
    source_used: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'where the tool was found: "native", or "mcp:{server slug}" for an upstream tool',
      }),
    ),
    input: Type.Optional(ClientInput),
    trace: Type.Optional(
      Type.Object(
        {
          traceparent: Type.String({ maxLength: 55 }),
          tracestate: Type.Optional(Type.String({ maxLength: 512 })),
        },
        {
          additionalProperties: false,
          description:
            'the call’s W3C trace context, when the gateway traces: the control plane’s spans of the call continue it',
        },
      ),
    ),
    resource: Type.Optional(
      Type.Object(
        {
          pointer: Type.String({
            maxLength: 4096,
            description: 'JSON Pointer under the binding’s context ("" = the whole context)',
          }),
        },
        {
          additionalProperties: false,
          description:
            'read the binding’s context (MCP resources/read) instead of running its tool: audited as a get_all, `arguments` ignored',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ExecuteRequest = Static<typeof ExecuteRequest>;

/**
 * `POST /internal/execute-batch`: several executions in one exchange. The body is text of this
 * media type, one call per line: the ADI id, a tab, then the call's `ExecuteRequest` as JSON,
 * exactly the body `/internal/adi/{adi_id}/execute` takes (the id is kept out of the JSON so a
 * call nests no deeper than it would alone). Each line is parsed and checked on its own, so what
 * one call sends can only ever fail that call. The answer is NDJSON, one `ExecuteBatchAnswer` per
 * call, in the order the calls end. Progress reports are not carried: such calls go alone.
 */
export const EXECUTE_BATCH_MEDIA_TYPE = 'application/x-ndjson';
/** Calls in one batch at most (more: 400 for the whole batch). */
export const EXECUTE_BATCH_MAX_CALLS = 64;
/** What an ADI id on a batch line looks like. */
export const EXECUTE_BATCH_ADI_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The batch's id, chosen by the gateway (`x-bindery-batch`): what a cancel of one of its calls names.
 * A batch sent without one cannot have its calls cancelled one by one (closing it cancels them all).
 */
export const EXECUTE_BATCH_ID_HEADER = 'x-bindery-batch';
export const EXECUTE_BATCH_ID_RE = /^[A-Za-z0-9_-]{16,64}$/;
/**
 * The control plane process that answers a batch (`x-bindery-instance` on its answer): a gateway
 * that meets more than one behind its control-plane address sends calls that can be cancelled
 * alone, since a cancel could reach another process than the one running the call.
 */
export const CONTROL_PLANE_INSTANCE_HEADER = 'x-bindery-instance';

/**
 * `POST /internal/execute-batch/cancel`: cuts calls of a running batch (their lines), each as its
 * connection closing would cut it alone. 200 `{cancelled}` (how many were still running), 404
 * when no such batch runs on this control plane.
 */
export const ExecuteBatchCancel = Type.Object(
  {
    batch: Type.String({ pattern: EXECUTE_BATCH_ID_RE.source }),
    lines: Type.Array(Type.Integer({ minimum: 0, maximum: EXECUTE_BATCH_MAX_CALLS - 1 }), {
      minItems: 1,
      maxItems: EXECUTE_BATCH_MAX_CALLS,
    }),
  },
  { additionalProperties: false },
);
export type ExecuteBatchCancel = Static<typeof ExecuteBatchCancel>;

/**
 * One call's answer in a batch: `i` is the call's line (from 0); `status` and `body` are what the
 * single route would have answered it (200 and a ToolResult, or an error status and ErrorBody).
 */
export interface ExecuteBatchAnswer {
  i: number;
  status: number;
  body: unknown;
}

export const LegacyExecuteRequest = Type.Object(
  {
    tool_name: Type.String({ maxLength: 64 }),
    arguments: Type.Optional(JsonObject),
    request_id: Type.Optional(Type.String({ maxLength: 128 })),
    idempotency_key: Type.Optional(IdempotencyKey),
  },
  { additionalProperties: false },
);
export type LegacyExecuteRequest = Static<typeof LegacyExecuteRequest>;

/**
 * One log line a running call sends its caller (a custom tool's `ctx.log`): MCP
 * `notifications/message` without its `logger`, which the gateway sets to the tool's name.
 */
export const ToolLogLine = Type.Object({
  level: Type.Enum(LOG_LEVELS),
  data: Type.Unknown(),
});
export type ToolLogLine = { level: LogLevel; data: unknown };

/** One progress report of a running call (MCP `notifications/progress` without its token). */
export const ToolProgress = Type.Object({
  progress: Type.Number(),
  total: Type.Optional(Type.Number()),
  message: Type.Optional(Type.String()),
});
export type ToolProgress = Static<typeof ToolProgress>;

/** A tool failure as carried inside an `isError` result (JSON in the text content). */
export const ToolError = Type.Object({
  error: Type.Object({
    code: Type.Enum(ERROR_CODES),
    message: Type.String(),
    details: Type.Optional(JsonObject),
  }),
});
export type ToolError = Static<typeof ToolError>;

/** An MCP `CallToolResult`, ready for the gateway to pass on. */
export const ToolResult = Type.Object({
  content: Type.Array(
    Type.Union([
      Type.Object({ type: Type.Literal('text'), text: Type.String() }, { additionalProperties: true }),
      // An upstream MCP server's images, audio, resources and links pass through as they came.
      Type.Object({ type: Type.String() }, { additionalProperties: true }),
    ]),
  ),
  structuredContent: Type.Optional(JsonObject),
  isError: Type.Optional(Type.Boolean()),
  input_required: Type.Optional(InputRequired),
  task: Type.Optional(
    Type.Omit(RelayedTask, ['inputRequests', 'result', 'error'], {
      description:
        'an upstream tool answered with a task (the client declared the tasks extension): its first state, under Bindery’s handle; the client is answered a CreateTaskResult',
    }),
  ),
  protocol_error: Type.Optional(
    Type.Object(
      { code: Type.Integer(), message: Type.String(), data: Type.Optional(JsonObject) },
      {
        additionalProperties: false,
        description:
          'on an isError result: the JSON-RPC error a modern-era MCP client is answered instead (-32021 when the tool needed input capabilities the client did not declare, -32602 for a requestState or inputResponses that cannot be used); -32042 (URL elicitation required: an upstream server that requires OAuth, not connected) also for a legacy client that declared URL-mode elicitation',
      },
    ),
  ),
  _meta: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description: 'MCP result metadata, e.g. "bindery/console": what a custom tool wrote to its console',
    }),
  ),
});
/** Where a custom tool's console lines go in its result's `_meta`. */
export const CONSOLE_META_KEY = 'bindery/console';
/**
 * Where an upstream MCP tool's stderr lines go in its result's `_meta`: the lines its server's
 * instance wrote while the call ran, for a server whose instances each serve one session.
 */
export const STDERR_META_KEY = 'bindery/stderr';
export type ToolResult = Static<typeof ToolResult>;

// audit ---------------------------------------------------------------------------------------
/**
 * `replayed`: a write retried with its idempotency key, answered from its first outcome;
 * `input_required`: one round of a call that asked its client for input (the retry is its own row).
 */
export const AuditStatus = Type.Union([
  Type.Literal('ok'),
  Type.Literal('error'),
  Type.Literal('refused'),
  Type.Literal('replayed'),
  Type.Literal('input_required'),
]);
export type AuditStatus = Static<typeof AuditStatus>;
export const AuditEvent = Type.Object({
  id: Type.String(),
  action: Type.String(),
  aei_id: Nullable(Type.String()),
  binding_id: Nullable(Type.String()),
  adi_id: Nullable(Type.String()),
  tool_name: Nullable(Type.String()),
  operation: Nullable(Type.String()),
  status: AuditStatus,
  error_code: Nullable(Type.String()),
  duration_ms: Nullable(Type.Integer()),
  args_digest: Nullable(Type.String({ description: 'SHA-256 of the arguments as canonical JSON' })),
  request_id: Nullable(Type.String()),
  caller: Nullable(Type.String({ description: 'the caller of a caller entry (absent: an api_key session)' })),
  source_hint: Nullable(Type.String({ description: 'the source hint the call came with (seed 004)' })),
  source_used: Nullable(Type.String({ description: '"native", or "mcp:{server slug}"' })),
  trace_id: Type.Optional(
    Nullable(Type.String({ description: 'the call’s OpenTelemetry trace id, when the services trace' })),
  ),
  trace_url: Type.Optional(
    Type.String({ description: 'the trace’s page in the operator’s tracing backend (TRACE_URL_TEMPLATE)' }),
  ),
  details: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description:
        "sidebar rows: the proposal, its session, who proposed and decided, the rules' verdicts, the table versions before and after",
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
});
export type AuditEvent = Static<typeof AuditEvent>;
export const AuditListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 64 })),
  aei_id: Type.Optional(Type.String({ maxLength: 64 })),
  status: Type.Optional(AuditStatus),
  caller: Type.Optional(Type.String({ maxLength: 64 })),
});
export type AuditListQuery = Static<typeof AuditListQuery>;
/** `GET /api/v2/audit/stream`: the list's filters, plus the tool's name. */
export const AuditStreamQuery = Type.Object({
  aei_id: Type.Optional(Type.String({ maxLength: 64 })),
  status: Type.Optional(AuditStatus),
  caller: Type.Optional(Type.String({ maxLength: 64 })),
  tool_name: Type.Optional(Type.String({ maxLength: 64 })),
});
export type AuditStreamQuery = Static<typeof AuditStreamQuery>;
