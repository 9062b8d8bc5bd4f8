/**
 * The `custom` kind: JavaScript its author wrote, run in the sandbox (sandbox/) with the
 * host functions its ADI declares (tool-host.ts). Saved only when the source compiles
 * and exports a function, the schemas are usable JSON Schema, the allowed hosts are hosts and the
 * secrets exist; its context is the ADI's `table_id` and `json_path` (so deleting the table
 * deletes the tool), its other settings are `adi.config` (CustomToolConfig).
 */
import {
  CONSOLE_META_KEY,
  CreateCustomAdiBody,
  CustomToolConfig,
  headerParamsOf,
  type ToolAnnotations,
  type UpdateAdiBody,
} from '@bindery/contracts';
import { compileToolSchema, schemaErrors, type JsonSchema, type JsonValue } from '@bindery/context-ops';
import { DomainError } from '../../domain/errors.ts';
import { normaliseAllowedHosts } from './allowed-hosts.ts';
import { customToolHost, type CallEffects } from './tool-host.ts';
import { checkSecretsExist, resolveSecrets } from '../../secrets/secret-references.ts';
import { defaultToolName } from '../tool-naming.ts';
import { checkAnswer } from '../arguments.ts';
import {
  ToolAnswer,
  type KindColumns,
  type SaveScope,
  type ToolCall,
  type ToolKindModule,
  type ToolPlace,
} from '../kind.ts';
import { checkContentResult, isContentResult } from './tool-content.ts';
import type { ContextKindServices } from '../context/context-kind.ts';
import type { CustomToolSandbox } from './sandbox/index.ts';

/**
 * What a custom tool's call is given besides every kind's services: the sandbox, and the context
 * kind's services, since `ctx.context.write` runs a context tool's write (tool-host.ts).
 */
export interface CustomKindServices extends ContextKindServices {
  /** Runs custom tools: QuickJS in worker threads (sandbox/). */
  sandbox: CustomToolSandbox;
}

type CustomPatch = Pick<
  UpdateAdiBody,
  'code' | 'input_schema' | 'output_schema' | 'context' | 'allowed_hosts' | 'secrets' | 'annotations'
>;

const TITLE_MAX = 200;
/** What an input schema falls back to when a stored one is unreadable (a row edited by hand). */
const ANY_OBJECT: JsonSchema = { type: 'object' };

function invalid(field: string, message: string, extra: Record<string, unknown> = {}): DomainError {
  return new DomainError('VALIDATION_FAILED', `${field}: ${message}`, { field, ...extra });
}

/**
 * The stored config, read without throwing (titles, hints and schemas are shown even for a row
 * edited by hand); `run` needs the code as well (configOf).
 */
function settingsOf(columns: KindColumns): Omit<CustomToolConfig, 'code'> {
  const config = columns.config as Partial<CustomToolConfig>;
  const schema = config.input_schema;
  return {
    ...config,
    input_schema:
      typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? schema : ANY_OBJECT,
    context_write: config.context_write === true,
    allowed_hosts: Array.isArray(config.allowed_hosts) ? config.allowed_hosts : [],
    secrets: Array.isArray(config.secrets) ? config.secrets : [],
  };
}

/** The stored config with its code; INTERNAL for a row without (only a hand edit could do that). */
function configOf(columns: KindColumns): CustomToolConfig {
  const code = (columns.config as Partial<CustomToolConfig>).code;
  if (typeof code !== 'string') {
    throw new DomainError('INTERNAL', 'a custom ADI has no code; its owner must save it again');
  }
  return { ...settingsOf(columns), code };
}

/** The shape of a config (from a body or an import document), errors naming its field. */
function checkShape(config: Record<string, unknown>): CustomToolConfig {
  const [error] = schemaErrors(CustomToolConfig as unknown as JsonSchema, config);
  if (error === undefined) return config as CustomToolConfig;
  const field = error.instancePath.slice(1).split('/')[0] || 'config';
  if (error.keyword === 'additionalProperties') {
    throw invalid(field, `unknown property "${String(error.params.additionalProperty)}"`);
  }
  if (error.keyword === 'required') {
    throw invalid(String(error.params.missingProperty), 'is required for a custom ADI');
  }
  throw invalid(field, `${error.instancePath.slice(1)} ${error.message}`);
}

/** A usable JSON Schema of an object (what MCP requires of input and output schemas). */
function checkObjectSchema(schema: Record<string, unknown>, field: string): void {
  try {
    compileToolSchema(schema as JsonSchema);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw invalid(field, `not a usable JSON Schema: ${reason}`, { reason });
  }
  if (schema.type !== 'object') {
    throw invalid(field, 'must have "type": "object" (MCP tools take and give objects)');
  }
}

/**
 * The checks a saved custom ADI passes, cheap ones first; the source check runs the module's top
 * level in a worker, so it comes last.
 */
async function check(columns: KindColumns, scope: SaveScope): Promise<KindColumns> {
  if (columns.operationType !== null) {
    throw invalid('operation_type', 'does not apply to a custom ADI');
  }
  const config = checkShape(columns.config);
  if (config.context_write && columns.tableId === null) {
    throw invalid('context', 'write: true needs a context (table_id and json_path)');
  }
  checkObjectSchema(config.input_schema, 'input_schema');
  // Marks a client on HTTP would refuse the whole tool for (SEP-2243) are refused here instead.
  const marks = headerParamsOf(config.input_schema);
  if (!marks.ok) throw invalid('input_schema', marks.reason);
  if (config.output_schema !== undefined) checkObjectSchema(config.output_schema, 'output_schema');
  const allowedHosts = normaliseAllowedHosts(config.allowed_hosts);
  await checkSecretsExist(scope.db, scope.caller.userId, config.secrets, 'secrets');
  if (!scope.sandbox) {
    throw new DomainError('INTERNAL', 'custom tools cannot be saved here: no sandbox checks their code');
  }
  const source = await scope.sandbox.checkCustomToolSource(config.code, scope.caller.userId);
  if (!source.ok) {
    if (source.unchecked) {
      throw new DomainError(source.unchecked.code, source.message, source.unchecked.details);
    }
    throw new DomainError('VALIDATION_FAILED', `code: ${source.message}`, source.details);
  }
  return { ...columns, config: structuredClone({ ...config, allowed_hosts: allowedHosts }) };
}

/** What the tool does to data, as MCP hints; the author's `annotations` win field by field. */
function annotations(columns: KindColumns, place: ToolPlace): ToolAnnotations {
  const config = settingsOf(columns);
  const fetches = config.allowed_hosts.length > 0;
  const where =
    columns.tableId === null
      ? ''
      : ` on ${place.tableName ?? 'a table'}${columns.jsonPath ? ` ${columns.jsonPath}` : ''}`;
  const title = `Custom tool${where}`;
  return {
    title: title.length > TITLE_MAX ? `${title.slice(0, TITLE_MAX - 1)}…` : title,
    // A tool that may write its context, or send anything anywhere, is not read-only; what it
    // destroys or repeats safely only its author knows (MCP's defaults apply unless declared).
    readOnlyHint: !config.context_write && !fetches,
    openWorldHint: fetches,
    ...config.annotations,
  };
}

/**
 * Runs the tool in the sandbox. Secrets are resolved for the ADI's owner and taken out again
 * (every form `redact` knows) from the answer, the console and the error; the console goes into
 * the result's `_meta` and a debug log line. An answer is checked against the output schema; one
 * that is an MCP tool result (tool-content.ts) is passed on as that result, its items checked.
 */
async function run(call: ToolCall<CustomKindServices>): Promise<JsonValue | ToolAnswer> {
  const config = configOf(call.adi);
  const secrets = await resolveSecrets(call.ctx, call.userId, config.secrets);
  const effects: CallEffects = { changed: false };
  const outcome = await call.options.sandbox.runCustomTool(
    {
      code: config.code,
      args: call.args as Record<string, JsonValue>,
      tenant: call.userId,
      signal: call.signal,
      input: call.input,
    },
    customToolHost(call, config, secrets, effects),
  );
  const lines = secrets.redactJson(outcome.console);
  if (lines.length > 0) {
    call.meta[CONSOLE_META_KEY] = lines as unknown as JsonValue;
    call.options.log?.debug(
      { tool_name: call.toolName, adi_id: call.adiId, console: lines },
      'custom tool console',
    );
  }
  if (outcome.ok === 'input') {
    // The tool asks its client first (ctx.elicit and the others); its secrets are out of the requests.
    const requests = secrets.redactJson(outcome.requests as unknown as JsonValue);
    return ToolAnswer.inputRequired(requests as unknown as typeof outcome.requests, outcome.answered);
  }
  if (!outcome.ok) {
    const message = secrets.redact(outcome.message);
    const details = outcome.details && secrets.redactJson(outcome.details);
    // Stopped mid-way after it began changing data (its time ran out, or its caller cancelled and
    // its host calls were cut): what it changed is unknown (DESIGN.md §8).
    const cancelled = call.signal?.aborted === true;
    if (effects.changed && (outcome.code === 'TIMEOUT' || outcome.code === 'INTERNAL' || cancelled)) {
      throw new DomainError(
        'OUTCOME_UNKNOWN',
        `${message} It had started writing or sending requests, so some of that may have been applied; check before calling it again, or call it with the same idempotency key.`,
        { ...details, cause: outcome.code, ...(cancelled && { cancelled: true }) },
      );
    }
    throw new DomainError(outcome.code, message, details);
  }
  const value = secrets.redactJson(outcome.value);
  if (isContentResult(value)) {
    // The tool speaks MCP itself (tool-content.ts): its result goes out as it made it.
    const result = checkContentResult(value as Record<string, JsonValue>, call.toolName);
    if (config.output_schema !== undefined && result.isError !== true) {
      checkAnswer(config.output_schema, result.structuredContent, call.toolName);
    }
    return ToolAnswer.result(result as unknown as { content: JsonValue[] });
  }
  if (config.output_schema !== undefined) checkAnswer(config.output_schema, value, call.toolName);
  return value;
}

export const customKind: ToolKindModule<CreateCustomAdiBody, CustomPatch, CustomKindServices> = {
  kind: 'custom',
  createBody: CreateCustomAdiBody,
  patchFields: [
    'code',
    'input_schema',
    'output_schema',
    'context',
    'allowed_hosts',
    'secrets',
    'annotations',
  ],
  columnsOf: (body) => ({
    tableId: body.context?.table_id ?? null,
    jsonPath: body.context?.json_path ?? null,
    operationType: null,
    config: {
      code: body.code,
      input_schema: body.input_schema,
      ...(body.output_schema !== undefined && { output_schema: body.output_schema }),
      context_write: body.context?.write ?? false,
      allowed_hosts: body.allowed_hosts ?? [],
      secrets: body.secrets ?? [],
      ...(body.annotations !== undefined && { annotations: body.annotations }),
    },
  }),
  patched(current, patch) {
    const config: Record<string, unknown> = { ...current.config };
    for (const field of ['code', 'input_schema', 'allowed_hosts', 'secrets'] as const) {
      if (patch[field] !== undefined) config[field] = patch[field];
    }
    for (const field of ['output_schema', 'annotations'] as const) {
      const value = patch[field];
      if (value === null) delete config[field];
      else if (value !== undefined) config[field] = value;
    }
    let { tableId, jsonPath } = current;
    if (patch.context === null) {
      tableId = null;
      jsonPath = null;
      config.context_write = false;
    } else if (patch.context !== undefined) {
      tableId = patch.context.table_id;
      jsonPath = patch.context.json_path;
      config.context_write = patch.context.write ?? false;
    }
    return { ...current, tableId, jsonPath, config };
  },
  check,
  defaultName: (_columns, adiId) => defaultToolName('custom', adiId),
  defaultDescription(columns, place) {
    if (columns.tableId === null) return 'A custom JavaScript tool.';
    const where = columns.jsonPath === '' ? 'the whole table' : `"${columns.jsonPath ?? ''}"`;
    const access = settingsOf(columns).context_write ? 'read-write' : 'read-only';
    return `A custom JavaScript tool. Context (${access}): ${where} of table "${place.tableName ?? ''}".`;
  },
  inputSchema: (columns) => settingsOf(columns).input_schema as JsonSchema,
  outputSchema(columns) {
    const schema = settingsOf(columns).output_schema;
    return typeof schema === 'object' && schema !== null && !Array.isArray(schema)
      ? (schema as JsonSchema)
      : null;
  },
  annotations,
  adiRef: (adiId) => ({ kind: 'custom', adi_id: adiId }),
  operation: () => 'run',
  run,
};
