// Pins the relay of the MCP tasks extension (io.modelcontextprotocol/tasks, SEP-2663) from upstream
// servers, through exposures that attach a real 2026-07-28 server offering tasks (tasks-server.mjs,
// written with the v2 SDK) without a prefix, over stdio and over HTTP:
// - a modern agent that declares the extension gets the upstream's task under a handle of ours
//   (CreateTaskResult), polls it to its end with tasks/get (its result, a tool error as completed,
//   a JSON-RPC failure as failed), answers what it asks with tasks/update, and cancels one;
// - an agent that does not declare it gets the synchronous answer, or -32021 naming the extension
//   for a tool that runs only as a task (a legacy agent: a tool error saying so); tasks/* without it
//   are -32021;
// - a handle is bound to the exposure and credential it was handed to: another exposure's key,
//   an altered handle and an unknown one are all -32602 "not found";
// - the Mcp-Name header of tasks/* must name the task (-32020 otherwise);
// - a task that breaks the extension's rules (no usable id, made for a request that did not declare
//   the extension) is a tool error, never relayed;
// - a tool that asks through input_required first and then makes a task composes (MRTR, then task);
// - a listen stream that names tasks hears each change of them (notifications/tasks, the whole task)
//   until they end; one that names another caller's task does not follow it; one of a client that
//   did not declare the extension is -32021.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Json } from '@bindery/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { modernHttpUpstream } from '../../control-plane/test/support/upstream-servers.ts';
import { tasksHandler } from '../../control-plane/test/support/upstream/tasks-server.mjs';
import { openListen } from './support/listen-stream.ts';
import { modernNamedRequest } from './support/mcp-raw.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const TASKS_SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/tasks-server.mjs', import.meta.url),
);
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

let stack: Stack;
let http: Awaited<ReturnType<typeof modernHttpUpstream>>;
const paths: Record<'stdio' | 'http' | 'other' | 'idle', string> = {} as never;
const aeiIds: Record<string, string> = {};
let as: (method: string, to: string, body?: unknown) => Promise<Record<string, unknown>>;
/** A personal key whose callers `alpha` and `beta` both map to the http exposure. */
let personalKey: string;

beforeAll(async () => {
  stack = await startStack({
    controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node', HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8' },
  });
  http = await modernHttpUpstream(tasksHandler);
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'tasker' })).token as string;
  as = (method, to, body) => stack.admin(method, to, body, token);
  const servers = {
    stdio: await as('POST', '/api/v2/upstream-servers', {
      name: 'Tasks stdio',
      transport: 'stdio',
      command: 'node',
      args: [TASKS_SCRIPT],
    }),
    http: await as('POST', '/api/v2/upstream-servers', {
      name: 'Tasks http',
      transport: 'http',
      url: http.url,
    }),
    // Stopped after a second without calls, were it not for the tasks it holds.
    idle: await as('POST', '/api/v2/upstream-servers', {
      name: 'Tasks idle',
      transport: 'stdio',
      command: 'node',
      args: [TASKS_SCRIPT],
      limits: { idle_timeout_ms: 1000 },
    }),
  };
  for (const server of Object.values(servers)) expect(server.status).toBe('ok');
  for (const [name, server] of [
    ['stdio', servers.stdio],
    ['http', servers.http],
    // Another exposure of the same server: its key must not reach the first one's tasks.
    ['other', servers.stdio],
    ['idle', servers.idle],
  ] as const) {
    const aei = await as('POST', '/api/v2/aeis', { name: `tasks-${name}` });
    await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { upstream_server_id: server.id });
    paths[name] = `/api/v2/mcp/server/${String(aei.api_key)}`;
    aeiIds[name] = String(aei.id);
  }
  personalKey = String((await as('POST', '/api/v2/mcp-keys', { name: 'laptop' })).key);
  for (const caller of ['alpha', 'beta'])
    await as('PUT', `/api/v2/callers/${caller}`, { aei_id: aeiIds.http });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await http?.close();
});

let nextId = 1;
/** One modern request on `path` from a client of `capabilities` (the tasks extension by default). */
function modern(
  path: string,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = TASKS,
  headers: Record<string, string> = {},
) {
  return modernNamedRequest(stack.gatewayUrl, path, { id: nextId++, method, params }, capabilities, headers);
}

/** tasks/get until the task ends (or has the status `until`). */
async function settled(path: string, taskId: string, until?: string): Promise<Json> {
  for (let i = 0; i < 100; i += 1) {
    const got = await modern(path, 'tasks/get', { taskId });
    if (got.error) throw new Error(`tasks/get of ${taskId}: ${JSON.stringify(got.error)}`);
    const status = got.result.status;
    if (status === until || ['completed', 'failed', 'cancelled'].includes(status)) return got.result;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`task ${taskId} did not settle`);
}

describe.each(['stdio', 'http'] as const)('tasks of an upstream over %s', (transport) => {
  const path = () => paths[transport];

  it('hands out the upstream task under its own handle, and tasks/get follows it to its result', async () => {
    const discovered = await modern(path(), 'server/discover', {});
    expect(discovered.result.capabilities.extensions).toHaveProperty(['io.modelcontextprotocol/tasks']);

    const created = await modern(path(), 'tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 1, label: 'one' },
    });
    const task = created.result;
    expect(task).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 600_000 });
    expect(task.taskId).toMatch(/^bt1\./);
    expect(Date.parse(task.createdAt)).not.toBeNaN();
    for (const absent of ['result', 'error', 'inputRequests', 'requestState', 'content', 'task'])
      expect(task).not.toHaveProperty(absent);
    // Durable at once: a poll right away finds it.
    const first = await modern(path(), 'tasks/get', { taskId: task.taskId });
    expect(first.result).toMatchObject({ resultType: 'complete', taskId: task.taskId });
    const done = await settled(path(), task.taskId);
    expect(done).toMatchObject({
      status: 'completed',
      taskId: task.taskId,
      result: { content: [{ type: 'text', text: 'computed one after 1s' }] },
    });
  });

  it('reports a tool error as completed and a JSON-RPC failure as failed', async () => {
    const failing = await modern(path(), 'tools/call', { name: 'failing_job', arguments: {} });
    expect(await settled(path(), failing.result.taskId)).toMatchObject({
      status: 'completed',
      result: { isError: true },
    });
    const broken = await modern(path(), 'tools/call', { name: 'protocol_error_job', arguments: {} });
    const failed = await settled(path(), broken.result.taskId);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: -32603, message: 'the job broke down' },
    });
    expect(failed).not.toHaveProperty('result');
  });

  it('relays what a task asks, and the agent’s answers with tasks/update, one key at a time', async () => {
    const made = await modern(path(), 'tools/call', { name: 'multi_input', arguments: {} });
    const asking = await settled(path(), made.result.taskId, 'input_required');
    expect(Object.keys(asking.inputRequests).sort()).toEqual(['first', 'second']);
    expect(asking.inputRequests.first).toMatchObject({ method: 'elicitation/create' });
    const accept = (name: string) => ({ action: 'accept', content: { name } });
    const ack = await modern(path(), 'tasks/update', {
      taskId: made.result.taskId,
      inputResponses: { first: accept('one') },
    });
    expect(ack.result).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    const still = await modern(path(), 'tasks/get', { taskId: made.result.taskId });
    expect(still.result.status).toBe('input_required');
    expect(Object.keys(still.result.inputRequests)).toEqual(['second']);
    await modern(path(), 'tasks/update', {
      taskId: made.result.taskId,
      inputResponses: { second: accept('two') },
    });
    const done = await settled(path(), made.result.taskId);
    expect(done.status).toBe('completed');
    // The two updates are on this exposure's trail; the polls between them are not.
    const audit = (await as('GET', `/api/v2/audit?aei_id=${aeiIds[transport]}&limit=200`)).items as {
      action: string;
      status: string;
      operation: string;
    }[];
    const ofTasks = audit.filter((row) => row.action.startsWith('upstream.task.'));
    expect(ofTasks.map((row) => [row.action, row.operation, row.status])).toEqual([
      ['upstream.task.update', 'update', 'ok'],
      ['upstream.task.update', 'update', 'ok'],
    ]);
    expect(done.result.content[0].text).toContain('"first":{"action":"accept","content":{"name":"one"}}');
    expect(done.result.content[0].text).toContain('"name":"two"');
  });

  it('cancels a task, and acknowledges a cancel of one that ended', async () => {
    const made = await modern(path(), 'tools/call', { name: 'slow_compute', arguments: { seconds: 60 } });
    const ack = await modern(path(), 'tasks/cancel', { taskId: made.result.taskId });
    expect(ack.result.resultType).toBe('complete');
    expect(ack.result).not.toHaveProperty('status');
    expect((await settled(path(), made.result.taskId)).status).toBe('cancelled');
    const again = await modern(path(), 'tasks/cancel', { taskId: made.result.taskId });
    expect(again.result.resultType).toBe('complete');
  });

  it('answers at once, or -32021, a client that did not declare the extension', async () => {
    const sync = await modern(path(), 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, {});
    expect(sync.result).toMatchObject({ resultType: 'complete', content: [{ text: 'computed  after 0s' }] });
    const required = await modern(path(), 'tools/call', { name: 'failing_job', arguments: {} }, {});
    expect(required.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    const made = await modern(path(), 'tools/call', { name: 'slow_compute', arguments: { seconds: 1 } });
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const refused = await modern(path(), method, { taskId: made.result.taskId, inputResponses: {} }, {});
      expect(refused.error).toMatchObject({
        code: -32021,
        data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      });
    }
  });

  it('refuses, as a tool error, a task that breaks the extension’s rules', async () => {
    const malformed = await modern(path(), 'tools/call', { name: 'malformed_task', arguments: {} });
    expect(malformed.result.isError).toBe(true);
    expect(malformed.result.content[0].text).toContain('taskId is not a string');
    const unasked = await modern(path(), 'tools/call', { name: 'unasked_task', arguments: {} }, {});
    expect(unasked.result.isError).toBe(true);
    expect(unasked.result.content[0].text).toContain('did not declare the tasks extension');
  });

  it('composes a round of input_required with the task that follows it', async () => {
    const capabilities = { elicitation: {}, ...TASKS };
    const first = await modern(
      path(),
      'tools/call',
      { name: 'test_tool_with_task', arguments: {} },
      capabilities,
    );
    expect(first.result.resultType).toBe('input_required');
    expect(first.result).not.toHaveProperty('taskId');
    const second = await modern(
      path(),
      'tools/call',
      {
        name: 'test_tool_with_task',
        arguments: {},
        inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
        requestState: first.result.requestState,
      },
      capabilities,
    );
    expect(second.result.resultType).toBe('task');
    expect(second.result).not.toHaveProperty('requestState');
    expect((await settled(path(), second.result.taskId)).result.content[0].text).toBe('Hello, Alice!');
  });
});

describe('task status notifications', () => {
  it('follow the tasks a listen stream names until they end, for their own holder only', async () => {
    const made = await modern(paths.http, 'tools/call', { name: 'slow_compute', arguments: { seconds: 1 } });
    const taskId = String(made.result.taskId);
    const stream = await openListen(
      stack.gatewayUrl,
      paths.http,
      'listen-1',
      {
        taskIds: [taskId, 'bt1.unknown'],
      },
      { capabilities: TASKS },
    );
    const last = await stream.next(
      (m) => m.method === 'notifications/tasks' && m.params?.status === 'completed',
    );
    stream.close();
    expect(stream.res.statusCode).toBe(200);
    const [ack, ...rest] = stream.messages;
    expect(ack).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] } },
    });
    const statuses = rest.filter((m) => m.method === 'notifications/tasks').map((m) => m.params!.status);
    expect(statuses[0]).toBe('working');
    expect(statuses.at(-1)).toBe('completed');
    expect(last.params).toMatchObject({
      taskId,
      result: { content: [{ type: 'text', text: 'computed  after 1s' }] },
      _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' },
    });

    // Another exposure's stream is not told of it, however long it listens.
    const other = await openListen(
      stack.gatewayUrl,
      paths.other,
      'listen-2',
      { taskIds: [taskId] },
      {
        capabilities: TASKS,
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    other.close();
    expect(other.messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
    expect(other.messages[0]!.params!.notifications).not.toHaveProperty('taskIds');
    expect(other.messages.filter((m) => m.method === 'notifications/tasks')).toEqual([]);

    const undeclared = await openListen(stack.gatewayUrl, paths.http, 'listen-3', { taskIds: [taskId] });
    await undeclared.ended;
    expect(undeclared.res.statusCode).toBe(400);
    expect(JSON.parse(undeclared.text).error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
  });
});

describe('a task handle', () => {
  it('is -32602 for another exposure’s key, altered, or unknown', async () => {
    const made = await modern(paths.stdio, 'tools/call', { name: 'slow_compute', arguments: { seconds: 1 } });
    const handle = String(made.result.taskId);
    const flipped = `${handle.slice(0, -2)}${handle.at(-2) === 'A' ? 'B' : 'A'}${handle.at(-1)}`;
    for (const [path, taskId] of [
      [paths.other, handle],
      [paths.stdio, flipped],
      [paths.stdio, 'bt1.bm90LWEtaGFuZGxl'],
      [paths.stdio, 'no-such-task'],
    ] as const) {
      const refused = await modern(path, 'tasks/get', { taskId });
      expect(refused.error).toMatchObject({ code: -32602, message: expect.stringContaining('not found') });
      const cancel = await modern(path, 'tasks/cancel', { taskId });
      expect(cancel.error?.code).toBe(-32602);
    }
    // The task itself went on, for its own holder.
    expect((await settled(paths.stdio, handle)).status).toBe('completed');
  });

  it('is -32602 for another caller of the same exposure, or the exposure’s own key', async () => {
    const alpha = { authorization: `Bearer ${personalKey}` };
    const made = await modern(
      '/api/v2/mcp/caller/alpha',
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 1 } },
      TASKS,
      alpha,
    );
    const taskId = String(made.result.taskId);
    for (const [path, headers] of [
      ['/api/v2/mcp/caller/beta', alpha],
      [paths.http, {}],
    ] as const) {
      const refused = await modern(path, 'tasks/get', { taskId }, TASKS, headers);
      expect(refused.error).toMatchObject({ code: -32602 });
    }
    for (;;) {
      const got = await modern('/api/v2/mcp/caller/alpha', 'tasks/get', { taskId }, TASKS, alpha);
      expect(got.error).toBeUndefined();
      if (got.result.status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('is not found once its server is gone from the exposure', async () => {
    const server = await as('POST', '/api/v2/upstream-servers', {
      name: 'Tasks doomed',
      transport: 'stdio',
      command: 'node',
      args: [TASKS_SCRIPT],
    });
    const aei = await as('POST', '/api/v2/aeis', { name: 'tasks-doomed' });
    await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { upstream_server_id: server.id });
    const path = `/api/v2/mcp/server/${String(aei.api_key)}`;
    const made = await modern(path, 'tools/call', { name: 'slow_compute', arguments: { seconds: 5 } });
    expect(made.result.resultType).toBe('task');
    expect((await modern(path, 'tasks/get', { taskId: made.result.taskId })).result.status).toBe('working');
    await as('DELETE', `/api/v2/upstream-servers/${String(server.id)}`);
    const refused = await modern(path, 'tasks/get', { taskId: made.result.taskId });
    expect(refused.error).toMatchObject({ code: -32602 });
  });

  it('keeps the stdio child that runs its task past the idle timeout', async () => {
    const made = await modern(paths.idle, 'tools/call', { name: 'slow_compute', arguments: { seconds: 3 } });
    // Nothing calls for three times the idle timeout: the child that runs the task stays.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await settled(paths.idle, String(made.result.taskId))).toMatchObject({
      status: 'completed',
      result: { content: [{ text: 'computed  after 3s' }] },
    });
  });

  it('must be named in Mcp-Name (-32020 otherwise)', async () => {
    const version = '2026-07-28';
    const res = await rawPost(
      stack.gatewayUrl,
      paths.stdio,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tasks/get',
        params: {
          taskId: 'bt1.x',
          _meta: {
            'io.modelcontextprotocol/protocolVersion': version,
            'io.modelcontextprotocol/clientCapabilities': TASKS,
          },
        },
      }),
      { headers: { 'mcp-protocol-version': version, 'mcp-method': 'tasks/get', 'mcp-name': 'bt1.y' } },
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).error.code).toBe(-32020);
  });

  it('is never made for a legacy agent, which is told the tool runs only as a task', async () => {
    const client = new Client({ name: 'legacy-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${paths.http}`)));
    try {
      const sync = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0 } });
      expect(sync.content).toEqual([{ type: 'text', text: 'computed  after 0s' }]);
      const required = await client.callTool({ name: 'failing_job', arguments: {} });
      expect(required.isError).toBe(true);
      expect(JSON.stringify(required.content)).toContain('runs as a task');
    } finally {
      await client.close();
    }
  });
});
