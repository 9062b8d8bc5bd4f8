/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the modern face (decision
 * 071): `tasks/get`, `tasks/update` and `tasks/cancel` on a handle a `tools/call` of this exposure
 * handed out when an upstream tool answered with a task. The gateway keeps nothing per task: the
 * control plane opens the handle (bound to the exposure, the caller and the credential the call
 * came with) and asks the upstream server that made it. A request that did not declare the
 * extension is refused -32021; a handle of another credential, an altered one, or a task the
 * upstream forgot is -32602 (not found). `tasks/result` and `tasks/list`, the 2025 drafts' methods,
 * are not offered (-32601, as any unknown method).
 */
import { MAX_TASK_HANDLE_CHARS, MISSING_CLIENT_CAPABILITY_ERROR, TASKS_EXTENSION } from '@bindery/contracts';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { ControlPlaneClient } from '../../control-plane/client.ts';
import type { Exposure } from '../../control-plane/exposure-cache.ts';
import { retryOf } from '../tools/client-input.ts';
import { refusedWith, unanswered } from '../upstream-catalog.ts';
import { auditedCaller } from '../tools/tool-index.ts';
import { WireError } from '../wire-error.ts';

export const TASK_METHODS = {
  'tasks/get': 'get',
  'tasks/update': 'update',
  'tasks/cancel': 'cancel',
} as const;
export type TaskMethod = keyof typeof TASK_METHODS;

export const isTaskMethod = (method: string): method is TaskMethod => Object.hasOwn(TASK_METHODS, method);

/** True when a modern request's capabilities declare the tasks extension. */
export function declaresTasks(clientCapabilities: Record<string, unknown>): boolean {
  const extensions = clientCapabilities.extensions;
  return (
    typeof extensions === 'object' &&
    extensions !== null &&
    typeof (extensions as Record<string, unknown>)[TASKS_EXTENSION] === 'object' &&
    (extensions as Record<string, unknown>)[TASKS_EXTENSION] !== null
  );
}

/** -32021 for a request that needs the tasks extension and did not declare it. */
export function tasksNotDeclared(what: string): WireError {
  return new WireError(
    MISSING_CLIENT_CAPABILITY_ERROR,
    `Missing required client capability: ${what} needs the tasks extension (${TASKS_EXTENSION}) declared in the request's capabilities`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  );
}

/** The task's state (tasks/get), or the empty acknowledgement (tasks/update, tasks/cancel). */
export async function serveTask(
  method: TaskMethod,
  params: Record<string, unknown>,
  context: {
    clientCapabilities: Record<string, unknown>;
    exposure: () => Promise<Exposure>;
    client: ControlPlaneClient;
    /** The digest of the credential the request came with (a handle is bound to it). */
    holder: string;
    requestId: string;
    signal?: AbortSignal | undefined;
  },
): Promise<Record<string, unknown>> {
  if (!declaresTasks(context.clientCapabilities)) throw tasksNotDeclared(method);
  const taskId = params.taskId;
  if (typeof taskId !== 'string' || taskId === '' || taskId.length > MAX_TASK_HANDLE_CHARS) {
    throw new WireError(
      ErrorCode.InvalidParams,
      `Invalid params: taskId is the string (of at most ${MAX_TASK_HANDLE_CHARS} characters) a tools/call answered`,
    );
  }
  const responses = method === 'tasks/update' ? retryOf(params).responses : undefined;
  if (method === 'tasks/update' && responses === undefined)
    throw new WireError(ErrorCode.InvalidParams, 'Invalid params: tasks/update carries inputResponses');
  const notFound = () =>
    new WireError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found', { code: 'NOT_FOUND' });
  const exposure = await context.exposure();
  // Only an exposure's calls hand out tasks (a legacy instance's tools never do).
  if (exposure.kind !== 'aei') throw notFound();
  const caller = auditedCaller(exposure);
  let answer;
  try {
    answer = await context.client.task(
      exposure.config.aei.id,
      {
        method: TASK_METHODS[method],
        task_id: taskId,
        holder: context.holder,
        ...(caller !== undefined && { caller }),
        ...(responses !== undefined && { input_responses: responses }),
        request_id: context.requestId,
      },
      context.signal,
    );
  } catch (error) {
    throw unanswered(error);
  }
  if ('task' in answer) return answer.task;
  if ('done' in answer) return {};
  const { code, message } = answer.error;
  throw code === 'NOT_FOUND' ? notFound() : refusedWith(code, message);
}
