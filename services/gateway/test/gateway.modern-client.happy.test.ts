// A modern client and a legacy client walk one exposure at once, through the real gateway and
// control plane: the v2 SDK Client probes with server/discover and stays modern (no session), the
// v1 SDK Client opens a legacy session with initialize; each lists and calls the tools, lists the
// resources and prompts, reads a context's resource and gets a prompt, and sees the same answers;
// a binding renamed by the admin API reaches both as tools/list_changed (the modern one through
// subscriptions/listen).
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let url: URL;
/** The session id header of every request the gateway received, by the client's name. */
const sessionHeaders: (string | undefined)[] = [];

beforeAll(async () => {
  stack = await startStack();
  exposed = await twoTableExposure(stack);
  url = new URL(`/api/v2/mcp/server/${exposed.apiKey}`, stack.gatewayUrl);
  await stack.admin(
    'POST',
    `/api/v2/aeis/${exposed.aeiId}/prompts`,
    {
      name: 'greet',
      arguments: [{ name: 'who', required: true }],
      messages: [{ role: 'user', text: 'Say hello to {{who}}.' }],
    },
    exposed.token,
  );
  stack.gateway.server.on('request', (req) => {
    if (req.headers['mcp-protocol-version'] === '2026-07-28') {
      sessionHeaders.push(req.headers['mcp-session-id'] as string | undefined);
    }
  });
});
afterAll(async () => {
  await stack.close();
});

it('a modern and a legacy client walk one exposure at once', async () => {
  const modern = new ModernClient(
    { name: 'modern-walker', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  const legacy = new LegacyClient({ name: 'legacy-walker', version: '1.0.0' });
  await Promise.all([modern.connect(new ModernTransport(url)), legacy.connect(new LegacyTransport(url))]);
  try {
    expect(modern.getProtocolEra()).toBe('modern');
    const [modernTools, legacyTools] = await Promise.all([modern.listTools(), legacy.listTools()]);
    const names = (tools: { tools: { name: string }[] }) => tools.tools.map((t) => t.name).sort();
    expect(names(modernTools)).toEqual(['find_customers', 'peek_orders']);
    expect(names(legacyTools)).toEqual(names(modernTools));

    const call = { name: 'find_customers', arguments: { query: '[1].name' } };
    const [modernCall, legacyCall] = await Promise.all([modern.callTool(call), legacy.callTool(call)]);
    expect(modernCall.isError).toBeFalsy();
    expect(JSON.stringify(modernCall.content)).toContain('Grace');
    expect(modernCall.content).toEqual(legacyCall.content);

    const [modernResources, modernPrompts] = await Promise.all([
      modern.listResources(),
      modern.listPrompts(),
    ]);
    const [legacyResources, legacyPrompts] = await Promise.all([
      legacy.listResources(),
      legacy.listPrompts(),
    ]);
    expect(modernResources.resources).toEqual(legacyResources.resources);
    expect(modernPrompts.prompts).toEqual(legacyPrompts.prompts);
    expect(modernPrompts.prompts.map((p) => p.name)).toContain('greet');

    const uri = 'bindery://tools/find_customers/context';
    const [modernRead, legacyRead] = await Promise.all([
      modern.readResource({ uri }),
      legacy.readResource({ uri }),
    ]);
    expect(JSON.stringify(modernRead.contents)).toContain('Grace');
    expect(modernRead.contents).toEqual(legacyRead.contents);
    const ask = { name: 'greet', arguments: { who: 'Ada' } };
    const [modernPrompt, legacyPrompt] = await Promise.all([modern.getPrompt(ask), legacy.getPrompt(ask)]);
    expect(JSON.stringify(modernPrompt.messages)).toContain('Ada');
    expect(modernPrompt.messages).toEqual(legacyPrompt.messages);

    // A list change reaches both: the legacy client on its session, the modern one on its listen stream.
    const heard = (register: (wake: () => void) => void) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no tools/list_changed within 5 s')), 5_000);
        register(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    const modernHeard = heard((wake) =>
      modern.setNotificationHandler('notifications/tools/list_changed', wake),
    );
    const legacyHeard = heard((wake) =>
      legacy.setNotificationHandler(ToolListChangedNotificationSchema, wake),
    );
    const subscription = await modern.listen({ toolsListChanged: true });
    expect(subscription.honoredFilter).toMatchObject({ toolsListChanged: true });
    await stack.admin(
      'PATCH',
      `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.peek_orders}`,
      { tool_name: 'peek_all_orders' },
      exposed.token,
    );
    await Promise.all([modernHeard, legacyHeard]);
    expect((await modern.listTools()).tools.map((t) => t.name).sort()).toEqual([
      'find_customers',
      'peek_all_orders',
    ]);
    await subscription.close();
    expect(await subscription.closed).toBe('local');

    // The modern client never had a session: no request of its carried one.
    expect(sessionHeaders.length).toBeGreaterThanOrEqual(5);
    expect(sessionHeaders.every((id) => id === undefined)).toBe(true);
  } finally {
    await Promise.all([modern.close(), legacy.close()]);
  }
});
