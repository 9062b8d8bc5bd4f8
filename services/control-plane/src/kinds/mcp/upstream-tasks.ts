/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) as an upstream server speaks it
 * to this control plane (decision 071): what a task answer must look like to be relayed, and how it
 * gets past the SDK. The v2 client decodes a `tools/call` result of `resultType: "task"` as an
 * unsupported result and keeps nothing of it; the instance's transport hands such a result on
 * under a key of `_meta` only this process knows (`carryTask`), and the instance takes it out again
 * (`carriedTask`), checked. Everything a task carries is checked here before it is relayed.
 */
import { randomBytes } from 'node:crypto';
import {
  MAX_UPSTREAM_TASK_ID_CHARS,
  TASK_STATUSES,
  TASKS_EXTENSION,
  type TaskStatus,
} from '@bindery/contracts';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

/** The capabilities `_meta` of a request that declares the tasks extension besides `capabilities`. */
export function withTasksExtension(capabilities: Record<string, unknown>): Record<string, unknown> {
  return { ...capabilities, extensions: { [TASKS_EXTENSION]: {} } };
}

/** A task as an upstream described it, checked (its `taskId` the upstream's own). */
export interface UpstreamTask {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** input_required: the requests the agent is to answer (tasks/update), by key. */
  inputRequests?: Record<string, { method: string; params: Record<string, unknown> }>;
  /** completed: the tool result, as tools/call would have answered it. */
  result?: Record<string, unknown>;
  /** failed: the JSON-RPC error the request ended with. */
  error?: { code: number; message: string; data?: unknown };
}

/** A tools/call an upstream answered with a task: its first state. */
export interface TaskCreated {
  resultType: 'task';
  task: UpstreamTask;
}

/** The `_meta` key a task answer travels under through the SDK (random per process: no upstream can name it). */
const CARRIED = `bindery/carried-task-x${randomBytes(8).toString('hex')}`;

/**
 * A JSON-RPC message as the SDK may take it: a result of `resultType: "task"` becomes an empty
 * tool result carrying the task in `_meta[CARRIED]`; anything else is left as it is.
 */
export function carryTask<M>(message: M): M {
  const result = (message as { result?: unknown }).result;
  if (
    typeof result !== 'object' ||
    result === null ||
    (result as { resultType?: unknown }).resultType !== 'task'
  )
    return message;
  return { ...message, result: { resultType: 'complete', content: [], _meta: { [CARRIED]: result } } };
}

/** The task a result carries (carryTask), unchecked; undefined for any other result. */
export function carriedTask(result: unknown): Record<string, unknown> | undefined {
  const meta = (result as { _meta?: Record<string, unknown> } | null)?._meta;
  const carried = meta?.[CARRIED];
  return typeof carried === 'object' && carried !== null ? (carried as Record<string, unknown>) : undefined;
}

const STATUSES: ReadonlySet<string> = new Set(TASK_STATUSES);
/** The longest timestamp and status message kept (longer messages are cut, timestamps refused). */
const MAX_TIMESTAMP_CHARS = 64;
const MAX_STATUS_MESSAGE_CHARS = 2_000;

/**
 * An upstream's task checked: the Task fields SEP-2663 defines, and, given `inputRequests` (how a
 * tasks/get answer's are checked), the field its status carries (`inputRequests`, `result`,
 * `error`); anything else is left out. Throws a string naming what is wrong.
 */
export function checkedTask(
  raw: Record<string, unknown>,
  inputRequests?: (value: unknown) => UpstreamTask['inputRequests'],
): UpstreamTask {
  const { taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs } = raw;
  if (typeof taskId !== 'string' || taskId === '' || taskId.length > MAX_UPSTREAM_TASK_ID_CHARS)
    throw `taskId is not a string of 1 to ${MAX_UPSTREAM_TASK_ID_CHARS} characters`;
  if (typeof status !== 'string' || !STATUSES.has(status)) throw 'status is not a task status';
  for (const [name, value] of [
    ['createdAt', createdAt],
    ['lastUpdatedAt', lastUpdatedAt],
  ] as const) {
    if (typeof value !== 'string' || value.length > MAX_TIMESTAMP_CHARS || Number.isNaN(Date.parse(value)))
      throw `${name} is not an ISO 8601 timestamp`;
  }
  if (ttlMs !== undefined && ttlMs !== null && !(Number.isInteger(ttlMs) && (ttlMs as number) >= 0))
    throw 'ttlMs is not a whole number of milliseconds or null';
  if (pollIntervalMs !== undefined && !(Number.isInteger(pollIntervalMs) && (pollIntervalMs as number) > 0))
    throw 'pollIntervalMs is not a positive whole number of milliseconds';
  if (statusMessage !== undefined && typeof statusMessage !== 'string') throw 'statusMessage is not a string';
  const task: UpstreamTask = {
    taskId,
    status: status as TaskStatus,
    ...(statusMessage !== undefined && { statusMessage: statusMessage.slice(0, MAX_STATUS_MESSAGE_CHARS) }),
    createdAt: createdAt as string,
    lastUpdatedAt: lastUpdatedAt as string,
    // A task without a TTL is kept as long as the server likes (null: unlimited).
    ttlMs: (ttlMs as number | null | undefined) ?? null,
    ...(pollIntervalMs !== undefined && { pollIntervalMs: pollIntervalMs as number }),
  };
  if (!inputRequests) return task;
  if (status === 'input_required') task.inputRequests = inputRequests(raw.inputRequests ?? {}) ?? {};
  if (status === 'completed') {
    const parsed = CallToolResultSchema.safeParse(raw.result);
    if (!parsed.success) throw 'a completed task carries no tool result';
    task.result = parsed.data as Record<string, unknown>;
  }
  if (status === 'failed') {
    const error = raw.error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
    if (
      typeof error !== 'object' ||
      error === null ||
      !Number.isInteger(error.code) ||
      typeof error.message !== 'string'
    )
      throw 'a failed task carries no JSON-RPC error';
    task.error = {
      code: error.code as number,
      message: error.message.slice(0, MAX_STATUS_MESSAGE_CHARS),
      ...(error.data !== undefined && { data: error.data }),
    };
  }
  return task;
}
