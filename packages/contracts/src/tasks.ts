/**
 * The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) relayed from upstream
 * servers (decision 071): an upstream tool that answers a modern agent with a task handle has it
 * handed on under a handle of Bindery's own, signed and bound to the exposure and credential of the
 * call, and `tasks/get`, `tasks/update` and `tasks/cancel` on that handle go to the server that made
 * the task (`POST /internal/aei/{aei_id}/tasks`). Bindery keeps nothing per task: the upstream does.
 */
import { Type, type Static } from 'typebox';
import { MAX_INPUT_KEY_CHARS, MAX_INPUT_RESPONSES } from './client-input.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TERMINAL_TASK_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
/** The longest task handle Bindery hands out or takes back, in characters. */
export const MAX_TASK_HANDLE_CHARS = 4096;
/** The longest task id of an upstream Bindery takes (longer: a malformed answer). */
export const MAX_UPSTREAM_TASK_ID_CHARS = 1024;

const JsonObject = Type.Record(Type.String(), Type.Unknown());

/**
 * A task as MCP carries it (the `Task` of SEP-2663), its `taskId` Bindery's handle: a
 * CreateTaskResult without its `resultType`, or a `tasks/get` answer with its status's own field
 * (`inputRequests`, `result`, `error`).
 */
export const RelayedTask = Type.Object(
  {
    taskId: Type.String({ maxLength: MAX_TASK_HANDLE_CHARS }),
    status: Type.Union(TASK_STATUSES.map((status) => Type.Literal(status))),
    statusMessage: Type.Optional(Type.String()),
    createdAt: Type.String(),
    lastUpdatedAt: Type.String(),
    ttlMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
    pollIntervalMs: Type.Optional(Type.Integer({ minimum: 1 })),
    inputRequests: Type.Optional(JsonObject),
    result: Type.Optional(JsonObject),
    error: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);
export type RelayedTask = Static<typeof RelayedTask>;

/**
 * `POST /internal/aei/{aei_id}/tasks`: one `tasks/get`, `tasks/update` or `tasks/cancel` of a
 * modern agent, on a handle a call of this AEI handed out. `holder` and `caller` must be the ones
 * the call was made with (the handle is bound to them); another credential is told the task is
 * not found, as for a handle never handed out.
 */
export const TaskRequestBody = Type.Object(
  {
    method: Type.Union([Type.Literal('get'), Type.Literal('update'), Type.Literal('cancel')]),
    task_id: Type.String({ minLength: 1, maxLength: MAX_TASK_HANDLE_CHARS }),
    holder: Type.String({ minLength: 1, maxLength: 128 }),
    caller: Type.Optional(Type.String({ maxLength: 64 })),
    input_responses: Type.Optional(
      Type.Record(Type.String({ maxLength: MAX_INPUT_KEY_CHARS }), JsonObject, {
        maxProperties: MAX_INPUT_RESPONSES,
        description: 'tasks/update: the agent’s answers to the task’s inputRequests, by key',
      }),
    ),
    request_id: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type TaskRequestBody = Static<typeof TaskRequestBody>;

/**
 * Its answer, 200 either way: `task` (tasks/get), `done` (tasks/update and tasks/cancel, acknowledged
 * by the upstream), or `error` with a Bindery code: NOT_FOUND (no such task for this caller, or the
 * upstream no longer knows it), FORBIDDEN (the exposure or its owner is disabled), UPSTREAM_FAILED
 * and TIMEOUT (the upstream failed), VALIDATION_FAILED (a tasks/update without answers, or whose
 * answers the upstream refused).
 */
export const TaskAnswer = Type.Union([
  Type.Object({ task: RelayedTask }),
  Type.Object({ done: Type.Literal(true) }),
  Type.Object({
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(Type.Union([JsonObject, Type.Null()])),
    }),
  }),
]);
export type TaskAnswer = Static<typeof TaskAnswer>;
