// Pins the transparent gateway: an exposure that attaches one upstream server without a prefix reads,
// to a client, as that server. A real SDK server (transparent-server.mjs: tools declaring draft-04,
// draft-07, 2019-09 and an unknown dialect, an MCP App tool with its `ui://` resource, a resource
// template, a prompt, completions) is attached over stdio and over HTTP, and real SDK clients of
// both eras compare what the gateway serves with what the server serves to a client of its own:
// - tools/list, resources/list, resources/templates/list and prompts/list are the server's, field
//   for field (`$schema`, vendor keywords, `_meta`, icons, titles, annotations, output schemas);
// - tools of each dialect are validated in their dialect and called; a schema Bindery cannot use is
//   a warning at sync and a tool error naming the reason, never INTERNAL;
// - a binding narrows a draft-07 schema (its `$ref`s read through) and the narrowing holds;
// - the MCP App's `ui://` resource reads back with its MIME type and `_meta`, a template read and
//   completions of the prompt's and the template's arguments come from the server;
// - a subscription to a 2026-07-28 server's resource (held upstream as a listen stream) brings its
//   updates to a legacy session and to a modern listen stream.
import { fileURLToPath } from 'node:url';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  httpUpstream,
  modernHttpUpstream,
  type HttpUpstream,
} from '../../control-plane/test/support/upstream-servers.ts';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  APP_HTML,
  APP_URI,
  createTransparentServer,
} from '../../control-plane/test/support/upstream/transparent-server.mjs';
import { startStack, type Stack } from './support/stack.ts';

const SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/transparent-server.mjs', import.meta.url),
);

let stack: Stack;
let http: HttpUpstream;
let modern: Awaited<ReturnType<typeof modernHttpUpstream>>;
let modernPath: string;
let direct: Client;
let token: string;
let as: (method: string, to: string, body?: unknown) => Promise<Record<string, unknown>>;
/** The exposure of each transport: its MCP URL, id and sync report. */
const exposures: Record<'stdio' | 'http', { url: URL; aeiId: string; warnings: string[] }> = {} as never;

beforeAll(async () => {
  stack = await startStack({
    controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node', HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.0/8' },
  });
  http = await httpUpstream(createTransparentServer);
  token = (await stack.admin('POST', '/api/v2/users', { name: 'transparent' })).token as string;
  as = (method, to, body) => stack.admin(method, to, body, token);
  for (const [transport, spec] of [
    ['stdio', { transport: 'stdio', command: 'node', args: [SCRIPT] }],
    ['http', { transport: 'http', url: http.url }],
  ] as const) {
    const upstream = await as('POST', '/api/v2/upstream-servers', { name: `Fixture ${transport}`, ...spec });
    expect(upstream.status).toBe('ok');
    const aei = await as('POST', '/api/v2/aeis', { name: `transparent-${transport}` });
    // No prefix given: the server is the exposure's only source, so it keeps its names.
    const attached = await as('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, {
      upstream_server_id: upstream.id,
    });
    expect((attached.attachment as { prefix: string }).prefix).toBe('');
    exposures[transport] = {
      url: new URL(`/api/v2/mcp/server/${String(aei.api_key)}`, stack.gatewayUrl),
      aeiId: String(aei.id),
      warnings: upstream.warnings as string[],
    };
  }
  modern = await modernHttpUpstream();
  const news = await as('POST', '/api/v2/upstream-servers', {
    name: 'Modern news',
    transport: 'http',
    url: modern.url,
  });
  expect(news.status).toBe('ok');
  const newsroom = await as('POST', '/api/v2/aeis', { name: 'modern-news' });
  await as('POST', `/api/v2/aeis/${String(newsroom.id)}/bindings`, { upstream_server_id: news.id });
  modernPath = `/api/v2/mcp/server/${String(newsroom.api_key)}`;
  direct = new Client({ name: 'direct', version: '1.0.0' });
  await direct.connect(new StdioClientTransport({ command: 'node', args: [SCRIPT] }));
}, 120_000);

afterAll(async () => {
  await direct?.close();
  await stack?.close();
  await http?.close();
  await modern?.close();
});

const until = async (what: string, done: () => boolean) => {
  for (let tries = 0; tries < 100; tries += 1) {
    if (done()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not happen within 10 s`);
};

async function legacyClient(url: URL): Promise<Client> {
  const client = new Client({ name: 'legacy-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

async function modernClient(url: URL): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'modern-agent', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(new ModernTransport(url));
  expect(client.getProtocolEra()).toBe('modern');
  return client;
}

const byName = <T extends { name: string }>(items: T[]) =>
  [...items].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

describe.each(['stdio', 'http'] as const)('a server attached over %s', (transport) => {
  it('lists what the server lists, field for field, to a legacy client', async () => {
    const client = await legacyClient(exposures[transport].url);
    try {
      expect(byName((await client.listTools()).tools)).toEqual(byName((await direct.listTools()).tools));
      expect((await client.listResources()).resources).toEqual((await direct.listResources()).resources);
      expect((await client.listResourceTemplates()).resourceTemplates).toEqual(
        (await direct.listResourceTemplates()).resourceTemplates,
      );
      expect((await client.listPrompts()).prompts).toEqual((await direct.listPrompts()).prompts);
    } finally {
      await client.close();
    }
  });

  it('lists the same to a modern client', async () => {
    const client = await modernClient(exposures[transport].url);
    try {
      const tools = byName((await client.listTools()).tools);
      const expected = byName((await direct.listTools()).tools);
      expect(tools.map((t) => t.name)).toEqual(expected.map((t) => t.name));
      for (const [i, tool] of tools.entries()) {
        const want = expected[i]!;
        expect(tool.inputSchema, tool.name).toEqual(want.inputSchema);
        expect(tool.outputSchema, tool.name).toEqual(want.outputSchema);
        expect(tool._meta, tool.name).toEqual(want._meta);
        expect(tool.icons, tool.name).toEqual(want.icons);
        expect(tool.title, tool.name).toEqual(want.title);
        expect(tool.annotations, tool.name).toEqual(want.annotations);
      }
      const resources = (await client.listResources()).resources;
      expect(resources.map((r) => [r.uri, r.mimeType, r._meta])).toEqual(
        (await direct.listResources()).resources.map((r) => [r.uri, r.mimeType, r._meta]),
      );
    } finally {
      await client.close();
    }
  });

  it('says at sync which schema it cannot use, and calls to that tool name the reason', async () => {
    expect(exposures[transport].warnings).toContainEqual(
      expect.stringContaining(
        'tool "odd": its input schema cannot be used, so calls to it fail until the server changes it',
      ),
    );
    const client = await legacyClient(exposures[transport].url);
    try {
      const odd = await client.callTool({ name: 'odd', arguments: {} });
      expect(odd.isError).toBe(true);
      const { error } = JSON.parse((odd.content as { text: string }[])[0]!.text) as {
        error: { code: string; message: string };
      };
      expect(error.code).toBe('PRECONDITION_FAILED');
      expect(error.message).toBe(
        'the input schema of odd cannot be used, so the tool cannot be called until it changes: its $schema "https://example.test/my-own-dialect" is not a JSON Schema dialect Bindery knows (draft-04, draft-06, draft-07, 2019-09 or 2020-12)',
      );
    } finally {
      await client.close();
    }
  });

  it('validates each tool in its own dialect and calls it', async () => {
    const client = await legacyClient(exposures[transport].url);
    const text = (result: Awaited<ReturnType<Client['callTool']>>) =>
      (result.content as { text: string }[])[0]!.text;
    try {
      // draft-07: a $ref into `definitions`, a vendor keyword and an unknown format.
      expect(text(await client.callTool({ name: 'lookup', arguments: { id: 'abc', limit: 5 } }))).toBe(
        'found abc (limit 5)',
      );
      const bad = await client.callTool({ name: 'lookup', arguments: { id: 'ABC' } });
      expect(bad.isError).toBe(true);
      expect(text(bad)).toContain('invalid arguments for lookup: argument /id must match pattern');
      const extra = await client.callTool({ name: 'lookup', arguments: { id: 'abc', more: 1 } });
      expect(text(extra)).toContain('must NOT have additional properties (\\"more\\")');
      // 2019-09: unevaluatedProperties, and an output schema of the same dialect.
      const sum = await client.callTool({ name: 'sum', arguments: { a: 2, b: 3 } });
      expect(sum.structuredContent).toEqual({ sum: 5 });
      expect((await client.callTool({ name: 'sum', arguments: { a: 2, b: 3, c: 4 } })).isError).toBe(true);
      // draft-04: maximum made exclusive by a boolean.
      expect(text(await client.callTool({ name: 'below', arguments: { n: 9.5 } }))).toBe('9.5 is below ten');
      const ten = await client.callTool({ name: 'below', arguments: { n: 10 } });
      expect(text(ten)).toContain('argument /n must be < 10');
    } finally {
      await client.close();
    }
  });

  it('serves the MCP App’s ui:// resource, a template read and the server’s completions', async () => {
    const client = await legacyClient(exposures[transport].url);
    try {
      const [app] = (await client.listTools()).tools.filter((t) => t.name === 'show_dashboard');
      const uri = (app!._meta as { ui: { resourceUri: string } }).ui.resourceUri;
      expect(uri).toBe(APP_URI);
      const read = await client.readResource({ uri });
      expect(read).toEqual(await direct.readResource({ uri }));
      expect(read.contents[0]).toMatchObject({ mimeType: 'text/html;profile=mcp-app', text: APP_HTML });
      expect(read.contents[0]!._meta).toEqual({ ui: { prefersBorder: true, csp: { connectDomains: [] } } });
      expect((await client.callTool({ name: 'show_dashboard', arguments: {} })).structuredContent).toEqual({
        shown: true,
      });

      const forecast = await client.readResource({ uri: 'weather://forecast/Lima' });
      expect(forecast.contents[0]).toMatchObject({ text: 'Sunny in Lima' });

      const prompt = await client.complete({
        ref: { type: 'ref/prompt', name: 'plan' },
        argument: { name: 'city', value: 'p' },
      });
      expect(prompt.completion.values).toEqual(['Paris', 'Pau', 'Perth']);
      const template = await client.complete({
        ref: { type: 'ref/resource', uri: 'weather://forecast/{city}' },
        argument: { name: 'city', value: 'ly' },
      });
      expect(template.completion).toEqual(
        (
          await direct.complete({
            ref: { type: 'ref/resource', uri: 'weather://forecast/{city}' },
            argument: { name: 'city', value: 'ly' },
          })
        ).completion,
      );
      expect(template.completion.values).toEqual(['Lyon']);
    } finally {
      await client.close();
    }
  });
});

describe('narrowing an upstream tool', () => {
  it('narrows a 2019-09 schema, and holds calls to it', async () => {
    const { aeiId, url } = exposures.http;
    const bindings = (await as('GET', `/api/v2/aeis/${aeiId}/bindings`)).items as {
      id: string;
      tool_name: string;
    }[];
    const sum = bindings.find((b) => b.tool_name === 'sum')!;
    await as('PATCH', `/api/v2/aeis/${aeiId}/bindings/${sum.id}`, {
      input_schema: {
        type: 'object',
        properties: { a: { type: 'number', maximum: 10 }, b: { type: 'number', maximum: 10 } },
        required: ['a', 'b'],
      },
    });
    const client = await legacyClient(url);
    try {
      expect((await client.callTool({ name: 'sum', arguments: { a: 4, b: 6 } })).structuredContent).toEqual({
        sum: 10,
      });
      const over = await client.callTool({ name: 'sum', arguments: { a: 11, b: 1 } });
      expect((over.content as { text: string }[])[0]!.text).toContain('argument /a must be <= 10');
    } finally {
      await client.close();
    }
  });

  it('narrows a draft-07 schema through its $ref, and holds calls to it', async () => {
    const { aeiId, url } = exposures.stdio;
    const bindings = (await as('GET', `/api/v2/aeis/${aeiId}/bindings`)).items as {
      id: string;
      tool_name: string;
    }[];
    const lookup = bindings.find((b) => b.tool_name === 'lookup')!;
    const wider = await stack.adminRaw(
      'PATCH',
      `/api/v2/aeis/${aeiId}/bindings/${lookup.id}`,
      { input_schema: { type: 'object', properties: { id: { enum: ['abc', 'ABC'] } }, required: ['id'] } },
      token,
    );
    expect(wider.status).toBe(400);
    expect((wider.body as { error: { message: string } }).error.message).toBe(
      'input_schema: input_schema.properties.id.enum[1] "ABC" is not accepted by the canonical schema: value must match pattern "^[a-z]+$"',
    );
    const narrowed = await as('PATCH', `/api/v2/aeis/${aeiId}/bindings/${lookup.id}`, {
      input_schema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: {
          id: { enum: ['abc', 'def'] },
          limit: { type: 'integer', minimum: 1, maximum: 10, format: 'page-size' },
        },
        required: ['id'],
      },
    });
    expect(narrowed.input_schema).toMatchObject({ properties: { id: { enum: ['abc', 'def'] } } });
    const client = await legacyClient(url);
    try {
      const [listed] = (await client.listTools()).tools.filter((t) => t.name === 'lookup');
      expect(listed!.inputSchema.properties).toEqual({
        id: { enum: ['abc', 'def'] },
        limit: { type: 'integer', minimum: 1, maximum: 10, format: 'page-size' },
      });
      const ok = await client.callTool({ name: 'lookup', arguments: { id: 'def', limit: 10 } });
      expect((ok.content as { text: string }[])[0]!.text).toBe('found def (limit 10)');
      const over = await client.callTool({ name: 'lookup', arguments: { id: 'def', limit: 11 } });
      expect(over.isError).toBe(true);
      expect((over.content as { text: string }[])[0]!.text).toContain('argument /limit must be <= 10');
    } finally {
      await client.close();
    }
  });
});

describe('subscriptions to a 2026-07-28 server', () => {
  it('bring its resource updates to a legacy session', async () => {
    const client = await legacyClient(new URL(modernPath, stack.gatewayUrl));
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    try {
      expect((await client.readResource({ uri: 'modern://news' })).contents[0]).toMatchObject({
        text: 'the news',
      });
      await client.subscribeResource({ uri: 'modern://news' });
      await client.callTool({ name: 'touch_news', arguments: {} });
      await until('resources/updated for modern://news', () => updated.includes('modern://news'));
      await client.unsubscribeResource({ uri: 'modern://news' });
    } finally {
      await client.close();
    }
  });

  it('bring its resource updates to a modern listen stream', async () => {
    const client = await modernClient(new URL(modernPath, stack.gatewayUrl));
    const updated: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    try {
      const listening = await client.listen({ resourceSubscriptions: ['modern://news'] });
      expect(listening.honoredFilter.resourceSubscriptions).toEqual(['modern://news']);
      await client.callTool({ name: 'touch_news', arguments: {} });
      await until('resources/updated for modern://news', () => updated.includes('modern://news'));
    } finally {
      await client.close();
    }
  });
});
