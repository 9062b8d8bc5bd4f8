/**
 * The ADI executor: the one place a tool runs, whatever exposed it and whatever its kind. It
 * re-checks that the binding is enabled and belongs to that enabled AEI and that ADI, validates the
 * arguments against the binding's effective schema, runs the call through the ADI's kind
 * (kinds/registry.ts), audits, and answers an MCP-ready result: text JSON, or `isError` with a DESIGN.md
 * §8 code.
 */
import {
  MISSING_CLIENT_CAPABILITY_ERROR,
  URL_ELICITATION_REQUIRED_ERROR,
  toolError,
  type ClientInputCapability,
  type ErrorCode,
  type ExecuteRequest,
  type InputRequest,
  type LegacyExecuteRequest,
  type ToolResult,
} from '@bindery/contracts';
import { OpError, type JsonValue } from '@bindery/context-ops';
import { SpanKind, activeTraceId, carriedContext, inSpan, spanFailed, tracingOn } from '@bindery/service-kit';
import { DomainError } from '../domain/errors.ts';
import { ReplayedOutcome, keyedWrite } from '../kinds/idempotency.ts';
import { checkAnswer, checkArguments } from '../kinds/arguments.ts';
import { argumentsDigest, type AuditStatus, type ExecutionRecord } from '../audit/audit.ts';
import type { DomainContext } from '../domain/context.ts';
import type { ExecutorOptions } from './executor-options.ts';
import { OWNER_STATUS } from '../accounts/users.ts';
import { contextKind } from '../kinds/context/context-kind.ts';
import { legacyColumns, legacyTools } from '../kinds/context/legacy-tools.ts';
import { ToolAnswer, kindOf } from '../kinds/registry.ts';
import type { CallInput, ToolCall } from '../kinds/kind.ts';
import type { ExecutionMeter } from '../metrics.ts';
import { RequestStateError, type StateOwner } from './request-state.ts';

export type { ExecutorOptions } from './executor-options.ts';

/**
 * A tool's answer as JSON text; also as `structuredContent` when the tool declares an output
 * schema (MCP clients then expect it there) or its kind marks the answer structured, and the answer
 * is an object, as such schemas describe. A text answer is the text content as it is.
 */
function success(answer: JsonValue | ToolAnswer, declared: boolean, meta: Meta = {}): ToolResult {
  if (answer instanceof ToolAnswer && answer.form === 'input') {
    // Only runBinding makes these, and it turns them into PassedOn before they get here.
    throw new Error('an input request reached the answer of a call that cannot ask');
  }
  if (answer instanceof ToolAnswer && answer.form === 'result') {
    const result = answer.value as ToolResult;
    const merged = { ...(result._meta as Meta | undefined), ...meta };
    return { ...result, ...metaOf(merged) };
  }
  if (answer instanceof ToolAnswer && answer.form === 'text') {
    return { content: [{ type: 'text', text: String(answer.value) }], ...metaOf(meta) };
  }
  if (answer instanceof ToolAnswer && answer.form === 'wrapped') {
    const text: ToolResult = {
      content: [{ type: 'text', text: JSON.stringify(answer.value) }],
      ...metaOf(meta),
    };
    return declared ? { ...text, structuredContent: { result: answer.value } } : text;
  }
  const structured = declared || answer instanceof ToolAnswer;
  const result = answer instanceof ToolAnswer ? answer.value : answer;
  const text: ToolResult = { content: [{ type: 'text', text: JSON.stringify(result) }], ...metaOf(meta) };
  if (!structured || typeof result !== 'object' || result === null || Array.isArray(result)) return text;
  return { ...text, structuredContent: result };
}

function failure(error: DomainError | OpError, meta: Meta = {}): ToolResult {
  const result: ToolResult = { ...toolError(error), ...metaOf(meta) };
  if (error instanceof ProtocolRefusal) result.protocol_error = error.protocolError;
  const required = error instanceof DomainError ? error.details?.required_capabilities : undefined;
  if (typeof required === 'object' && required !== null) {
    // An upstream needed what the client did not declare (a tool that runs only as a task, say).
    result.protocol_error = {
      code: MISSING_CLIENT_CAPABILITY_ERROR,
      message: error.message,
      data: { requiredCapabilities: required as Record<string, unknown> },
    };
  }
  const elicitation = error.code === 'UPSTREAM_AUTH_REQUIRED' ? error.details?.elicitation : undefined;
  if (elicitation) {
    // MCP's URLElicitationRequiredError: the client opens the console page where the person connects.
    result.protocol_error = {
      code: URL_ELICITATION_REQUIRED_ERROR,
      message: error.message,
      data: { elicitations: [elicitation] },
    };
  }
  const missing = error instanceof DomainError ? missingCapabilities(error) : undefined;
  if (missing) {
    result.protocol_error = {
      code: MISSING_CLIENT_CAPABILITY_ERROR,
      message: error.message,
      data: { requiredCapabilities: Object.fromEntries(missing.map((name) => [name, {}])) },
    };
  }
  return result;
}

/** The capabilities a kind's failure says its client lacked (a custom tool's `ctx.sample`, say). */
function missingCapabilities(error: DomainError): ClientInputCapability[] | undefined {
  const named = error.details?.missing_capabilities;
  return Array.isArray(named) && named.length > 0 ? (named as ClientInputCapability[]) : undefined;
}

/**
 * A call that cannot run for what its MCP request carried (a requestState or inputResponses it
 * cannot use): a tool error, which a modern-era client is answered as the JSON-RPC error it names.
 */
class ProtocolRefusal extends DomainError {
  readonly protocolError: NonNullable<ToolResult['protocol_error']>;
  constructor(message: string) {
    super('VALIDATION_FAILED', message);
    this.protocolError = { code: -32602, message };
  }
}

/**
 * A round that ended asking the client (answered as `input_required` with a signed state), or an
 * upstream that answered with a task (answered with its handle): audited as such, passed on whole.
 */
class PassedOn {
  constructor(
    readonly result: ToolResult,
    readonly status: AuditStatus = 'input_required',
  ) {}
}

/** What a kind adds to a result besides its answer (ToolCall.meta): `_meta`, when there is any. */
type Meta = Record<string, JsonValue>;

function metaOf(meta: Meta): { _meta?: Meta } {
  return Object.keys(meta).length > 0 ? { _meta: meta } : {};
}

/**
 * Runs `work`, turning known failures into isError results, and writes one audit row for the call
 * either way (`trail` is what the row says besides the outcome); answers only once that row is
 * committed. `meter` gets the same duration as
 * the audit row, by outcome; a failure that escapes as an exception counts as `error`. `structured`:
 * the tool declares an output schema.
 */
async function audited(
  options: ExecutorOptions,
  meter: ExecutionMeter,
  trail: Omit<ExecutionRecord, 'status' | 'errorCode' | 'durationMs'>,
  structured: boolean,
  work: (meta: Meta) => Promise<JsonValue | ToolAnswer | PassedOn>,
): Promise<ToolResult> {
  const meta: Meta = {};
  const started = performance.now();
  let measured = false;
  const audit = (status: AuditStatus, errorCode: ErrorCode | null) => {
    const durationMs = performance.now() - started;
    meter[status].observe(durationMs / 1000);
    measured = true;
    return options.audit.record({ ...trail, status, errorCode, durationMs });
  };
  try {
    const result = await work(meta);
    if (result instanceof PassedOn) {
      await audit(result.status, null);
      return { ...result.result, ...metaOf(meta) };
    }
    // A result passed on whole (an upstream's) may be a tool error of its own.
    const failed = result instanceof ToolAnswer && result.form === 'result' && isErrorResult(result.value);
    await audit(failed ? 'error' : 'ok', null);
    return success(result, structured, meta);
  } catch (error) {
    if (error instanceof ReplayedOutcome) {
      await audit('replayed', null);
      return success(error.answer, structured, meta);
    }
    if (error instanceof DomainError || error instanceof OpError) {
      await audit(error instanceof RefusedError ? 'refused' : 'error', error.code);
      return failure(error, meta);
    }
    if (!measured) meter.error.observe((performance.now() - started) / 1000);
    throw error;
  }
}

function isErrorResult(value: JsonValue): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value.isError === true;
}

/** A refusal before anything ran (binding off, wrong AEI, ...): audited as `refused`. */
class RefusedError extends DomainError {}

/**
 * Executes the tool behind a binding, or with `request.resource` reads its context (MCP
 * resources/read, audited as a `get_all`). Unknown bindings, bindings of another AEI or ADI,
 * disabled bindings and disabled AEIs are refused (FORBIDDEN / NOT_FOUND) before anything runs.
 */
export async function executeBinding(...call: Parameters<typeof runBinding>): Promise<ToolResult> {
  // Counted per call, not per HTTP request: a gateway's batch carries many.
  const inFlight = call[3].metrics.executionsInFlight;
  inFlight.inc();
  try {
    if (!tracingOn()) return await runBinding(...call);
    // The call's span continues the trace its gateway sent with it (one per call, even in a batch).
    const [, adiId, request] = call;
    return await inSpan(
      'bindery.execute',
      {
        kind: SpanKind.SERVER,
        parent: carriedContext(request.trace),
        attributes: {
          'bindery.adi.id': adiId,
          'bindery.aei.id': request.aei_id,
          'bindery.binding.id': request.binding_id,
        },
      },
      async (span) => {
        const result = await runBinding(...call);
        if (result.isError) spanFailed(span, 'the tool answered an error');
        return result;
      },
    );
  } finally {
    inFlight.dec();
  }
}

/**
 * Runs a kind's work in a span of its own ("context get_all", "http call", "mcp call", "custom
 * run"), named once the binding is known; the outgoing requests and queries it makes are its
 * children. With tracing off, the work alone.
 */
function kindSpan<T>(kind: string, operation: string, toolName: string, work: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return work();
  return inSpan(
    `${kind} ${operation}`,
    {
      attributes: { 'bindery.tool.kind': kind, 'gen_ai.tool.name': toolName, 'bindery.operation': operation },
    },
    work,
  );
}

async function runBinding(
  ctx: DomainContext,
  adiId: string,
  request: ExecuteRequest,
  options: ExecutorOptions,
  signal?: AbortSignal,
  heard: Pick<ToolCall, 'progress' | 'log'> = {},
): Promise<ToolResult> {
  const resource = request.resource;
  // A resource read ignores the arguments: its trail records the pointer it read.
  const args = resource ? { pointer: resource.pointer } : (request.arguments ?? {});
  const binding = await options.bindings.get(ctx.prisma, request.binding_id, request.config_version);
  // Without a binding there is no owner to audit for: answer without a trail.
  if (!binding) return failure(new DomainError('NOT_FOUND', `binding ${request.binding_id} not found`));
  const { columns, module: registered } = binding.adi;
  // Known before the checks, so a refused call is audited and measured under its operation too.
  const operation = resource ? 'get_all' : (registered?.operation(columns) ?? 'unknown');
  const trail = {
    userId: binding.aei.userId,
    action: resource ? 'resource.read' : 'tool.execute',
    // The binding's own AEI: the trail belongs to the binding's owner, whatever the caller claimed.
    aeiId: binding.aeiId,
    bindingId: binding.id,
    adiId,
    toolName: binding.toolName,
    operation,
    args,
    requestId: request.request_id ?? null,
    // Who called through a caller entry, and where the gateway found the tool the name named.
    caller: request.caller ?? null,
    sourceHint: request.source_hint ?? null,
    sourceUsed: request.source_used ?? null,
    traceId: activeTraceId() ?? null,
  } as const;
  const meter = options.metrics.execution(binding.adi.kind, operation);
  const structured = !resource && registered !== undefined && registered.outputSchema(columns) !== null;
  return audited(options, meter, trail, structured, async (meta) => {
    if (binding.aeiId !== request.aei_id) {
      throw new RefusedError('FORBIDDEN', `binding ${binding.id} does not belong to AEI ${request.aei_id}`);
    }
    if (binding.adiId !== adiId) {
      throw new RefusedError('FORBIDDEN', `binding ${binding.id} does not run ADI ${adiId}`);
    }
    // A disabled owner disables its exposures; the caller is told no more than for a disabled AEI.
    if (!binding.aei.live) throw new RefusedError('FORBIDDEN', `exposure "${binding.aei.name}" is disabled`);
    if (!binding.enabled) throw new RefusedError('FORBIDDEN', `tool ${binding.toolName} is disabled`);
    const kind = kindOf(binding.adi);
    if (resource) {
      if (!kind.readContext || !kind.resourceReadable?.(columns, binding.inputSchema)) {
        throw new RefusedError(
          'NOT_FOUND',
          `tool ${binding.toolName} does not serve its context as a resource`,
        );
      }
      const read = kind.readContext;
      return kindSpan(binding.adi.kind, 'get_all', binding.toolName, () =>
        read({ options, toolName: binding.toolName, adi: columns }, resource.pointer),
      );
    }
    const canonical = kind.inputSchema(columns);
    const checked =
      binding.inputSchema === null || binding.inputSchema === undefined
        ? checkArguments(canonical, args, binding.toolName)
        : checkArguments(binding.inputSchema, args, binding.toolName, canonical);
    // A state is good for this call only: the exposure, binding, caller, arguments, and the tool as
    // it is now (answers given to an older version of its code are not carried over).
    const owner: StateOwner | undefined = request.input && {
      aeiId: binding.aeiId,
      bindingId: binding.id,
      caller: request.caller ?? null,
      argsDigest: argumentsDigest({ arguments: checked, tool: columns.config as JsonValue }),
    };
    const input =
      request.input && owner && callInput(request.input, owner, options, kind.carriesState === true);
    const answer = await kindSpan(binding.adi.kind, operation, binding.toolName, () =>
      kind.run({
        ctx,
        options,
        toolName: binding.toolName,
        adiId: binding.adiId,
        adi: columns,
        args: checked,
        userId: binding.aei.userId,
        keyed: keyedWrite(
          `aei:${binding.aeiId}`,
          request.idempotency_key,
          binding.id,
          checked,
          options.idempotencyTtlMs,
        ),
        meta,
        signal,
        session: request.session_id === undefined ? undefined : `${binding.aeiId}:${request.session_id}`,
        caller: `${binding.aeiId}:${request.caller ?? ''}`,
        progress: heard.progress,
        log: heard.log,
        input,
      }),
    );
    if (answer instanceof ToolAnswer && answer.form === 'input' && owner) {
      const asked = answer.value as unknown as {
        requests: Record<string, InputRequest>;
        answered: string[];
        carry?: Record<string, JsonValue>;
      };
      const size = Buffer.byteLength(JSON.stringify(asked.requests));
      if (size > options.limits.maxResultBytes) {
        throw new DomainError(
          'RESULT_TOO_LARGE',
          `what the tool asks its client takes ${size} bytes of JSON, more than the ${options.limits.maxResultBytes} a result may`,
          { limit_bytes: options.limits.maxResultBytes },
        );
      }
      // The next round gets back the answers this one used (a tool asks again from its start), or
      // what a kind that carries its own state carries.
      const kept =
        asked.carry ??
        Object.fromEntries(
          asked.answered.flatMap((key) =>
            input && key in input.responses ? [[key, input.responses[key]!]] : [],
          ),
        );
      return new PassedOn({
        content: [],
        input_required: { requests: asked.requests, state: options.requestStates.seal(owner, kept) },
      });
    }
    if (answer instanceof ToolAnswer && answer.form === 'task') {
      return new PassedOn(taskMade(answer, binding.aeiId, request.caller ?? null, input, options), 'ok');
    }
    // What the binding shows as its output schema is what its answers are held to.
    if (binding.outputSchema !== null && !isErrorAnswer(answer)) {
      checkAnswer(
        binding.outputSchema,
        structuredOf(answer),
        binding.toolName,
        'the binding’s output_schema',
      );
    }
    return answer;
  });
}

/**
 * What the call's kind is told of its client: the capabilities it declared and its answers, those
 * of earlier rounds (from the requestState, once it is shown to be this call's) under this round's.
 */
function callInput(
  input: NonNullable<ExecuteRequest['input']>,
  owner: StateOwner,
  options: ExecutorOptions,
  carriesState: boolean,
): CallInput {
  let earlier: Record<string, JsonValue> = {};
  if (input.state !== undefined) {
    try {
      earlier = options.requestStates.open(input.state, owner);
    } catch (error) {
      if (error instanceof RequestStateError) throw new ProtocolRefusal(error.message);
      // Not even JSON inside a valid signature: only a key of ours could have made it.
      throw new ProtocolRefusal('requestState cannot be read');
    }
  }
  const given = (input.responses as Record<string, JsonValue> | undefined) ?? {};
  if (input.cancel === true && !carriesState) {
    // Nothing of such a kind waits between rounds: there is nothing to end.
    throw new RefusedError('PRECONDITION_FAILED', 'the call was given up while its client was asked');
  }
  const tasks = input.tasks && { tasks: input.tasks };
  if (carriesState) {
    return {
      capabilities: input.capabilities,
      responses: given,
      carried: earlier,
      ...(input.cancel === true && { cancel: true as const }),
      ...tasks,
    };
  }
  return { capabilities: input.capabilities, responses: { ...earlier, ...given }, ...tasks };
}

/**
 * A task an upstream made, as the client gets it: its first state under a handle bound to the
 * call's exposure, caller and credential (task-handles.ts). A kind only makes one when the client
 * declared the extension; anything else is a failure of the upstream's.
 */
function taskMade(
  answer: ToolAnswer,
  aeiId: string,
  caller: string | null,
  input: CallInput | undefined,
  options: ExecutorOptions,
): ToolResult {
  const made = answer.value as unknown as {
    serverId: string;
    instance: string;
    task: NonNullable<ToolResult['task']>;
  };
  const holder = input?.tasks?.holder;
  const handle =
    holder &&
    options.taskHandles.seal(
      { aeiId, caller, holder },
      { serverId: made.serverId, instance: made.instance, taskId: made.task.taskId },
    );
  if (!handle) {
    throw new DomainError(
      'UPSTREAM_FAILED',
      holder
        ? 'the upstream server answered with a task whose id is too long to hand on'
        : 'the upstream server answered with a task, which this call cannot take (the client did not declare the tasks extension)',
    );
  }
  return { content: [], task: { ...made.task, taskId: handle } };
}

/** The structured content a successful answer goes out with (success() below), if any. */
function structuredOf(answer: JsonValue | ToolAnswer): JsonValue | undefined {
  const isObject = (v: unknown): v is JsonValue => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!(answer instanceof ToolAnswer)) return isObject(answer) ? answer : undefined;
  switch (answer.form) {
    case 'wrapped':
      return { result: answer.value };
    case 'structured':
      return isObject(answer.value) ? answer.value : undefined;
    case 'result':
      return (answer.value as { structuredContent?: JsonValue }).structuredContent;
    case 'text':
    case 'input':
    case 'task':
      return undefined;
  }
}

/** An upstream's `isError` result: no structured content is expected of it. */
function isErrorAnswer(answer: JsonValue | ToolAnswer): boolean {
  return answer instanceof ToolAnswer && answer.form === 'result' && isErrorResult(answer.value);
}

/**
 * Executes a tool of a legacy v1 instance, by its v1 tool name. Once the instance is migrated, the
 * call runs the binding of that name in its AEI instead (a gateway may still hold the instance's
 * config for a moment): the same tool on the same context, audited under the AEI.
 */
export async function executeLegacy(
  ctx: DomainContext,
  instanceId: string,
  request: LegacyExecuteRequest,
  options: ExecutorOptions,
): Promise<ToolResult> {
  const args = request.arguments ?? {};
  const instance = await ctx.prisma.mcpInstance.findUnique({
    where: { id: instanceId },
    include: { ...OWNER_STATUS, migratedTo: { select: { id: true, name: true } } },
  });
  if (!instance) return failure(new DomainError('NOT_FOUND', `MCP instance ${instanceId} not found`));
  if (instance.migratedAt) {
    const aei = instance.migratedTo;
    if (!aei) {
      return failure(
        new DomainError('NOT_FOUND', `MCP instance ${instanceId} was migrated and its exposure deleted`),
      );
    }
    const binding = await ctx.prisma.aeiBinding.findFirst({
      where: { aeiId: aei.id, toolName: request.tool_name },
      select: { id: true, adiId: true },
    });
    if (!binding) {
      return failure(
        new DomainError('NOT_FOUND', `exposure "${aei.name}" has no tool "${request.tool_name}"`, {
          aei_id: aei.id,
        }),
      );
    }
    return executeBinding(
      ctx,
      binding.adiId,
      {
        aei_id: aei.id,
        binding_id: binding.id,
        arguments: args,
        ...(request.request_id !== undefined && { request_id: request.request_id }),
        ...(request.idempotency_key !== undefined && { idempotency_key: request.idempotency_key }),
      },
      options,
    );
  }
  const tools = legacyTools(instance);
  const tool = tools.find((t) => t.name === request.tool_name);
  const trail = {
    userId: instance.userId,
    action: 'legacy.execute',
    toolName: request.tool_name,
    operation: tool?.operation_type ?? null,
    args,
    requestId: request.request_id ?? null,
  } as const;
  const meter = options.metrics.execution('legacy', tool?.operation_type ?? 'unknown');
  // v1 tools declare the output schemas of their operations, as they do once migrated to an AEI.
  return audited(options, meter, trail, tool !== undefined, async (meta) => {
    if (instance.status !== 'enabled' || instance.user.disabledAt !== null)
      throw new RefusedError('FORBIDDEN', `MCP instance ${instanceId} is disabled`);
    if (!tool) {
      throw new DomainError('NOT_FOUND', `MCP instance ${instanceId} has no tool "${request.tool_name}"`, {
        tools: tools.map((t) => t.name),
      });
    }
    const op = tool.operation_type;
    const config =
      op === 'preview' && instance.previewKeys.length > 0 ? { preview_keys: instance.previewKeys } : {};
    // A v1 tool is a context tool without an ADI row: the context kind runs it.
    const columns = legacyColumns(instance, op, config);
    const checked = checkArguments(contextKind.inputSchema(columns), args, tool.name);
    return contextKind.run({
      ctx,
      options,
      toolName: tool.name,
      adiId: null,
      adi: columns,
      args: checked,
      userId: instance.userId,
      keyed: keyedWrite(
        `mcp_instance:${instance.id}`,
        request.idempotency_key,
        tool.name,
        checked,
        options.idempotencyTtlMs,
      ),
      meta,
    });
  });
}
