// Pins the log stream (SDK Client -> gateway -> control plane): a session receives
// notifications/message about its own tool calls only, filtered by the level it set with
// logging/setLevel (warning until it sets one): start and finish at debug, refusals at warning,
// failures at error, a custom tool's console lines at their console level, and the stderr lines
// of an upstream server whose instance serves that session alone at info. Checked on both ways a
// call is answered: plain calls (the gateway's direct path) and calls with a progress token (the
// SDK transport).
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  LoggingMessageNotificationSchema,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);

let stack: Stack;
let apiKey: string;
let otherKey: string;

beforeAll(async () => {
  stack = await startStack({ controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node' } });
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'logs' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', { name: 'CRM', data: { customers: [{ id: 'c1' }] } });
  const ask = await as('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '',
    operation_type: 'query',
    name: 'ask',
  });
  const chatty = await as('POST', '/api/v2/adis', {
    kind: 'custom',
    name: 'chatty',
    code: 'export default (args) => { console.debug("d"); console.log("hello", args.who); console.warn("careful"); return { ok: true }; }',
    input_schema: { type: 'object', properties: { who: { type: 'string' } } },
  });
  const broken = await as('POST', '/api/v2/adis', {
    kind: 'custom',
    name: 'broken',
    code: 'export default () => { throw new Error("it broke"); }',
    input_schema: { type: 'object' },
  });
  const upstream = await as('POST', '/api/v2/upstream-servers', {
    name: 'Talker',
    transport: 'stdio',
    command: 'node',
    args: [SCRIPT],
    session_mode: 'per_session',
  });
  const aei = await as('POST', '/api/v2/aeis', { name: 'logs' });
  apiKey = aei.api_key;
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, [
    { adi_id: ask.id },
    { adi_id: chatty.id },
    { adi_id: broken.id },
  ]);
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { upstream_server_id: upstream.id, prefix: 'up' });
  const other = await as('POST', '/api/v2/aeis', { name: 'other' });
  otherKey = other.api_key;
  await as('POST', `/api/v2/aeis/${other.id}/bindings`, { adi_id: ask.id });
}, 90_000);
afterAll(() => stack?.close());

type Line = LoggingMessageNotification['params'];

/** A session that keeps every log line it receives. */
async function session(key = apiKey): Promise<{ client: Client; lines: Line[] }> {
  const client = await stack.connect(`/api/v2/mcp/server/${key}`);
  const lines: Line[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void lines.push(n.params));
  return { client, lines };
}

/** `[level, logger, event or message]` of each line, for readable comparisons. */
const summary = (lines: Line[]) =>
  lines.map((l) => {
    const data = l.data as Json;
    return [l.level, l.logger, data.event ?? data.message ?? data.stderr];
  });

/** Calls a tool on the direct path, or (with `streamed`) with a progress token on the SDK path. */
function call(client: Client, name: string, args: Record<string, unknown>, streamed = false) {
  return client.callTool({ name, arguments: args }, undefined, streamed ? { onprogress: () => {} } : {});
}

describe('the log stream', () => {
  for (const streamed of [false, true]) {
    const path = streamed ? 'the SDK transport' : 'the direct path';
    it(`sends each session its own lines at the level it set (${path})`, async () => {
      const a = await session();
      const b = await session();
      const other = await session(otherKey);
      await a.client.setLoggingLevel('debug');
      await other.client.setLoggingLevel('debug');

      await call(a.client, 'ask', { query: 'customers[0].id' }, streamed);
      expect(summary(a.lines)).toEqual([
        ['debug', 'bindery', 'started'],
        ['debug', 'bindery', 'finished'],
      ]);
      expect((a.lines[1]!.data as Json).duration_ms).toEqual(expect.any(Number));
      // B (at the default, warning) had no refusal yet; the other exposure's session saw nothing.
      expect(b.lines).toEqual([]);

      const refused = await call(b.client, 'ask', { query: '[?' }, streamed);
      expect(refused.isError).toBe(true);
      expect(summary(b.lines)).toEqual([['warning', 'bindery', 'refused']]);
      expect(b.lines[0]!.data).toMatchObject({ tool: 'ask', code: 'INVALID_QUERY' });
      await call(b.client, 'broken', {}, streamed);
      expect(summary(b.lines).slice(1)).toEqual([['error', 'bindery', 'failed']]);
      expect(b.lines[1]!.data).toMatchObject({ tool: 'broken', code: 'UPSTREAM_FAILED' });

      // A saw none of B's lines; raising A's level silences its own successes.
      expect(a.lines).toHaveLength(2);
      await a.client.setLoggingLevel('error');
      await call(a.client, 'ask', { query: '[?' }, streamed);
      expect(a.lines).toHaveLength(2);
      expect(other.lines).toEqual([]);
      for (const s of [a, b, other]) await s.client.close();
    });
  }

  it("sends a custom tool's console lines at their console level", async () => {
    const a = await session();
    await a.client.setLoggingLevel('info');
    await call(a.client, 'chatty', { who: 'Ada' });
    expect(summary(a.lines)).toEqual([
      ['info', 'console', 'hello Ada'],
      ['warning', 'console', 'careful'],
    ]);
    await a.client.close();
  });

  it('sends the stderr lines its own upstream instance wrote during the call, to that session only', async () => {
    const a = await session();
    const b = await session();
    await a.client.setLoggingLevel('info');
    await b.client.setLoggingLevel('info');
    const answer = await call(a.client, 'up_echo', { text: 'hi', stderr: 'note from the upstream' });
    expect(answer.isError).toBeFalsy();
    expect(summary(a.lines)).toEqual([['info', 'upstream', 'note from the upstream']]);
    expect(b.lines).toEqual([]);
    for (const s of [a, b]) await s.client.close();
  }, 30_000);
});
