/**
 * The `mcp` kind: a tool of an upstream MCP server, stored by sync (upstream-servers.ts)
 * with what the upstream said about it (config: its upstream name, schemas, annotations). A call
 * goes to the server's pool (upstream/), with the call timeout and the caller's cancellation, and
 * its result comes back as the upstream gave it: content, structuredContent and isError unchanged.
 */
import { randomUUID } from 'node:crypto';
import {
  CreateMcpAdiBody,
  STDERR_META_KEY,
  headerParamsOf,
  paramHeaders,
  type InputRequest,
  type ToolAnnotations,
} from '@bindery/contracts';
import type { JsonSchema, JsonValue } from '@bindery/context-ops';
import { DomainError } from '../../domain/errors.ts';
import { defaultToolName } from '../tool-naming.ts';
import {
  ToolAnswer,
  type KindColumns,
  type KindServices,
  type ToolCall,
  type ToolKindModule,
} from '../kind.ts';
import type { UpstreamRegistry } from './registry.ts';
import type { ToolCallAsks, ToolCallTask } from './pool.ts';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** What an upstream tool's call is given besides every kind's services. */
export interface McpKindServices extends KindServices {
  /** The pools of upstream MCP servers (registry.ts); absent where no app runs them. */
  upstreams?: UpstreamRegistry | undefined;
}

interface StoredConfig {
  upstream_server_id?: string;
  tool?: string;
  title?: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  output_schema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  meta?: Record<string, unknown>;
  icons?: unknown[];
  missing?: boolean;
}

const ANNOTATION_HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;
const TITLE_MAX = 200;

const shortTitle = (title: string) =>
  title.length > TITLE_MAX ? `${title.slice(0, TITLE_MAX - 1)}…` : title;

/** The upstream's boolean hints among `given` (its annotations as listed). */
function hintsOf(given: Record<string, unknown>): ToolAnnotations {
  const hints: ToolAnnotations = {};
  for (const hint of ANNOTATION_HINTS) {
    if (typeof given[hint] === 'boolean') hints[hint] = given[hint] as boolean;
  }
  return hints;
}

function configOf(columns: KindColumns): StoredConfig {
  return columns.config as StoredConfig;
}

/** The upstream's schema when it is an object schema; else one that takes any object. */
function inputSchema(columns: KindColumns): JsonSchema {
  const schema = configOf(columns).input_schema;
  if (schema && typeof schema === 'object' && schema.type === 'object') return schema as JsonSchema;
  return { type: 'object' } as JsonSchema;
}

async function run(call: ToolCall<McpKindServices>): Promise<ToolAnswer> {
  const config = configOf(call.adi);
  const serverId = config.upstream_server_id;
  const tool = config.tool;
  if (!serverId || !tool) {
    throw new DomainError('INTERNAL', `tool ${call.toolName} has no upstream server or tool recorded`);
  }
  const upstreams = call.options.upstreams;
  if (!upstreams) throw new DomainError('INTERNAL', 'this control plane runs no upstream servers');
  const server = await upstreams.known(serverId);
  if (config.missing) {
    throw new DomainError(
      'NOT_FOUND',
      `upstream server "${server.name}" no longer lists tool "${tool}" (since its last sync); remove the binding or sync again`,
      { upstream: server.name, upstream_server_id: serverId, tool },
    );
  }
  const stderr = new StderrLines();
  try {
    const input = call.input;
    const carried = input?.carried ?? {};
    // The arguments the upstream's schema marks travel in headers too (sync took only valid marks).
    const marks = headerParamsOf(config.input_schema);
    const headers = marks.ok && marks.params.length > 0 ? paramHeaders(marks.params, call.args) : undefined;
    const result = await upstreams.callTool(serverId, tool, call.args, {
      signal: call.signal,
      session: call.session,
      caller: call.caller,
      maxAskBytes: call.options.limits.maxResultBytes,
      progress: call.progress,
      stderr: (line) => stderr.push(line),
      log: call.log,
      ...(headers && { paramHeaders: headers }),
      ...(input && {
        input: {
          capabilities: input.capabilities,
          responses: input.responses,
          ...(typeof carried.upstream_state === 'string' && { upstreamState: carried.upstream_state }),
          ...(typeof carried.parked === 'string' && { parked: carried.parked }),
          ...(input.cancel && { cancel: true as const }),
          ...(input.tasks && { tasks: true }),
        },
      }),
    });
    // The server made a task: the executor hands it out under a handle of its own.
    if (result.resultType === 'task') {
      const made = result as ToolCallTask;
      return ToolAnswer.task({
        serverId,
        instance: made.instance,
        task: made.task as unknown as Record<string, JsonValue>,
      });
    }
    // The server asks the agent: the executor answers input_required with what this round carries.
    if (isAsks(result)) {
      return ToolAnswer.inputCarried(result.asks as Record<string, InputRequest>, result.carry);
    }
    // An upstream cannot speak for us: our keys in its `_meta` (console or stderr lines the
    // gateway would send as log messages) are dropped; the ones we set are added after.
    const meta = (result as CallToolResult)._meta as Record<string, unknown> | undefined;
    if (meta) {
      for (const key of Object.keys(meta)) if (key.startsWith(OWN_META_PREFIX)) delete meta[key];
    }
    return ToolAnswer.result(result as unknown as { content: JsonValue[] });
  } catch (error) {
    // A person must connect their account first: a client that takes URL-mode elicitation is
    // pointed at the console page that does it (the executor answers a modern one -32042).
    if (
      error instanceof DomainError &&
      error.code === 'UPSTREAM_AUTH_REQUIRED' &&
      call.input?.capabilities.elicitation_url === true &&
      typeof error.details?.connect_url === 'string'
    ) {
      throw new DomainError(error.code, error.message, {
        ...error.details,
        elicitation: {
          mode: 'url',
          elicitationId: randomUUID(),
          url: error.details.connect_url,
          message: error.message,
        },
      });
    }
    throw error;
  } finally {
    // On a failure too: what the server wrote then is what explains it.
    if (stderr.lines.length > 0) call.meta[STDERR_META_KEY] = stderr.lines;
  }
}

function isAsks(result: CallToolResult | ToolCallAsks | ToolCallTask): result is ToolCallAsks {
  return result.resultType === 'asks';
}

/** The prefix of the `_meta` keys Bindery sets on a result. */
export const OWN_META_PREFIX = 'bindery/';

/** Lines a call's result carries, and the characters in all: the rest is counted, not kept. */
const STDERR_MAX_LINES = 50;
const STDERR_MAX_CHARS = 16_384;

/** The stderr lines of one call, bounded; a last line says how many were left out. */
class StderrLines {
  readonly lines: string[] = [];
  private chars = 0;
  private dropped = 0;

  push(line: string): void {
    if (
      this.dropped > 0 ||
      this.lines.length >= STDERR_MAX_LINES ||
      this.chars + line.length > STDERR_MAX_CHARS
    ) {
      this.dropped += 1;
      const note = `… ${this.dropped} more line${this.dropped === 1 ? '' : 's'} left out`;
      if (this.dropped === 1) this.lines.push(note);
      else this.lines[this.lines.length - 1] = note;
      return;
    }
    this.chars += line.length;
    this.lines.push(line);
  }
}

export const mcpKind: ToolKindModule<unknown, never, McpKindServices> = {
  kind: 'mcp',
  // A round carries the upstream's own requestState, or names the call waiting here for answers.
  carriesState: true,
  createBody: CreateMcpAdiBody,
  notCreatable:
    'kind "mcp": these tools come from upstream MCP servers; add the server with POST /api/v2/upstream-servers and its tools are synced',
  patchFields: [],
  columnsOf: () => ({ tableId: null, jsonPath: null, operationType: null, config: {} }),
  patched: (current) => current,
  check() {
    throw new DomainError(
      'VALIDATION_FAILED',
      'kind "mcp": these tools come from upstream MCP servers and cannot be created or changed here',
      { field: 'kind' },
    );
  },
  defaultName: (_columns, adiId) => defaultToolName('mcp', adiId),
  defaultDescription(columns) {
    const config = configOf(columns);
    return config.description ?? `Tool "${config.tool ?? ''}" of an upstream MCP server.`;
  },
  inputSchema,
  outputSchema(columns) {
    const schema = configOf(columns).output_schema;
    return schema && typeof schema === 'object' ? (schema as JsonSchema) : null;
  },
  annotations(columns) {
    const config = configOf(columns);
    const given = config.annotations ?? {};
    const annotations = hintsOf(given);
    const title = config.title ?? (typeof given.title === 'string' ? given.title : undefined) ?? config.tool;
    if (title) annotations.title = shortTitle(title);
    return annotations;
  },
  presentation(columns) {
    const config = configOf(columns);
    const given = config.annotations;
    let annotations: ToolAnnotations | undefined;
    if (given !== undefined) {
      annotations = hintsOf(given);
      if (typeof given.title === 'string') annotations.title = shortTitle(given.title);
    }
    return {
      ...(config.meta !== undefined && { meta: config.meta }),
      ...(config.icons !== undefined && { icons: config.icons }),
      listedAs: {
        ...(config.title !== undefined && { title: shortTitle(config.title) }),
        ...(annotations !== undefined && { annotations }),
      },
    };
  },
  adiRef(adiId, columns) {
    const config = configOf(columns);
    return {
      kind: 'mcp',
      adi_id: adiId,
      upstream_server_id: config.upstream_server_id ?? '',
      tool: config.tool ?? '',
    };
  },
  operation: () => 'call',
  run,
};
