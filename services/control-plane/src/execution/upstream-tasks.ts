/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` of a modern agent on a task an upstream server
 * made (decision 071), asked by a gateway (`POST /internal/aei/{aei_id}/tasks`). The handle is
 * opened for the exposure, caller and credential the gateway names (task-handles.ts): one sealed
 * for another, altered or never handed out is NOT_FOUND, as a task the upstream forgot is. The
 * exposure and its owner must still be enabled, and the server still serve it (attached to it, or
 * a tool of it bound there): a server taken off the exposure takes its tasks with it. The request
 * goes to the server's pool; the task comes back under the same handle, checked, its `_meta` keys of
 * ours dropped, within the result cap. Polls (`tasks/get`) are metered only; an update (the keys it
 * answers, not the answers) and a cancel are audited.
 */
import type { ErrorCode, RelayedTask, TaskAnswer, TaskRequestBody } from '@bindery/contracts';
import { DomainError } from '../domain/errors.ts';
import type { DomainContext } from '../domain/context.ts';
import { OWNER_STATUS } from '../accounts/users.ts';
import type { AuditStatus } from '../audit/audit.ts';
import type { ExecutorOptions } from './executor-options.ts';
import { OWN_META_PREFIX } from '../kinds/mcp/mcp-kind.ts';
import { errorAnswer, INVALID_PARAMS } from './upstream-requests.ts';

const METHODS = { get: 'tasks/get', update: 'tasks/update', cancel: 'tasks/cancel' } as const;

const notFound = () =>
  new DomainError(
    'NOT_FOUND',
    'Failed to retrieve task: no such task for this caller (unknown, expired or another caller’s)',
  );

export async function upstreamTask(
  ctx: DomainContext,
  aeiId: string,
  body: TaskRequestBody,
  options: ExecutorOptions,
  signal?: AbortSignal,
): Promise<TaskAnswer> {
  const method = METHODS[body.method];
  const meter = options.metrics.execution('mcp', `task_${body.method}`);
  const started = performance.now();
  let audited: { userId: string; subject: string } | undefined;
  const finish = async (status: AuditStatus, errorCode: ErrorCode | null) => {
    const durationMs = performance.now() - started;
    meter[status].observe(durationMs / 1000);
    // A poll is not a trail: what the agent answered, and what it gave up, are.
    if (body.method === 'get' || !audited) return;
    await options.audit.record({
      userId: audited.userId,
      action: `upstream.task.${body.method}`,
      aeiId,
      toolName: audited.subject,
      operation: body.method,
      args: { input_responses: Object.keys(body.input_responses ?? {}) },
      status,
      errorCode,
      durationMs,
      requestId: body.request_id ?? null,
      caller: body.caller ?? null,
    });
  };
  try {
    const place = options.taskHandles.open(body.task_id, {
      aeiId,
      caller: body.caller ?? null,
      holder: body.holder,
    });
    if (!place) throw notFound();
    const aei = await ctx.prisma.aei.findUnique({ where: { id: aeiId }, include: OWNER_STATUS });
    if (!aei) throw notFound();
    const upstreams = options.upstreams;
    if (!upstreams) throw new DomainError('INTERNAL', 'this control plane runs no upstream servers');
    const serves =
      (await ctx.prisma.aeiAttachment.count({ where: { aeiId, upstreamServerId: place.serverId } })) > 0 ||
      (await ctx.prisma.aeiBinding.count({ where: { aeiId, adi: { upstreamServerId: place.serverId } } })) >
        0;
    // A server deleted, or no longer serving this exposure: its tasks are not this exposure's.
    if (!serves) throw notFound();
    const server = await upstreams.known(place.serverId);
    audited = { userId: aei.userId, subject: `${server.name}: task` };
    if (aei.status !== 'enabled' || aei.user.disabledAt !== null)
      throw new DomainError('FORBIDDEN', `exposure "${aei.name}" is disabled`);
    if (body.method === 'update' && body.input_responses === undefined)
      throw new DomainError('VALIDATION_FAILED', 'tasks/update needs inputResponses', {
        field: 'inputResponses',
      });
    let task;
    try {
      task = await upstreams.task(
        place.serverId,
        method,
        { taskId: place.taskId, instance: place.instance },
        body.method === 'update' ? body.input_responses : undefined,
        { signal },
      );
    } catch (error) {
      // The upstream no longer knows it (expired, or its process ended): as for a handle never
      // handed out. Its -32602 to tasks/update may be about the answers: said as it said it.
      if (error instanceof DomainError && error.code === 'NOT_FOUND') throw notFound();
      if (error instanceof DomainError && error.details?.rpc_code === INVALID_PARAMS)
        throw body.method === 'update'
          ? new DomainError('VALIDATION_FAILED', error.message, { upstream: server.name })
          : notFound();
      throw error;
    }
    if (!task) {
      await finish('ok', null);
      return { done: true };
    }
    // An upstream cannot speak for us: our keys in its result's `_meta` are dropped (as mcp-kind does).
    const meta = task.result?._meta as Record<string, unknown> | undefined;
    if (meta) for (const key of Object.keys(meta)) if (key.startsWith(OWN_META_PREFIX)) delete meta[key];
    const relayed: RelayedTask = { ...task, taskId: body.task_id } as RelayedTask;
    const limit = options.limits.maxResultBytes;
    const size = Buffer.byteLength(JSON.stringify(relayed));
    if (size > limit) {
      throw new DomainError(
        'RESULT_TOO_LARGE',
        `the upstream's task takes ${size} bytes of JSON, more than the ${limit} a result may`,
        { limit_bytes: limit },
      );
    }
    await finish('ok', null);
    return { task: relayed };
  } catch (error) {
    if (!(error instanceof DomainError)) {
      meter.error.observe((performance.now() - started) / 1000);
      throw error;
    }
    await finish(error.code === 'NOT_FOUND' || error.code === 'FORBIDDEN' ? 'refused' : 'error', error.code);
    return errorAnswer(error);
  }
}
