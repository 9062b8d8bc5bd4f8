// The MCP tasks extension (io.modelcontextprotocol/tasks, SEP-2663) as a server of the 2026-07-28
// era offers it, for test upstreams written with the v2 SDK (which has no tasks support of its own):
// a store of this process's tasks, the three methods on a server (`tasks/get`, `tasks/update`,
// `tasks/cancel`, through the SDK's custom-method handlers) and the tools the conformance suite's
// tasks scenarios call (`registerTaskTools`). A tool answers a task only to a request that declared
// the extension; a tool that requires one answers -32021 to any other.
import { randomUUID } from 'node:crypto';
import { clearTimeout, setTimeout } from 'node:timers';
import {
  fromJsonSchema,
  MissingRequiredClientCapabilityError,
  ProtocolError,
} from '@modelcontextprotocol/server';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const TTL_MS = 10 * 60_000;
const POLL_MS = 200;
const TASK_PARAMS = fromJsonSchema({
  type: 'object',
  properties: { taskId: { type: 'string' } },
  required: ['taskId'],
});

/** True when the request declared the tasks extension in its per-request capabilities. */
export function declaresTasks(ctx) {
  const extensions = ctx?.mcpReq?.envelope?.[CAPABILITIES_META]?.extensions;
  return typeof extensions === 'object' && extensions !== null && TASKS_EXTENSION in extensions;
}

/** -32021: the request did not declare the extension a task needs. */
export function missingTasks() {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    'Missing required client capability: this tool runs as a task',
  );
}

/**
 * This process's tasks. `start(work)` creates a task and runs `work(task)`, which resolves with the
 * tool result, rejects with a ProtocolError (failed), or asks through `task.ask(requests)`.
 */
export class TaskStore {
  tasks = new Map();
  /** Who asked what, by task: the subject of each task (its creator's `who` argument, if any). */
  subjects = new Map();

  start(work, subject) {
    const now = new Date().toISOString();
    const task = {
      taskId: randomUUID(),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
      inputRequests: {},
      waiting: new Map(),
      cancel: new globalThis.AbortController(),
    };
    this.tasks.set(task.taskId, task);
    if (subject !== undefined) this.subjects.set(task.taskId, subject);
    const helpers = {
      signal: task.cancel.signal,
      ask: (requests) => this.ask(task, requests),
      note: (message) => this.touch(task, { statusMessage: message }),
    };
    Promise.resolve()
      .then(() => work(helpers))
      .then(
        (result) => this.settle(task, { status: 'completed', result }),
        (error) => {
          if (task.cancel.signal.aborted) this.settle(task, { status: 'cancelled' });
          else
            this.settle(task, {
              status: 'failed',
              statusMessage: String(error?.message ?? error),
              error: {
                code: typeof error?.code === 'number' ? error.code : -32603,
                message: String(error?.message ?? error),
              },
            });
        },
      );
    return this.created(task);
  }

  ask(task, requests) {
    const answers = Object.keys(requests).map(
      (key) =>
        new Promise((resolve) => {
          task.waiting.set(key, resolve);
        }),
    );
    Object.assign(task.inputRequests, requests);
    this.touch(task, { status: 'input_required' });
    return Promise.all(answers).then((values) =>
      Object.fromEntries(Object.keys(requests).map((k, i) => [k, values[i]])),
    );
  }

  touch(task, fields) {
    if (TERMINAL.has(task.status)) return;
    Object.assign(task, fields, { lastUpdatedAt: new Date().toISOString() });
  }

  settle(task, fields) {
    if (TERMINAL.has(task.status)) return;
    task.inputRequests = {};
    task.waiting.clear();
    Object.assign(task, fields, { lastUpdatedAt: new Date().toISOString() });
  }

  created(task) {
    return { resultType: 'task', ...this.base(task) };
  }

  base(task) {
    return {
      taskId: task.taskId,
      status: task.status,
      ...(task.statusMessage !== undefined && { statusMessage: task.statusMessage }),
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: task.ttlMs,
      pollIntervalMs: task.pollIntervalMs,
    };
  }

  detailed(task) {
    return {
      ...this.base(task),
      ...(task.status === 'input_required' && { inputRequests: { ...task.inputRequests } }),
      ...(task.status === 'completed' && { result: task.result }),
      ...(task.status === 'failed' && { error: task.error }),
    };
  }

  found(taskId) {
    const task = this.tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, 'Failed to retrieve task: Task not found');
    return task;
  }

  /** tasks/get, tasks/update and tasks/cancel on `server` (an McpServer). */
  serve(server) {
    const gate = (ctx) => {
      if (!declaresTasks(ctx)) throw missingTasks();
    };
    server.server.setRequestHandler('tasks/get', { params: TASK_PARAMS }, async (params, ctx) => {
      gate(ctx);
      return this.detailed(this.found(params.taskId));
    });
    server.server.setRequestHandler('tasks/update', { params: TASK_PARAMS }, async (params, ctx) => {
      gate(ctx);
      const task = this.found(params.taskId);
      // The SDK lifts inputResponses out of a request's params (MRTR): they are read where it puts them.
      const responses = params.inputResponses ?? ctx.mcpReq.inputResponses ?? {};
      for (const [key, response] of Object.entries(responses)) {
        const resolve = task.waiting.get(key);
        if (!resolve) continue;
        task.waiting.delete(key);
        delete task.inputRequests[key];
        resolve(response);
      }
      if (task.status === 'input_required' && task.waiting.size === 0)
        this.touch(task, { status: 'working' });
      return {};
    });
    server.server.setRequestHandler('tasks/cancel', { params: TASK_PARAMS }, async (params, ctx) => {
      gate(ctx);
      const task = this.found(params.taskId);
      if (!TERMINAL.has(task.status)) task.cancel.abort();
      return {};
    });
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new Error('cancelled'));
      },
      { once: true },
    );
  });

const elicit = (message) => ({
  method: 'elicitation/create',
  params: {
    mode: 'form',
    message,
    requestedSchema: {
      type: 'object',
      properties: { confirm: { type: 'boolean' }, name: { type: 'string' } },
    },
  },
});

const text = (value) => ({ content: [{ type: 'text', text: value }] });

/**
 * The tools of the conformance suite's tasks scenarios, served by low-level tools/list and
 * tools/call handlers (McpServer's would turn a -32021 into a tool error): greet (never a task),
 * slow_compute (a task when the client takes tasks), failing_job (a task required, ends in a tool
 * error), protocol_error_job (ends in a JSON-RPC error), confirm_delete and multi_input (ask in their
 * task), test_tool_with_task (asks through input_required first, then answers a task); and
 * malformed_task and unasked_task, which break the extension's rules.
 */
export function serveTaskTools(server, store) {
  const tools = new Map();
  const tool = (name, description, properties, run) =>
    tools.set(name, { definition: { name, description, inputSchema: { type: 'object', properties } }, run });
  const optional = (ctx, work) => (declaresTasks(ctx) ? store.start(work) : work({ signal: undefined }));
  const required = (ctx, work) => {
    if (!declaresTasks(ctx)) throw missingTasks();
    return store.start(work);
  };
  tool('greet', 'Greets by name, at once.', { name: { type: 'string' } }, async (args) =>
    text(`Hello, ${String(args.name ?? 'world')}!`),
  );
  tool(
    'slow_compute',
    'Waits `seconds`, then answers (a task for a client that takes tasks).',
    { seconds: { type: 'number' }, label: { type: 'string' } },
    async (args, ctx) =>
      optional(ctx, async ({ signal }) => {
        await sleep(Math.min(Number(args.seconds ?? 0), 120) * 1000, signal);
        return text(`computed ${String(args.label ?? '')} after ${String(args.seconds ?? 0)}s`);
      }),
  );
  tool('failing_job', 'A task that ends in a tool error.', {}, async (_args, ctx) =>
    required(ctx, async () => {
      await sleep(300);
      return { content: [{ type: 'text', text: 'the job failed' }], isError: true };
    }),
  );
  tool('protocol_error_job', 'A task that ends in a JSON-RPC error.', {}, async (_args, ctx) =>
    required(ctx, async () => {
      await sleep(300);
      throw new ProtocolError(-32603, 'the job broke down');
    }),
  );
  tool(
    'confirm_delete',
    'Asks for a confirmation in its task, then deletes.',
    { path: { type: 'string' } },
    async (args, ctx) =>
      required(ctx, async ({ ask }) => {
        const answers = await ask({ confirm: elicit(`Delete ${String(args.path ?? 'it')}?`) });
        return text(`confirmed: ${JSON.stringify(answers.confirm?.content ?? null)}`);
      }),
  );
  tool('multi_input', 'Asks two questions at once in its task.', {}, async (_args, ctx) =>
    required(ctx, async ({ ask }) => {
      const answers = await ask({ first: elicit('First?'), second: elicit('Second?') });
      return text(`answers: ${JSON.stringify(answers)}`);
    }),
  );
  tool(
    'test_tool_with_task',
    'Asks a name (input_required), then greets it in a task.',
    {},
    async (_args, ctx) => {
      const given = ctx.mcpReq.inputResponses?.user_name;
      const name = given?.action === 'accept' ? given.content?.name : undefined;
      if (typeof name !== 'string') {
        if (!declaresTasks(ctx)) throw missingTasks();
        return {
          resultType: 'input_required',
          inputRequests: {
            user_name: {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message: 'Who is it for?',
                requestedSchema: {
                  type: 'object',
                  properties: { name: { type: 'string' } },
                  required: ['name'],
                },
              },
            },
          },
        };
      }
      return required(ctx, async () => {
        await sleep(200);
        return text(`Hello, ${name}!`);
      });
    },
  );
  // Two that break the extension's rules, for Bindery to refuse: a task whose id is no string, and
  // a task to a request that did not declare the extension.
  tool('malformed_task', 'Answers a task without a usable id.', {}, async () => ({
    resultType: 'task',
    taskId: 42,
    status: 'working',
    createdAt: new Date().toISOString(),
    lastUpdatedAt: new Date().toISOString(),
    ttlMs: 1000,
  }));
  tool('unasked_task', 'Answers a task whatever the request declared.', {}, async () =>
    store.start(async () => text('done')),
  );
  server.server.setRequestHandler('tools/list', async () => ({
    tools: [...tools.values()].map((t) => t.definition),
  }));
  server.server.setRequestHandler('tools/call', async (request, ctx) => {
    const found = tools.get(request.params.name);
    if (!found) throw new ProtocolError(-32602, `Unknown tool: ${request.params.name}`);
    return found.run(request.params.arguments ?? {}, ctx);
  });
}
