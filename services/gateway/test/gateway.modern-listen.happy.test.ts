// subscriptions/listen, the modern era's stream of changes, against the real gateway and control
// plane: the stream opens with notifications/subscriptions/acknowledged naming what is honoured (a
// URI naming no resource is left out); a binding renamed by the admin API arrives as
// tools/list_changed and a write to a subscribed context as resources/updated, each stamped with
// the listen request's id; a stream that asked for prompt changes only hears a new prompt and
// nothing before it; a bad filter is -32602; a key holds at most GATEWAY_MAX_SESSIONS_PER_KEY
// streams (429 beyond, room again once one closes); a stream the client closes is dropped; the
// gateway's shutdown ends each stream with the listen request's result.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { openListen as openStream, type Stream } from './support/listen-stream.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const VERSION = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
};
const CONTEXT = 'bindery://tools/find_customers/context';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const MAX_PER_KEY = 2;

let stack: Stack;
let exposed: Exposed;
let path: string;

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { GATEWAY_MAX_SESSIONS_PER_KEY: String(MAX_PER_KEY) } });
  exposed = await twoTableExposure(stack);
  path = `/api/v2/mcp/server/${exposed.apiKey}`;
});
afterAll(async () => {
  await stack.close();
});

/** Opens a listen stream on the exposure and reads its events as they come. */
const openListen = (id: string | number, notifications: Record<string, unknown>): Promise<Stream> =>
  openStream(stack.gatewayUrl, path, id, notifications);

it('acknowledges what it honours, then carries the changes asked for, stamped with its id', async () => {
  const all = await openListen('listen-1', {
    toolsListChanged: true,
    resourceSubscriptions: [CONTEXT, 'bindery://tools/no_such_tool/context'],
  });
  const quiet = await openListen(2, { promptsListChanged: true });
  try {
    expect(all.res.statusCode).toBe(200);
    expect(all.res.headers['content-type']).toMatch(/^text\/event-stream/);
    const ack = await all.next(() => true);
    expect(ack).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: {
        _meta: { [SUBSCRIPTION_ID]: 'listen-1' },
        notifications: { toolsListChanged: true, resourceSubscriptions: [CONTEXT] },
      },
    });
    await quiet.next((m) => m.method === 'notifications/subscriptions/acknowledged');

    const mark = all.messages.length;
    await stack.admin(
      'PUT',
      `/api/v2/tables/${exposed.tables.customers}/data`,
      { list: [{ id: 1, name: 'Ada' }] },
      exposed.token,
    );
    const updated = await all.next((m) => m.method === 'notifications/resources/updated', mark);
    expect(updated.params).toEqual({ uri: CONTEXT, _meta: { [SUBSCRIPTION_ID]: 'listen-1' } });

    await stack.admin(
      'PATCH',
      `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.peek_orders}`,
      { tool_name: 'peek_all_orders' },
      exposed.token,
    );
    const changed = await all.next((m) => m.method === 'notifications/tools/list_changed', mark);
    expect(changed.params).toEqual({ _meta: { [SUBSCRIPTION_ID]: 'listen-1' } });

    // The stream that asked for prompt changes only: the first thing it hears after its
    // acknowledgement is the prompt added last, nothing of the write or the rename before it.
    await stack.admin(
      'POST',
      `/api/v2/aeis/${exposed.aeiId}/prompts`,
      { name: 'greet', messages: [{ role: 'user', text: 'Hello' }] },
      exposed.token,
    );
    await quiet.next((m) => m.method === 'notifications/prompts/list_changed');
    expect(quiet.messages.map((m) => m.method)).toEqual([
      'notifications/subscriptions/acknowledged',
      'notifications/prompts/list_changed',
    ]);
    // Nothing but notifications went on the listen stream (no progress, no log, no result).
    expect(all.messages.every((m) => typeof m.method === 'string' && m.id === undefined)).toBe(true);
  } finally {
    all.close();
    quiet.close();
  }
});

it('a key holds at most its cap of streams: 429 beyond, room again once one closes', async () => {
  const open = [];
  for (let i = 0; i < MAX_PER_KEY; i++) {
    const stream = await openListen(`cap-${i}`, { toolsListChanged: true });
    await stream.next(() => true);
    open.push(stream);
  }
  const refused = await openListen('cap-over', { toolsListChanged: true });
  expect(refused.res.statusCode).toBe(429);
  expect(refused.res.headers['retry-after']).toBe('1');
  refused.close();
  open.pop()!.close();
  const listens = stack.gateway.gateway.sessions.listens;
  const deadline = Date.now() + 5_000;
  while (listens.size >= MAX_PER_KEY && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const again = await openListen('cap-again', { toolsListChanged: true });
  expect(again.res.statusCode).toBe(200);
  again.close();
  for (const stream of open) stream.close();
});

it('a bad filter is -32602, and a closed stream is dropped', async () => {
  const bad = await rawPost(
    stack.gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 3,
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: 'yes' }, _meta: ENVELOPE },
    }),
    { headers: { 'mcp-protocol-version': VERSION, 'mcp-method': 'subscriptions/listen' } },
  );
  expect(JSON.parse(bad.text)).toMatchObject({ id: 3, error: { code: -32602 } });

  const stream = await openListen(4, { toolsListChanged: true });
  await stream.next(() => true);
  const listens = stack.gateway.gateway.sessions.listens;
  const before = listens.size;
  stream.close();
  const deadline = Date.now() + 5_000;
  while (listens.size >= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(listens.size).toBe(before - 1);
});

it("the gateway's shutdown ends a stream with the listen request's result", async () => {
  const stream = await openListen('last', { toolsListChanged: true });
  await stream.next(() => true);
  const ended = new Promise<void>((resolve) => stream.res.once('end', () => resolve()));
  stack.gateway.gateway.sessions.endStandingStreams();
  await ended;
  expect(stream.messages.at(-1)).toMatchObject({
    jsonrpc: '2.0',
    id: 'last',
    result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'last' } },
  });
});
