/**
 * The MCP tools an exposure offers, and how each one runs: a binding of an AEI through the ADI
 * executor, or a legacy v1 tool through the instance executor. Built from the cached config alone.
 */
import {
  DEFAULT_CALLER,
  PLAYGROUND_CALLER,
  READ_OPERATIONS,
  WRAPPED_RESULT_OPERATIONS,
  type ConfigBinding,
  type ClientInput,
  type LogLevel,
  type ToolAnnotations,
  type ToolLogLine,
  type ToolProgress,
  type ToolResult,
} from '@bindery/contracts';
import type { ControlPlaneClient } from '../../control-plane/client.ts';
import type { Exposure } from '../../control-plane/exposure-cache.ts';

export interface ExposedTool {
  name: string;
  title: string | undefined;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown> | undefined;
  annotations: ToolAnnotations | undefined;
  /** Its `_meta` and `icons` for tools/list, as its source declares them (an upstream tool's). */
  meta?: Record<string, unknown> | undefined;
  icons?: unknown[] | undefined;
  /** True when the tool cannot write (a read operation): an unanswered call of it changed nothing. */
  readOnly: boolean;
  /** True when its structured content carries the answer under `result` (get_all, preview, query). */
  wrapsResult: boolean;
  /** Where the tool comes from, as source routing says it: `native`, or `mcp:{server slug}`. */
  source: string;
  /** Its own name where it comes from (the ADI's, or the upstream server's), for source routing. */
  originalName: string;
  /** For an upstream tool: the names a source hint may give its server (id, slug, attachment prefix). */
  serverNames?: readonly string[];
  /**
   * True for a tool of a kind that can ask its client for input (custom: `ctx.elicit`, `ctx.sample`,
   * `ctx.roots`): its calls carry what the client can answer (RunExtra.input).
   */
  asksInput: boolean;
  /** Runs the tool. */
  run(args: Record<string, unknown>, requestId: string, extra?: RunExtra): Promise<ToolResult>;
}

/** What a tool call may carry besides its arguments. */
export interface RunExtra {
  /** Makes a write safe to send again (reads ignore it). */
  idempotencyKey?: string | undefined;
  /** The client cancelled the call: the control plane's request is closed. */
  signal?: AbortSignal | undefined;
  /** The MCP session it came in (upstream servers in per_session mode keep one session per session). */
  sessionId?: string | undefined;
  /** Told each progress report of the call (the client sent a progress token). */
  progress?: ((report: ToolProgress) => void) | undefined;
  /**
   * Told each log line of the call at `level` or above (the client hears log messages): only tools
   * of a kind that logs (KINDS_THAT_LOG) are asked for lines.
   */
  log?: { level: LogLevel; send(line: ToolLogLine): void } | undefined;
  /** The source hint the call came with (seed 004), for the audit row. */
  sourceHint?: string | undefined;
  /**
   * What the client can answer and has answered (MCP elicitation, sampling, roots), for a tool
   * that asks (ExposedTool.asksInput; others ignore it): without it, such a tool's request fails.
   */
  input?: ClientInput | undefined;
}

/**
 * The kinds whose calls send log lines of their own (custom: `ctx.log`). Only their calls ask the
 * control plane for lines, since asking makes the answer a stream and keeps the call out of a batch.
 */
const KINDS_THAT_LOG: ReadonlySet<string> = new Set(['custom', 'mcp']);
/**
 * The kinds whose tools can ask their client for input (custom: `ctx.elicit` and the others; mcp:
 * an upstream server's elicitation, sampling and roots requests, relayed).
 */
const KINDS_THAT_ASK: ReadonlySet<string> = new Set(['custom', 'mcp']);

/** Where a binding's tool comes from, and the names source routing knows it by. */
function sourceOf(b: ConfigBinding): Pick<ExposedTool, 'source' | 'originalName' | 'serverNames'> {
  const ref = b.adi_ref;
  if (ref.kind !== 'mcp') return { source: 'native', originalName: b.adi_name ?? b.tool_name };
  const names = [ref.upstream_server_id, ref.upstream_slug, ref.prefix].filter(
    (n): n is string => typeof n === 'string' && n !== '',
  );
  return {
    source: `mcp:${ref.upstream_slug ?? ref.upstream_server_id}`,
    originalName: ref.tool,
    serverNames: [...new Set(names)],
  };
}

/**
 * Whether a tool cannot write: its annotations say so (every kind gives them); a config without
 * them (a control plane from before tool kinds) only has context tools, known by their operation.
 */
function readOnly(annotations: ToolAnnotations | undefined, operation: string | undefined): boolean {
  if (annotations?.readOnlyHint !== undefined) return annotations.readOnlyHint;
  return operation !== undefined && (READ_OPERATIONS as readonly string[]).includes(operation);
}

/** True when a binding's structured content carries its answer under `result` (get_all, preview, query). */
export function wrapsResult(binding: ConfigBinding): boolean {
  const ref = binding.adi_ref;
  return ref.kind === 'context' && WRAPPED_RESULT_OPERATIONS.includes(ref.operation_type);
}

/**
 * What a binding answers as plain data (a batch result's `data`): its output schema, or for a
 * binding that wraps its answer, the schema of what it wraps.
 */
export function dataSchemaOf(binding: ConfigBinding): Record<string, unknown> | null {
  const schema = binding.output_schema;
  if (schema === null || !wrapsResult(binding)) return schema;
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  return properties?.result ?? null;
}

/**
 * The caller a caller entry's requests name on their audit rows ("default" when none was given
 * and the client named none), "@console" for a playground key's (the admin console's); undefined
 * for an api_key's exposure.
 */
export function auditedCaller(exposure: Exposure): string | undefined {
  if (exposure.kind !== 'aei') return undefined;
  if (exposure.playground) return PLAYGROUND_CALLER;
  if (!exposure.caller) return undefined;
  return exposure.caller.name ?? DEFAULT_CALLER;
}

export interface ToolIndex {
  list: ExposedTool[];
  byName: Map<string, ExposedTool>;
  /** The tools by their original names (built on first use, by source routing). */
  byOriginalName?: Map<string, ExposedTool[]>;
  /** Upstream servers by every name a hint may give them, lower case, to their `source` (on first use). */
  serversByHint?: Map<string, string>;
}

// Cached configs are immutable and replaced whole, so the derived index can hang off the object.
const indexes = new WeakMap<Exposure, ToolIndex>();

/** The tools of an exposure in config order, with a by-name index; built once per config. */
export function toolIndex(exposure: Exposure, client: ControlPlaneClient): ToolIndex {
  let index = indexes.get(exposure);
  if (!index) {
    const list = toolsOf(exposure, client);
    index = { list, byName: new Map(list.map((t) => [t.name, t])) };
    indexes.set(exposure, index);
  }
  return index;
}

function toolsOf(exposure: Exposure, client: ControlPlaneClient): ExposedTool[] {
  if (exposure.kind === 'aei') {
    const aeiId = exposure.config.aei.id;
    const configVersion = exposure.config.aei.config_version;
    const caller = auditedCaller(exposure);
    return exposure.config.bindings.map((b) => {
      const source = sourceOf(b);
      return {
        name: b.tool_name,
        title: b.title,
        description: b.tool_description,
        inputSchema: b.input_schema,
        outputSchema: b.output_schema ?? undefined,
        annotations: b.annotations,
        meta: b.meta,
        icons: b.icons,
        readOnly: readOnly(
          b.annotations,
          b.adi_ref.kind === 'context' ? b.adi_ref.operation_type : undefined,
        ),
        wrapsResult: wrapsResult(b),
        ...source,
        asksInput: KINDS_THAT_ASK.has(b.adi_ref.kind),
        run: (args, requestId, extra = {}) => {
          const log = KINDS_THAT_LOG.has(b.adi_ref.kind) ? extra.log : undefined;
          const input = KINDS_THAT_ASK.has(b.adi_ref.kind) ? extra.input : undefined;
          const heard =
            extra.progress !== undefined || log !== undefined
              ? { progress: extra.progress, log: log && ((line: ToolLogLine) => log.send(line)) }
              : undefined;
          return client.execute(
            b.adi_ref.adi_id,
            {
              aei_id: aeiId,
              binding_id: b.binding_id,
              config_version: configVersion,
              arguments: args,
              request_id: requestId,
              ...(caller !== undefined && { caller }),
              ...(extra.sourceHint !== undefined && { source_hint: extra.sourceHint.slice(0, 128) }),
              source_used: source.source,
              ...(extra.idempotencyKey !== undefined && { idempotency_key: extra.idempotencyKey }),
              ...(extra.sessionId !== undefined && { session_id: extra.sessionId }),
              ...(extra.progress !== undefined && { progress: true }),
              ...(log !== undefined && { log_level: log.level }),
              ...(input !== undefined && { input }),
            },
            extra.signal,
            heard,
            // Every other kind stops its work when cancelled: cut alone inside a shared exchange.
            b.adi_ref.kind !== 'context',
          );
        },
      };
    });
  }
  if (exposure.kind === 'legacy') {
    const instanceId = exposure.config.instance.id;
    return exposure.config.tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.input_schema,
      outputSchema: t.output_schema,
      annotations: t.annotations,
      readOnly: readOnly(t.annotations, t.operation_type),
      wrapsResult: WRAPPED_RESULT_OPERATIONS.includes(t.operation_type),
      source: 'native',
      originalName: t.name,
      asksInput: false,
      run: (args, requestId, extra = {}) =>
        client.executeLegacy(instanceId, {
          tool_name: t.name,
          arguments: args,
          request_id: requestId,
          ...(extra.idempotencyKey !== undefined && { idempotency_key: extra.idempotencyKey }),
        }),
    }));
  }
  return [];
}

// The names of an exposure's tools that can ask their client for input, built once per config.
const askingNames = new WeakMap<Exposure, ReadonlySet<string>>();

/**
 * True when `name` may reach a tool that can ask its client for input (by its name, or its own
 * name as source routing finds it): the direct answer leaves such a call to the SDK path, which
 * can send the client requests on the call's stream.
 */
export function mayAskInput(exposure: Exposure, name: string): boolean {
  if (exposure.kind !== 'aei') return false;
  let names = askingNames.get(exposure);
  if (!names) {
    const found = new Set<string>();
    for (const b of exposure.config.bindings) {
      if (!KINDS_THAT_ASK.has(b.adi_ref.kind)) continue;
      found.add(b.tool_name);
      if (b.adi_name) found.add(b.adi_name);
    }
    askingNames.set(exposure, (names = found));
  }
  return names.has(name);
}
