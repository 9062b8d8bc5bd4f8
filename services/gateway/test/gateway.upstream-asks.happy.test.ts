// Pins the relay of what an upstream tool asks its client while it runs, through an exposure that
// attaches the server without a prefix, with real SDK servers and clients of both eras:
// - a 2025-era server (transparent-server.mjs, over stdio and HTTP) sends elicitation/create,
//   sampling/createMessage and roots/list on the call's stream: a legacy agent's handlers answer
//   them (one round, and two in a row), a modern agent gets input_required and its retry completes
//   the call, and an agent that cannot be asked makes the server see the standard refusal;
// - a 2026-07-28 server's input_required reaches a legacy agent's handler and a modern agent alike;
// - two agents on one shared pool, asking at once with the same request ids, each get and answer
//   only their own questions, progress reports and resource updates;
// - an altered requestState is -32602;
// - an agent that gives the call up while it is being asked cancels the upstream call at once (not
//   when the wait for its answers runs out, minutes later);
// - an upstream tool's log messages reach the calling session at its level when the server keeps a
//   connection per session, and never another caller's session (a 2025-era connection shared by
//   callers does not say whose a line is: none is relayed); a 2026-07-28 server's reach the one
//   caller whose request asked for them, legacy session or modern request, at its level.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpUpstream, type HttpUpstream } from '../../control-plane/test/support/upstream-servers.ts';
import { createTransparentServer } from '../../control-plane/test/support/upstream/transparent-server.mjs';
import { modernNamedRequest, readAnswer } from './support/mcp-raw.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const LEGACY_SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/transparent-server.mjs', import.meta.url),
);
const CLASSIC_SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);
const MODERN_SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/modern-server.mjs', import.meta.url),
);

let stack: Stack;
let http: HttpUpstream;
/** The MCP path of the exposure of each upstream. */
const paths: Record<'stdio' | 'http' | 'modern' | 'sessions' | 'news', string> = {} as never;
let stdioServerId: string;
let as: (method: string, to: string, body?: unknown) => Promise<Record<string, unknown>>;

beforeAll(async () => {
  stack = await startStack({
    controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node', HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8' },
  });
  http = await httpUpstream(createTransparentServer);
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'asker' })).token as string;
  as = (method, to, body) => stack.admin(method, to, body, token);
  for (const [name, spec] of [
    // Two connections may relay at once: two agents asked at the same time each get one.
    ['stdio', { transport: 'stdio', command: 'node', args: [LEGACY_SCRIPT], limits: { max_instances: 2 } }],
    ['http', { transport: 'http', url: http.url }],
    ['modern', { transport: 'stdio', command: 'node', args: [MODERN_SCRIPT] }],
    // Subscriptions, a tool that says a resource changed, and one that reports progress.
    [
      'news',
      {
        transport: 'stdio',
        command: 'node',
        args: [CLASSIC_SCRIPT],
        env: {
          UPSTREAM_TEST_SUBSCRIBE: '1',
          UPSTREAM_TEST_EXTRA: 'touch',
          UPSTREAM_TEST_EXTRA_RESOURCES: 'test://news/one,test://news/two',
        },
      },
    ],
    // One connection per MCP session: what the server says on it is that session's.
    [
      'sessions',
      {
        transport: 'stdio',
        command: 'node',
        args: [LEGACY_SCRIPT],
        session_mode: 'per_session',
        limits: { max_instances: 4 },
      },
    ],
  ] as const) {
    const upstream = await as('POST', '/api/v2/upstream-servers', { name: `Asking ${name}`, ...spec });
    expect(upstream.status).toBe('ok');
    if (name === 'stdio') stdioServerId = String(upstream.id);
    const aei = await as('POST', '/api/v2/aeis', { name: `asks-${name}` });
    await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { upstream_server_id: upstream.id });
    paths[name] = `/api/v2/mcp/server/${String(aei.api_key)}`;
  }
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await http?.close();
});

/** A legacy agent that answers what it is asked, recording each question. */
async function answeringAgent(
  path: string,
  answers: { name?: string | string[]; colour?: string; roots?: string[] } = {},
  capabilities: Record<string, object> = { elicitation: {}, sampling: {}, roots: {} },
) {
  const asked: string[] = [];
  const names = [answers.name ?? 'Ada'].flat();
  const client = new Client({ name: 'legacy-agent', version: '1.0.0' }, { capabilities });
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      // A person takes a moment: the other agent's questions may come meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { action: 'accept', content: { name: names.shift() ?? 'nobody' } };
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      asked.push(`sampling: ${(request.params.messages[0]!.content as { text: string }).text}`);
      return { role: 'assistant', content: { type: 'text', text: answers.colour ?? 'teal' }, model: 'm' };
    });
  }
  if (capabilities.roots) {
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked.push('roots');
      return { roots: (answers.roots ?? ['file:///projects/a']).map((uri) => ({ uri })) };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`)));
  const call = async (name: string) => {
    const result = await client.callTool({ name, arguments: {} });
    return (result.content as { text: string }[])[0]!.text;
  };
  return { client, asked, call };
}

/** A modern tools/call; the JSON-RPC answer. */
async function modernCall(path: string, name: string, capabilities: Record<string, object>, retry = {}) {
  const answer = await modernNamedRequest(
    stack.gatewayUrl,
    path,
    { id: 7, method: 'tools/call', params: { name, arguments: {}, ...retry } },
    capabilities,
  );
  return answer as {
    result?: {
      resultType?: string;
      inputRequests?: Record<string, { method: string; params: Record<string, unknown> }>;
      requestState?: string;
      content?: { text: string }[];
    };
    error?: { code: number; message: string };
  };
}

describe.each(['stdio', 'http'] as const)('a 2025-era server over %s asks while a tool runs', (transport) => {
  it('a legacy agent’s handlers answer elicitation, sampling and roots, round after round', async () => {
    const agent = await answeringAgent(paths[transport], {
      name: ['Ada', 'Grace', 'Hopper'],
      roots: ['file:///projects/a', 'file:///projects/b'],
    });
    try {
      expect(await agent.call('ask_name')).toBe('Hello Ada');
      expect(await agent.call('ask_model')).toBe('the model said teal');
      expect(await agent.call('list_roots')).toBe('roots: file:///projects/a file:///projects/b');
      expect(await agent.call('ask_twice')).toBe('Grace Hopper');
      expect(agent.asked).toEqual([
        'What is your name?',
        'sampling: Name a colour',
        'roots',
        'First name?',
        'Last name?',
      ]);
    } finally {
      await agent.client.close();
    }
  });

  it('a modern agent is answered input_required, and its retry completes the call', async () => {
    const first = await modernCall(paths[transport], 'ask_name', { elicitation: {} });
    expect(first.result?.resultType).toBe('input_required');
    expect(first.result?.inputRequests).toEqual({
      'elicit-1': {
        method: 'elicitation/create',
        params: {
          message: 'What is your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
      },
    });
    const done = await modernCall(
      paths[transport],
      'ask_name',
      { elicitation: {} },
      {
        inputResponses: { 'elicit-1': { action: 'accept', content: { name: 'Grace' } } },
        requestState: first.result!.requestState,
      },
    );
    expect(done.result?.resultType).toBe('complete');
    expect(done.result?.content?.[0]?.text).toBe('Hello Grace');
  });

  it('an agent that cannot be asked makes the server see the standard refusal', async () => {
    const agent = await answeringAgent(paths[transport], {}, {});
    try {
      expect(await agent.call('ask_name')).toMatch(/^could not ask: MCP error -32601: Method not found/);
    } finally {
      await agent.client.close();
    }
    const modern = await modernCall(paths[transport], 'list_roots', {});
    expect(modern.result?.content?.[0]?.text).toMatch(/^could not ask: MCP error -32601/);
  });
});

describe('a 2026-07-28 server asks through input_required', () => {
  it('reaches a legacy agent’s handler and a modern agent alike', async () => {
    const agent = await answeringAgent(paths.modern, { name: 'Ada' });
    try {
      expect(await agent.call('greet_reader')).toBe('Hello Ada');
      expect(agent.asked).toEqual(['Who reads this?']);
    } finally {
      await agent.client.close();
    }
    const first = await modernCall(paths.modern, 'greet_reader', { elicitation: {} });
    expect(Object.keys(first.result!.inputRequests!)).toEqual(['who']);
    const done = await modernCall(
      paths.modern,
      'greet_reader',
      { elicitation: {} },
      {
        inputResponses: { who: { action: 'accept', content: { name: 'Lin' } } },
        requestState: first.result!.requestState,
      },
    );
    expect(done.result?.content?.[0]?.text).toBe('Hello Lin');
  });
});

describe('callers are kept apart', () => {
  it('two agents on one shared pool, asking at once, each answer only their own questions', async () => {
    const [one, two] = await Promise.all([
      answeringAgent(paths.stdio, { name: ['One-a', 'One-b', 'One-c'] }),
      answeringAgent(paths.stdio, { name: ['Two-a', 'Two-b', 'Two-c'] }),
    ]);
    try {
      // Both clients number their requests alike: the same JSON-RPC ids reach the gateway.
      expect(await Promise.all([one.call('ask_name'), two.call('ask_name')])).toEqual([
        'Hello One-a',
        'Hello Two-a',
      ]);
      expect(await Promise.all([one.call('ask_twice'), two.call('ask_twice')])).toEqual([
        'One-b One-c',
        'Two-b Two-c',
      ]);
      expect(one.asked).toHaveLength(3);
      expect(two.asked).toHaveLength(3);
    } finally {
      await Promise.all([one.client.close(), two.client.close()]);
    }
  });

  it('two agents on one shared connection, with the same ids, each get their own progress and updates', async () => {
    const agents = await Promise.all(
      ['one', 'two'].map(async (name) => {
        const client = new Client({ name: `agent-${name}`, version: '1.0.0' });
        const updated: string[] = [];
        client.setNotificationHandler(
          ResourceUpdatedNotificationSchema,
          (n) => void updated.push(n.params.uri),
        );
        const transport = new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${paths.news}`));
        await client.connect(transport);
        // What reaches this agent's connection, in order: the gateway's edge.
        const wire: string[] = [];
        const deliver = transport.onmessage!;
        transport.onmessage = (message) => {
          const seen = message as {
            id?: unknown;
            method?: string;
            params?: { progressToken?: unknown; message?: unknown };
            result?: { content?: unknown };
          };
          if (seen.method === 'notifications/progress') {
            wire.push(`${String(seen.params?.progressToken)}: ${String(seen.params?.message)}`);
          } else if (seen.result?.content !== undefined) {
            wire.push(`${String(seen.id)}: answer`);
          }
          deliver(message);
        };
        await client.subscribeResource({ uri: `test://news/${name}` });
        return { name, client, updated, wire };
      }),
    );
    try {
      await Promise.all(
        agents.map(({ client }) =>
          client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, {
            onprogress: () => undefined,
          }),
        ),
      );
      // Both agents numbered the call alike (same id, same progress token): each heard its own
      // three reports on its own stream, before its answer, and none of the other's.
      const [one, two] = agents.map((agent) => agent.wire);
      const token = one?.[0]?.split(':')[0] ?? '(no report)';
      expect(two?.[0]?.split(':')[0]).toBe(token);
      for (const wire of [one, two]) {
        expect(wire).toEqual([
          `${token}: step 1`,
          `${token}: step 2`,
          `${token}: step 3`,
          `${token}: answer`,
        ]);
      }
      await agents[0]!.client.callTool({ name: 'touch', arguments: { text: 'test://news/one' } });
      await agents[1]!.client.callTool({ name: 'touch', arguments: { text: 'test://news/two' } });
      for (let tries = 0; tries < 100; tries += 1) {
        if (agents.every((agent) => agent.updated.length > 0)) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // A moment more: an update that went astray would come now.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(agents[0]!.updated).toEqual(['test://news/one']);
      expect(agents[1]!.updated).toEqual(['test://news/two']);
    } finally {
      await Promise.all(agents.map(({ client }) => client.close()));
    }
  });

  it('refuses an altered state with -32602', async () => {
    const first = await modernCall(paths.stdio, 'ask_name', { elicitation: {} });
    const altered = await modernCall(
      paths.stdio,
      'ask_name',
      { elicitation: {} },
      {
        inputResponses: { 'elicit-1': { action: 'accept', content: { name: 'Eve' } } },
        requestState: `${first.result!.requestState!}x`,
      },
    );
    expect(altered.error?.code).toBe(-32602);
    // The call waiting upstream is still there for the true state (and is ended by it).
    const done = await modernCall(
      paths.stdio,
      'ask_name',
      { elicitation: {} },
      {
        inputResponses: { 'elicit-1': { action: 'accept', content: { name: 'Eve' } } },
        requestState: first.result!.requestState,
      },
    );
    expect(done.result?.content?.[0]?.text).toBe('Hello Eve');
  });

  it('a call that finds every relaying connection waiting runs as for an agent that cannot be asked', async () => {
    // A modern agent asked and never came back: its call holds the one connection (max_instances 1).
    const abandoned = await modernCall(paths.http, 'ask_name', { elicitation: {} });
    expect(abandoned.result?.resultType).toBe('input_required');
    const other = await modernCall(paths.http, 'ask_name', { elicitation: {} });
    expect(other.result?.content?.[0]?.text).toMatch(/^could not ask: MCP error -32601/);
    // Its own agent can still finish it.
    const done = await modernCall(
      paths.http,
      'ask_name',
      { elicitation: {} },
      {
        inputResponses: { 'elicit-1': { action: 'accept', content: { name: 'Back' } } },
        requestState: abandoned.result!.requestState,
      },
    );
    expect(done.result?.content?.[0]?.text).toBe('Hello Back');
  });
});

describe('cancellation', () => {
  it('an agent that gives up while it is asked cancels the upstream call at once', async () => {
    const client = new Client({ name: 'impatient', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    client.setRequestHandler(ElicitRequestSchema, () => {
      asked();
      return new Promise<never>(() => {});
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${paths.stdio}`)));
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'ask_name', arguments: {} }, undefined, {
        signal: controller.signal,
      });
      await wasAsked;
      controller.abort();
      await expect(call).rejects.toThrow();
      // The server hears it within moments (the wait for an answer would have lasted 10 minutes).
      let lines: string[] = [];
      for (let tries = 0; tries < 100 && !lines.includes('cancelled ask_name'); tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const logs = await as('GET', `/api/v2/upstream-servers/${stdioServerId}/logs`);
        lines = (logs.lines as { text: string }[]).map((line) => line.text);
      }
      expect(lines).toContain('cancelled ask_name');
    } finally {
      await client.close();
    }
  });
});

describe('log messages', () => {
  async function listener(level: 'info' | 'warning', path = paths.sessions) {
    const heard: { level: string; data: unknown; logger?: string }[] = [];
    const client = new Client({ name: `listener-${level}`, version: '1.0.0' });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      heard.push(notification.params);
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`)));
    await client.setLoggingLevel(level);
    return { client, heard };
  }

  it('reach the calling session at its level, named after the tool', async () => {
    const info = await listener('info');
    const warning = await listener('warning');
    try {
      await info.client.callTool({ name: 'log_steps', arguments: { tag: 'mine' } });
      expect(info.heard.filter((line) => String(line.data).startsWith('mine'))).toEqual([
        { level: 'info', logger: 'log_steps', data: 'mine: info' },
        { level: 'warning', logger: 'log_steps', data: 'mine: warning' },
      ]);
      await warning.client.callTool({ name: 'log_steps', arguments: { tag: 'theirs' } });
      expect(warning.heard.filter((line) => String(line.data).startsWith('theirs'))).toEqual([
        { level: 'warning', logger: 'log_steps', data: 'theirs: warning' },
      ]);
      // Calls at once on one shared connection: no caller hears the other's lines.
      await Promise.all([
        info.client.callTool({ name: 'log_steps', arguments: { tag: 'one' } }),
        warning.client.callTool({ name: 'log_steps', arguments: { tag: 'two' } }),
      ]);
      expect(info.heard.filter((line) => String(line.data).startsWith('one'))).toHaveLength(2);
      expect(warning.heard.filter((line) => String(line.data).startsWith('two'))).toHaveLength(1);
      expect(info.heard.some((line) => String(line.data).startsWith('two'))).toBe(false);
      expect(warning.heard.some((line) => String(line.data).startsWith('one'))).toBe(false);
    } finally {
      await Promise.all([info.client.close(), warning.client.close()]);
    }
  });

  it('of a modern server reach the one caller that asked for them, at its level', async () => {
    // The 2026-07-28 era sends them only for a request that asks: the one that asks is their owner.
    const info = await listener('info', paths.modern);
    const warning = await listener('warning', paths.modern);
    try {
      await info.client.callTool({ name: 'log_steps', arguments: { tag: 'modern' } });
      expect(info.heard.filter((line) => String(line.data).startsWith('modern'))).toEqual([
        { level: 'info', logger: 'log_steps', data: 'modern: info' },
        { level: 'warning', logger: 'log_steps', data: 'modern: warning' },
      ]);
      // At once on one connection: each hears its own lines or none, never the other's.
      await Promise.all([
        info.client.callTool({ name: 'log_steps', arguments: { tag: 'first' } }),
        warning.client.callTool({ name: 'log_steps', arguments: { tag: 'second' } }),
      ]);
      expect(info.heard.some((line) => String(line.data).startsWith('second'))).toBe(false);
      expect(warning.heard.some((line) => String(line.data).startsWith('first'))).toBe(false);
      expect(
        info.heard.filter((line) => String(line.data).startsWith('first')).length +
          warning.heard.filter((line) => String(line.data).startsWith('second')).length,
      ).toBeGreaterThan(0);
    } finally {
      await Promise.all([info.client.close(), warning.client.close()]);
    }
    // A modern agent hears them on its request's own stream, at the level its request names.
    const res = await rawPost(
      stack.gatewayUrl,
      paths.modern,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'log_steps',
          arguments: { tag: 'agent' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/logLevel': 'warning',
          },
        },
      }),
      {
        headers: {
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'log_steps',
          accept: 'application/json, text/event-stream',
        },
      },
    );
    const messages = readAnswer(res).messages;
    const upstreamLines = messages.filter(
      (m) => m.method === 'notifications/message' && String(m.params.data).startsWith('agent'),
    );
    expect(upstreamLines.map((m) => m.params)).toEqual([
      { level: 'warning', logger: 'log_steps', data: 'agent: warning' },
    ]);
    expect(messages.at(-1)).toMatchObject({ id: 7, result: { content: [{ text: 'logged' }] } });
  });

  it('are not relayed from a connection shared by callers', async () => {
    const shared = await listener('info', paths.stdio);
    try {
      await shared.client.callTool({ name: 'log_steps', arguments: { tag: 'shared' } });
      expect(shared.heard.filter((line) => String(line.data).startsWith('shared'))).toEqual([]);
    } finally {
      await shared.client.close();
    }
  });
});
