/**
 * The ADI executor: the one place a tool runs, whatever exposed it. It re-checks that the binding
 * is enabled and belongs to that enabled AEI and that ADI, validates the arguments against the
 * binding's effective schema, runs the operation on the context, audits, and answers an MCP-ready
 * result: text JSON, or `isError` with a DESIGN.md §8 code.
 */
import type {
  ErrorCode,
  ExecuteRequest,
  LegacyExecuteRequest,
  OperationType,
  ToolResult,
} from '@bindery/contracts';
import {
  OPERATIONS,
  OpError,
  executeRead,
  executeWrite,
  parsePointer,
  type JsonValue,
  type Limits,
} from '@bindery/context-ops';
import { DomainError } from '../errors.ts';
import {
  ReplayedOutcome,
  idempotent,
  keyedWrite,
  recordOutcome,
  replayIfRecorded,
  type KeyedWrite,
} from './idempotency.ts';
import type { QueryPool } from '../execution/query-pool.ts';
import { operationOf } from './adis.ts';
import { checkArguments } from './arguments.ts';
import { recordExecution, type AuditStatus, type ExecutionRecord } from './audit.ts';
import type { DomainContext } from './context.ts';
import type { ContextCache } from './context-cache.ts';
import { readContext, writeContext } from './context-store.ts';
import { OWNER_STATUS } from './exposure-config.ts';
import { legacyTools } from './legacy-instances.ts';
import type { ControlPlaneMetrics, ExecutionMeter } from '../metrics.ts';

export interface ExecutorOptions {
  limits: Limits;
  contexts: ContextCache;
  metrics: Pick<ControlPlaneMetrics, 'execution' | 'audit' | 'writes'>;
  /** Runs `query`: in-process for a short slice, then in a worker thread (query-pool.ts). */
  queries: QueryPool;
  /** How long a write's idempotency key is remembered. */
  idempotencyTtlMs: number;
}

interface Target {
  /** The tool's name as its caller knows it (for messages). */
  toolName: string;
  op: OperationType;
  tableId: string;
  jsonPath: string;
  config: Record<string, unknown>;
  /** The user owning the exposure: long queries are shared out per tenant. */
  tenant: string;
}

/** Every write answer is an object; the new version lets an agent chain expected_version. */
function writeAnswer(result: JsonValue, version: number): Record<string, JsonValue> {
  return { ...(result as Record<string, JsonValue>), table_version: version };
}

/**
 * Runs one operation on its context; writes go through the row-locked store. A write with an
 * idempotency key records its answer in its own transaction, and a retry of it is answered from
 * that record (ReplayedOutcome) without writing; reads ignore the key, they are safe to repeat.
 */
async function runOperation(
  ctx: DomainContext,
  target: Target,
  args: Record<string, unknown>,
  options: ExecutorOptions,
  keyed: KeyedWrite | undefined,
): Promise<JsonValue> {
  const at = {
    tableId: target.tableId,
    tokens: parsePointer(target.jsonPath),
    pointer: target.jsonPath,
    toolName: target.toolName,
  };
  if (OPERATIONS[target.op].kind === 'read') {
    const { node, text, version } = await readContext(ctx.prisma, options.contexts, at);
    if (target.op === 'query') {
      const place = `${target.tableId}\u0000${target.jsonPath}`;
      const context = { node, text, key: `${place}\u0000${version}`, place };
      return options.queries.run(context, args, target.config, options.limits, target.tenant);
    }
    return executeRead(target.op, node, args, target.config, options.limits).result;
  }
  const { expected_version: expected, ...opArgs } = args;
  return idempotent(ctx.prisma, keyed, async () => {
    const { result, version } = await writeContext(
      ctx.prisma,
      options.contexts,
      at,
      typeof expected === 'number' ? expected : undefined,
      (node) => executeWrite(target.op, node, opArgs, target.config, options.limits),
      options.metrics.writes,
      keyed && {
        // A retry that queued behind its first attempt finds the record once it holds the lock and
        // skips the work; the record's primary key is what guarantees one write either way.
        beforeChange: (tx) => replayIfRecorded(tx, keyed),
        afterChange: (tx, written) => recordOutcome(tx, keyed, writeAnswer(written.result, written.version)),
      },
    );
    return writeAnswer(result, version);
  });
}

function success(result: JsonValue): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(result) }] };
}

function failure(error: DomainError | OpError): ToolResult {
  const body = {
    error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) },
  };
  return { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true };
}

/**
 * Runs `work`, turning known failures into isError results, and writes one audit row for the call
 * either way (`trail` is what the row says besides the outcome). `meter` gets the same duration as
 * the audit row, by outcome; a failure that escapes as an exception counts as `error`.
 */
async function audited(
  ctx: DomainContext,
  options: ExecutorOptions,
  meter: ExecutionMeter,
  trail: Omit<ExecutionRecord, 'status' | 'errorCode' | 'durationMs'>,
  work: () => Promise<JsonValue>,
): Promise<ToolResult> {
  const started = performance.now();
  let measured = false;
  const audit = (status: AuditStatus, errorCode: ErrorCode | null) => {
    const durationMs = performance.now() - started;
    meter[status].observe(durationMs / 1000);
    measured = true;
    return recordExecution(ctx.prisma, { ...trail, status, errorCode, durationMs }, options.metrics.audit);
  };
  try {
    const result = await work();
    await audit('ok', null);
    return success(result);
  } catch (error) {
    if (error instanceof ReplayedOutcome) {
      await audit('replayed', null);
      return success(error.answer);
    }
    if (error instanceof DomainError || error instanceof OpError) {
      await audit(error instanceof RefusedError ? 'refused' : 'error', error.code);
      return failure(error);
    }
    if (!measured) meter.error.observe((performance.now() - started) / 1000);
    throw error;
  }
}

/** A refusal before anything ran (binding off, wrong AEI, ...): audited as `refused`. */
class RefusedError extends DomainError {}

/**
 * Executes the tool behind a binding. Unknown bindings, bindings of another AEI or ADI, disabled
 * bindings and disabled AEIs are refused (FORBIDDEN / NOT_FOUND) before anything runs.
 */
export async function executeBinding(
  ctx: DomainContext,
  adiId: string,
  request: ExecuteRequest,
  options: ExecutorOptions,
): Promise<ToolResult> {
  const args = request.arguments ?? {};
  const binding = await ctx.prisma.aeiBinding.findUnique({
    where: { id: request.binding_id },
    include: { aei: { include: OWNER_STATUS }, adi: true },
  });
  // Without a binding there is no owner to audit for: answer without a trail.
  if (!binding) return failure(new DomainError('NOT_FOUND', `binding ${request.binding_id} not found`));
  const trail = {
    userId: binding.aei.userId,
    action: 'tool.execute',
    // The binding's own AEI: the trail belongs to the binding's owner, whatever the caller claimed.
    aeiId: binding.aeiId,
    bindingId: binding.id,
    adiId,
    toolName: binding.toolName,
    operation: binding.adi.operationType,
    args,
    requestId: request.request_id ?? null,
  } as const;
  const meter = options.metrics.execution('context', binding.adi.operationType);
  return audited(ctx, options, meter, trail, async () => {
    if (binding.aeiId !== request.aei_id) {
      throw new RefusedError('FORBIDDEN', `binding ${binding.id} does not belong to AEI ${request.aei_id}`);
    }
    if (binding.adiId !== adiId) {
      throw new RefusedError('FORBIDDEN', `binding ${binding.id} does not run ADI ${adiId}`);
    }
    // A disabled owner disables its exposures; the caller is told no more than for a disabled AEI.
    if (binding.aei.status !== 'enabled' || binding.aei.user.disabledAt !== null) {
      throw new RefusedError('FORBIDDEN', `exposure "${binding.aei.name}" is disabled`);
    }
    if (!binding.enabled) throw new RefusedError('FORBIDDEN', `tool ${binding.toolName} is disabled`);
    const op = operationOf(binding.adi);
    const schema = (binding.inputSchema as Record<string, unknown> | null) ?? OPERATIONS[op].inputSchema;
    const checked = checkArguments(schema, args, binding.toolName);
    return runOperation(
      ctx,
      {
        toolName: binding.toolName,
        op,
        tableId: binding.adi.tableId,
        jsonPath: binding.adi.jsonPath,
        config: binding.adi.config as Record<string, unknown>,
        tenant: binding.aei.userId,
      },
      checked,
      options,
      keyedWrite(
        `aei:${binding.aeiId}`,
        request.idempotency_key,
        binding.id,
        checked,
        options.idempotencyTtlMs,
      ),
    );
  });
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
  return audited(ctx, options, meter, trail, async () => {
    if (instance.status !== 'enabled' || instance.user.disabledAt !== null)
      throw new RefusedError('FORBIDDEN', `MCP instance ${instanceId} is disabled`);
    if (!tool) {
      throw new DomainError('NOT_FOUND', `MCP instance ${instanceId} has no tool "${request.tool_name}"`, {
        tools: tools.map((t) => t.name),
      });
    }
    const op = tool.operation_type;
    const checked = checkArguments(OPERATIONS[op].inputSchema, args, tool.name);
    const config =
      op === 'preview' && instance.previewKeys.length > 0 ? { preview_keys: instance.previewKeys } : {};
    return runOperation(
      ctx,
      {
        toolName: tool.name,
        op,
        tableId: instance.tableId,
        jsonPath: instance.jsonPath,
        config,
        tenant: instance.userId,
      },
      checked,
      options,
      keyedWrite(
        `mcp_instance:${instance.id}`,
        request.idempotency_key,
        tool.name,
        checked,
        options.idempotencyTtlMs,
      ),
    );
  });
}
