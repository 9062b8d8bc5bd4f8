// Pins custom tools as full MCP tools end to end (client -> gateway -> control plane -> sandbox): a
// tool that answers image, text and embedded-resource content reaches the client as that content
// (the SDK client checks it against MCP's schemas); its ctx.progress reports arrive as
// notifications/progress for the client's progress token, and its ctx.log lines as
// notifications/message named after the tool, before the result. Legacy: a session's
// logging/setLevel filters the lines (warning until set). Modern (2026-07-28): the request's own
// log level filters them, none when it names none, and all of it travels as SSE events on the
// request's response.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LoggingMessageNotificationSchema,
  type LoggingMessageNotification,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import type { Json } from '@bindery/test-support';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const VERSION = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '1.0.0' },
};

const GALLERY = `export default (args, ctx) => {
  ctx.log('debug', 'looking for ' + args.topic);
  ctx.progress(1, 3, 'found');
  ctx.log('info', { found: 1, topic: args.topic });
  ctx.progress(2, 3, 'drawn');
  ctx.log('warning', 'the picture is tiny');
  ctx.progress(3, 3);
  return {
    content: [
      { type: 'text', text: 'A picture of ' + args.topic },
      { type: 'image', data: '${PNG}', mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'gallery://' + args.topic, mimeType: 'text/plain', text: 'caption' } },
    ],
    structuredContent: { topic: args.topic },
  };
}`;

const CONTENT = (topic: string) => [
  { type: 'text', text: `A picture of ${topic}` },
  { type: 'image', data: PNG, mimeType: 'image/png' },
  { type: 'resource', resource: { uri: `gallery://${topic}`, mimeType: 'text/plain', text: 'caption' } },
];

let stack: Stack;
let path: string;

beforeAll(async () => {
  stack = await startStack();
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'gallery-owner' })).token;
  const as = (method: string, to: string, body?: unknown) => stack.admin(method, to, body, token);
  const adi = await as('POST', '/api/v2/adis', {
    kind: 'custom',
    name: 'gallery',
    code: GALLERY,
    input_schema: { type: 'object', required: ['topic'], properties: { topic: { type: 'string' } } },
  });
  const aei = await as('POST', '/api/v2/aeis', { name: 'artist' });
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, [{ adi_id: adi.id }]);
  path = `/api/v2/mcp/server/${aei.api_key}`;
});
afterAll(() => stack.close());

/** The tool's own lines among a session's log messages (the gateway's own are logger `bindery`). */
const toolLines = (logs: LoggingMessageNotification['params'][]) =>
  logs.filter((line) => line.logger === 'gallery').map(({ level, data }) => ({ level, data }));

describe('a legacy session (SDK client)', () => {
  it('gets the content, the progress reports and the log lines at its level', async () => {
    const client = await stack.connect(path);
    const logs: LoggingMessageNotification['params'][] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    await client.setLoggingLevel('info');
    const reports: Progress[] = [];
    const result = await client.callTool({ name: 'gallery', arguments: { topic: 'cats' } }, undefined, {
      onprogress: (report) => void reports.push(report),
    });
    expect(result.content).toEqual(CONTENT('cats'));
    expect(result.structuredContent).toEqual({ topic: 'cats' });
    expect(reports).toEqual([
      { progress: 1, total: 3, message: 'found' },
      { progress: 2, total: 3, message: 'drawn' },
      { progress: 3, total: 3 },
    ]);
    expect(toolLines(logs)).toEqual([
      { level: 'info', data: { found: 1, topic: 'cats' } },
      { level: 'warning', data: 'the picture is tiny' },
    ]);
  });

  it('hears warning and above until it sets a level, and no progress without a token', async () => {
    const client = await stack.connect(path);
    const logs: LoggingMessageNotification['params'][] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    const result = await client.callTool({ name: 'gallery', arguments: { topic: 'dogs' } });
    expect(result.content).toEqual(CONTENT('dogs'));
    expect(toolLines(logs)).toEqual([{ level: 'warning', data: 'the picture is tiny' }]);
    await client.setLoggingLevel('debug');
    logs.length = 0;
    await client.callTool({ name: 'gallery', arguments: { topic: 'owls' } });
    expect(toolLines(logs).map((line) => line.level)).toEqual(['debug', 'info', 'warning']);
  });
});

describe('a modern request (2026-07-28)', () => {
  /** A modern tools/call of the gallery, answered as SSE events: its notifications and result. */
  async function call(meta: Record<string, unknown>) {
    const res = await rawPost(
      stack.gatewayUrl,
      path,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'gallery', arguments: { topic: 'bats' }, _meta: { ...ENVELOPE, ...meta } },
      }),
      {
        headers: {
          'mcp-protocol-version': VERSION,
          'mcp-method': 'tools/call',
          'mcp-name': 'gallery',
          accept: 'application/json, text/event-stream',
        },
      },
    );
    expect(res.status).toBe(200);
    const messages: Json[] = res.headers['content-type']?.startsWith('text/event-stream')
      ? res.text
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => JSON.parse(line.slice(6)))
      : [JSON.parse(res.text)];
    const answer = messages.pop();
    return { answer, notifications: messages, contentType: res.headers['content-type'] };
  }

  it('gets progress and the log lines at the request’s level as events before the result', async () => {
    const { answer, notifications, contentType } = await call({
      progressToken: 'pt-1',
      'io.modelcontextprotocol/logLevel': 'info',
    });
    expect(contentType).toMatch(/^text\/event-stream/);
    expect(answer).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: { content: CONTENT('bats'), structuredContent: { topic: 'bats' }, resultType: 'complete' },
    });
    expect(notifications.filter((n) => n.method === 'notifications/progress').map((n) => n.params)).toEqual([
      { progressToken: 'pt-1', progress: 1, total: 3, message: 'found' },
      { progressToken: 'pt-1', progress: 2, total: 3, message: 'drawn' },
      { progressToken: 'pt-1', progress: 3, total: 3 },
    ]);
    expect(
      toolLines(notifications.filter((n) => n.method === 'notifications/message').map((n) => n.params)),
    ).toEqual([
      { level: 'info', data: { found: 1, topic: 'bats' } },
      { level: 'warning', data: 'the picture is tiny' },
    ]);
  });

  it('hears no log line when the request names no level, and only progress for its token', async () => {
    const { answer, notifications } = await call({ progressToken: 9 });
    expect(answer.result.content).toEqual(CONTENT('bats'));
    expect(notifications.map((n) => n.method)).toEqual([
      'notifications/progress',
      'notifications/progress',
      'notifications/progress',
    ]);
    expect(notifications[0].params.progressToken).toBe(9);
  });

  it('answers plain JSON when nothing is listened to', async () => {
    const { answer, notifications, contentType } = await call({});
    expect(contentType).toMatch(/^application\/json/);
    expect(notifications).toEqual([]);
    expect(answer.result.content).toEqual(CONTENT('bats'));
  });
});
