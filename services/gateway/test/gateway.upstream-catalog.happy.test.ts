// Pins upstream servers' resources and prompts as MCP clients see them (SDK Client -> gateway ->
// control plane -> a real upstream MCP server over stdio): an attached server's resources are
// listed after the exposure's own with their URIs unchanged and read through the control plane, and
// so are URIs matching its resource templates (listed after the exposure's own template);
// its prompts are listed as `{prefix}_{name}` and got from it, their arguments checked first; a
// change of the upstream's lists reaches open sessions as list_changed; a resource of a server that
// offers subscriptions can be subscribed to and its changes reach the subscriber (one that offers
// none is refused by name).
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);

let stack: Stack;
let apiKey: string;
let newsKey: string;
let aeiId: string;
let token: string;

beforeAll(async () => {
  stack = await startStack({ controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node' } });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'catalog' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', { name: 'CRM', data: { customers: [{ id: 'c1' }] } });
  const all = await as('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '',
    operation_type: 'get_all',
    name: 'everything',
  });
  const upstream = await as('POST', '/api/v2/upstream-servers', {
    name: 'Library',
    transport: 'stdio',
    command: 'node',
    args: [SCRIPT],
    env: { UPSTREAM_TEST_MARKER: 'the library', UPSTREAM_TEST_TEMPLATE: '1' },
  });
  // A second server offers subscriptions, and a tool that says a resource of it changed.
  const watched = await as('POST', '/api/v2/upstream-servers', {
    name: 'Newsroom',
    transport: 'stdio',
    command: 'node',
    args: [SCRIPT],
    env: {
      UPSTREAM_TEST_SUBSCRIBE: '1',
      UPSTREAM_TEST_EXTRA: 'touch',
      UPSTREAM_TEST_EXTRA_RESOURCES: 'test://news',
    },
  });
  const aei = await as('POST', '/api/v2/aeis', { name: 'catalog' });
  apiKey = aei.api_key;
  aeiId = aei.id;
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: all.id });
  await as('POST', `/api/v2/aeis/${aei.id}/prompts`, {
    name: 'review',
    arguments: [{ name: 'topic', required: true }],
    messages: [{ role: 'user', text: 'Review {{topic}}.' }],
  });
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { upstream_server_id: upstream.id, prefix: 'lib' });
  // On an exposure of its own, so the lists above stay the library's.
  const newsroom = await as('POST', '/api/v2/aeis', { name: 'newsroom' });
  newsKey = newsroom.api_key;
  await as('POST', `/api/v2/aeis/${newsroom.id}/bindings`, { adi_id: all.id });
  // The library first: what both list (test://greeting) is its, and it offers no subscriptions.
  await as('POST', `/api/v2/aeis/${newsroom.id}/bindings`, {
    upstream_server_id: upstream.id,
    prefix: 'lib',
  });
  await as('POST', `/api/v2/aeis/${newsroom.id}/bindings`, {
    upstream_server_id: watched.id,
    prefix: 'news',
  });
}, 90_000);
afterAll(() => stack?.close());

const connect = (): Promise<Client> => stack.connect(`/api/v2/mcp/server/${apiKey}`);

/** The JSON-RPC error a request ends with. */
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('expected an error'),
    (error: unknown) => error as { code: number; message: string },
  );

const until = async (what: string, done: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 100; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
};

describe("an attached upstream server's resources", () => {
  it('are listed after the exposure’s own, with their URIs and fields as the server gave them', async () => {
    const client = await connect();
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([
      'bindery://tools/everything/context',
      'test://greeting',
      'test://data.json',
    ]);
    expect(resources[1]).toEqual({
      uri: 'test://greeting',
      name: 'greeting',
      title: 'Greeting',
      description: 'A friendly text.',
      mimeType: 'text/plain',
    });
    expect(resources[2]).toMatchObject({ mimeType: 'application/json', size: 17 });
    await client.close();
  });

  it('are read from the server through the control plane, and audited', async () => {
    const client = await connect();
    const greeting = await client.readResource({ uri: 'test://greeting' });
    expect(greeting.contents).toEqual([
      { uri: 'test://greeting', mimeType: 'text/plain', text: 'Hello from the library' },
    ]);
    const data = await client.readResource({ uri: 'test://data.json' });
    expect(JSON.parse((data.contents[0] as { text: string }).text)).toEqual({ items: [1, 2, 3] });
    const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${aeiId}&limit=50`, undefined, token);
    const reads = (audit.items as Json[]).filter((row) => row.action === 'upstream.resource.read');
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(reads.every((row) => row.status === 'ok')).toBe(true);
    // A URI the server did not list is no resource of the exposure.
    const unknown = await refusal(client.readResource({ uri: 'test://elsewhere' }));
    expect(unknown.code).toBe(-32002);
    await client.close();
  });

  it('include its resource templates, and a URI matching one is read from it', async () => {
    const client = await connect();
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'bindery://tools/{tool_name}/context{/pointer*}',
      'test://items/{id}',
    ]);
    expect(resourceTemplates[1]).toEqual({
      uriTemplate: 'test://items/{id}',
      name: 'item',
      description: 'One item by id.',
      mimeType: 'text/plain',
    });
    const read = await client.readResource({ uri: 'test://items/42' });
    expect(read.contents).toEqual([{ uri: 'test://items/42', mimeType: 'text/plain', text: 'item 42' }]);
    // A URI neither listed nor matching a template names nothing.
    const missing = await refusal(client.readResource({ uri: 'test://items/42/more' }));
    expect(missing.code).toBe(-32002);
  });

  it('can be subscribed to when the server offers it, and its updates reach the subscribers', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${newsKey}`);
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    // resources/updated travels on the session's standing stream: open it first.
    await client.subscribeResource({ uri: 'test://news' });
    const told = await client.callTool({ name: 'news_touch', arguments: { text: 'test://news' } });
    expect((told.content as { text: string }[])[0]!.text).toBe('told 1');
    await until('resources/updated for test://news', () => updated.includes('test://news'));
    await client.unsubscribeResource({ uri: 'test://news' });

    // A server that offers no subscriptions is refused by name; the exposure's own resources still are.
    const refused = await refusal(client.subscribeResource({ uri: 'test://greeting' }));
    expect(refused.code).toBe(-32602);
    expect(refused.message).toMatch(/offers no resource subscriptions/);
    const unknown = await refusal(client.subscribeResource({ uri: 'test://elsewhere' }));
    expect(unknown.code).toBe(-32002);
    await client.subscribeResource({ uri: 'bindery://tools/everything/context' });
    await client.close();
  });
});

describe('a modern listen stream', () => {
  it('is told of the upstream resources it asked for, those that can be followed', async () => {
    const aborted = new AbortController();
    const timer = setTimeout(() => aborted.abort(), 15_000);
    const res = await fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${newsKey}`, {
      method: 'POST',
      signal: aborted.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'news-listen',
        method: 'subscriptions/listen',
        params: {
          notifications: { resourceSubscriptions: ['test://news', 'test://greeting'] },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const events = () =>
      text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as { method?: string; params?: Record<string, unknown> });
    const waitFor = async (method: string) => {
      while (!events().some((e) => e.method === method)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before ${method}`);
        text += decoder.decode(value, { stream: true });
      }
      return events().find((e) => e.method === method)!;
    };
    const ack = await waitFor('notifications/subscriptions/acknowledged');
    // The library's greeting comes from a server that offers no subscriptions: left out.
    expect(ack.params?.notifications).toEqual({ resourceSubscriptions: ['test://news'] });
    const client = await stack.connect(`/api/v2/mcp/server/${newsKey}`);
    await client.callTool({ name: 'news_touch', arguments: { text: 'test://news' } });
    const updated = await waitFor('notifications/resources/updated');
    expect(updated.params).toMatchObject({
      uri: 'test://news',
      _meta: { 'io.modelcontextprotocol/subscriptionId': 'news-listen' },
    });
    clearTimeout(timer);
    await reader.cancel();
    await client.close();
  });
});

describe("an attached upstream server's prompts", () => {
  it('are listed as {prefix}_{name} after the exposure’s own, and got from the server', async () => {
    const client = await connect();
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['review', 'lib_greet', 'lib_summarise']);
    expect(prompts[1]).toEqual({
      name: 'lib_greet',
      title: 'Greet someone',
      description: 'Asks for a greeting.',
      arguments: [{ name: 'name', description: 'who to greet', required: true }],
    });
    const greet = await client.getPrompt({ name: 'lib_greet', arguments: { name: 'Ada' } });
    expect(greet.messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'Please greet Ada warmly.' } },
    ]);
    const summary = await client.getPrompt({ name: 'lib_summarise', arguments: {} });
    expect(summary.messages[0]!.content).toEqual({ type: 'text', text: 'Summarise anything in one line.' });
    await client.close();
  });

  it('have their arguments checked here first, as the exposure’s own prompts do', async () => {
    const client = await connect();
    const missing = await refusal(client.getPrompt({ name: 'lib_greet', arguments: {} }));
    expect(missing.code).toBe(-32602);
    expect(missing.message).toMatch(/prompt "lib_greet" needs the argument "name"/);
    const unknown = await refusal(client.getPrompt({ name: 'lib_greet', arguments: { who: 'x' } }));
    expect(unknown.code).toBe(-32602);
    expect(unknown.message).toMatch(/has no argument "who"/);
    // Refused by the server itself (an empty name): its -32602 is passed on.
    const empty = await refusal(client.getPrompt({ name: 'lib_greet', arguments: { name: '' } }));
    expect(empty.code).toBe(-32602);
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'lib_greet' },
      argument: { name: 'name', value: 'A' },
    });
    expect(completion.completion.values).toEqual([]);
    await client.close();
  });
});

describe('a change of the upstream’s lists', () => {
  it('reaches open sessions as resources and prompts list_changed, with the new entries', async () => {
    const client = await connect();
    let resourcesChanged = 0;
    let promptsChanged = 0;
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void resourcesChanged++);
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => void promptsChanged++);
    await client.listResources();
    await client.listPrompts();
    const answer = await client.callTool({
      name: 'lib_set_tools',
      arguments: { resources: ['test://news'], prompts: ['brief'] },
    });
    expect(answer.isError).toBeFalsy();
    await until('both list_changed', () => resourcesChanged > 0 && promptsChanged > 0);
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain('test://news');
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain('lib_brief');
    const news = await client.readResource({ uri: 'test://news' });
    expect(news.contents).toEqual([
      { uri: 'test://news', mimeType: 'text/plain', text: 'resource test://news' },
    ]);
    await client.close();
  }, 30_000);
});
