// Upstream servers that list or answer what MCP or the database does not allow (a NUL or half a
// character in a tool's name, description or schema key; a tool whose input schema is no object
// schema; `tools: "nope"`; a malformed resource, prompt or call result): the server is saved and
// synced without a 5xx, the good tools are kept and callable, what was skipped or cleaned is named
// in words in `warnings` or `last_error` (never a fragment of a parser's dump), a later sync still
// works, and one malformed answer does not count against the circuit. Real stdio children only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { stdioServerBody } from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp({ upstreamStdioCommands: ['node'] });
  user = await t.newUser('upstream-sync-errors');
});
afterAll(async () => {
  await t?.close();
});

const as = () => ({ token: user.token });

/** The test server's good tools (every one of them must survive a bad neighbour). */
const GOOD_TOOLS = ['add', 'crash', 'echo', 'fail', 'hang', 'progress', 'set_tools', 'slow', 'whoami'];

interface Server {
  id: string;
  status: string;
  last_error: string | null;
  warnings: string[];
  tools: { upstream_name: string; missing: boolean }[];
}

const toolNames = (server: Server) => server.tools.map((tool) => tool.upstream_name).sort();

async function createServer(name: string, env: Record<string, string>): Promise<Server> {
  const res = await t.call('POST', '/api/v2/upstream-servers', { ...as(), body: stdioServerBody(name, env) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Server;
}

async function sync(serverId: string) {
  return t.call('POST', `/api/v2/upstream-servers/${serverId}/sync`, as());
}

/** Calls a server's tools through a new AEI bound to all of them, by their upstream names. */
async function caller(serverId: string) {
  const aei = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: `aei ${serverId}` } });
  expect(aei.status).toBe(201);
  const res = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
    ...as(),
    body: { upstream_server_id: serverId, prefix: 'up' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return async (tool: string, args: Record<string, unknown> = {}) => {
    // Read each time: a later sync binds the tools it adds.
    const bindings = await t.call('GET', `/api/v2/aeis/${aei.body.id}/bindings`, as());
    const binding = (bindings.body.items as { id: string; adi_id: string; tool_name: string }[]).find(
      (b) => b.tool_name === `up_${tool}`,
    );
    expect(binding, `up_${tool} is bound`).toBeDefined();
    const r = await t.call('POST', `/internal/adi/${binding!.adi_id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: aei.body.id, binding_id: binding!.id, arguments: args },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as { isError?: boolean; content: { text: string }[] };
  };
}

const errorOf = (result: { content: { text: string }[] }) => JSON.parse(result.content[0]!.text).error;

/** Text as a person would read it: no parser dump (`[`, `{`, a JSON array of issues). */
const inWords = /^[A-Za-z"]/;

describe('text a database cannot store', () => {
  it.each([
    {
      bad: 'nul-name',
      kept: [] as string[],
      warning: /^tool "nul\\u0000name" was skipped: its name: the text contains a NUL character \(U\+0000\)/,
    },
    {
      bad: 'surrogate-name',
      kept: [],
      warning:
        /^tool "lone\\ud800name" was skipped: its name: the text contains an unpaired UTF-16 surrogate/,
    },
    {
      bad: 'nul-schema-key',
      kept: [],
      warning:
        /^tool "nul_key" was skipped: its input_schema\/properties\/a\\u0000b: the key contains a NUL character/,
    },
    {
      bad: 'nul-description',
      kept: ['nul_description'],
      warning:
        /^tool "nul_description": its description: the text contains a NUL character .*; it is stored with U\+FFFD in its place$/,
    },
    {
      bad: 'nul-annotation',
      kept: ['nul_annotation'],
      warning:
        /^tool "nul_annotation": its annotations\/title: the text contains a NUL character .*; they were left out$/,
    },
  ])(
    '$bad: no 5xx, the good tools kept and callable, a warning naming it',
    async ({ bad, kept, warning }) => {
      const server = await createServer(`bad ${bad}`, { UPSTREAM_TEST_BAD: bad });
      expect(server.status).toBe('ok');
      expect(server.last_error).toBeNull();
      expect(toolNames(server)).toEqual([...GOOD_TOOLS, ...kept].sort());
      expect(server.warnings).toEqual([expect.stringMatching(warning)]);
      const call = await caller(server.id);
      expect((await call('echo', { text: 'still here' })).content[0]!.text).toBe('still here');
      for (const tool of kept) expect((await call(tool)).content[0]!.text).toBe(`${tool} answered`);
      const adis = await t.call(
        'GET',
        `/api/v2/adis?kind=mcp&upstream_server_id=${server.id}&limit=100`,
        as(),
      );
      const config = (tool: string) =>
        adis.body.items.find((a: { name: string }) => a.name === tool)?.config as Record<string, unknown>;
      if (bad === 'nul-description') expect(config('nul_description').description).toBe('before\uFFFDafter');
      if (bad === 'nul-annotation') expect(config('nul_annotation').annotations).toBeUndefined();
      // A sync again (and again) changes nothing and fails nothing.
      for (let i = 0; i < 2; i++) {
        const again = await sync(server.id);
        expect(again.status, JSON.stringify(again.body)).toBe(200);
        expect(again.body).toMatchObject({ added: [], updated: [], missing: [] });
        expect(again.body.warnings).toEqual([expect.stringMatching(warning)]);
        expect(again.body.server).toMatchObject({ status: 'ok', last_error: null });
      }
    },
  );

  it('an error message of the upstream holding a NUL: saved as failing, the message stored with U+FFFD', async () => {
    const server = await createServer('error nul', { UPSTREAM_TEST_BAD: 'tools-error-nul' });
    expect(server.status).toBe('failing');
    expect(server.last_error).toMatch(
      /^upstream server "error nul" refused tools\/list: .*broken\uFFFDlist$/,
    );
    const again = await sync(server.id);
    expect(again.status).toBe(502);
    expect(again.body.error.message).toBe(server.last_error);
  });

  it('a later sync still takes what the server adds', async () => {
    const server = await createServer('bad later', {
      UPSTREAM_TEST_BAD: 'nul-name,surrogate-name,nul-schema-key',
    });
    expect(server.warnings).toHaveLength(3);
    const call = await caller(server.id);
    await call('set_tools', { extra: ['later_tool'] });
    const again = await sync(server.id);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.added).toEqual(['later_tool']);
    expect(toolNames(again.body.server)).toEqual([...GOOD_TOOLS, 'later_tool'].sort());
    expect((await call('later_tool', { text: 'hi' })).content[0]!.text).toBe('later_tool: hi');
  });
});

describe('what MCP does not allow', () => {
  it('a tool whose input schema is no object schema is skipped with a warning; the others are kept', async () => {
    const server = await createServer('string schema', { UPSTREAM_TEST_BAD: 'string-schema' });
    expect(server).toMatchObject({ status: 'ok', last_error: null });
    expect(toolNames(server)).toEqual(GOOD_TOOLS);
    expect(server.warnings).toEqual([
      expect.stringMatching(
        /^tool "stringy" was skipped: it is not a tool MCP allows \(inputSchema\/type: .*"object"/,
      ),
    ]);
    const call = await caller(server.id);
    expect((await call('add', { a: 2, b: 3 })).content[0]!.text).toBe('{"sum":5}');
    const again = await sync(server.id);
    expect(again.status).toBe(200);
    expect(again.body.server.status).toBe('ok');
  });

  it('`tools: "nope"`: saved as failing with a last_error in words; a sync is 502 saying the same; a fixed spec syncs', async () => {
    const server = await createServer('tools nope', { UPSTREAM_TEST_BAD: 'tools-nope' });
    expect(server.status).toBe('failing');
    expect(server.last_error).toMatch(inWords);
    expect(server.last_error).toMatch(/tools\/list .*: tools: a string where a list was expected/);
    expect(server.tools).toEqual([]);
    // A malformed list is not a dead server: however many, its circuit stays closed.
    for (let i = 0; i < 3; i++) {
      const again = await sync(server.id);
      expect(again.status).toBe(502);
      expect(again.body.error.code).toBe('UPSTREAM_FAILED');
      expect(again.body.error.message).toMatch(/tools\/list .*: tools: a string where a list was expected/);
      expect(again.body.error.details.circuit).toBeUndefined();
    }
    const shown = await t.call('GET', `/api/v2/upstream-servers/${server.id}`, as());
    expect(shown.body).toMatchObject({ status: 'failing', last_error: server.last_error });
    const fixed = await t.call('PATCH', `/api/v2/upstream-servers/${server.id}`, {
      ...as(),
      body: { env: { UPSTREAM_TEST_BAD: '' } },
    });
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    expect(fixed.body).toMatchObject({ status: 'ok', last_error: null });
    expect(toolNames(fixed.body)).toEqual(GOOD_TOOLS);
  });

  it('resources: "nope" and prompts: "nope" keep the tools and say why in words', async () => {
    const server = await createServer('lists nope', { UPSTREAM_TEST_BAD: 'resources-nope,prompts-nope' });
    expect(server).toMatchObject({ status: 'ok', last_error: null });
    expect(toolNames(server)).toEqual(GOOD_TOOLS);
    expect(server.warnings).toEqual([
      expect.stringMatching(
        /^resources\/list failed; the resources listed before are kept: .*resources: a string where a list was expected/,
      ),
      expect.stringMatching(
        /^prompts\/list failed; the prompts listed before are kept: .*prompts: a string where a list was expected/,
      ),
    ]);
  });

  it('a resource or prompt MCP does not allow is skipped with a warning; the others are kept', async () => {
    const server = await createServer('bad entries', { UPSTREAM_TEST_BAD: 'bad-resource,bad-prompt' });
    expect(server).toMatchObject({ status: 'ok', last_error: null });
    expect(server.warnings).toEqual([
      expect.stringMatching(
        /^the resource at position 3 of the list was skipped: it is not a resource MCP allows \(uri: /,
      ),
      expect.stringMatching(/^prompt "broken" was skipped: it is not a prompt MCP allows \(arguments: /),
    ]);
    const row = await t.database.prisma.upstreamServer.findUniqueOrThrow({ where: { id: server.id } });
    expect((row.resources as { uri: string }[]).map((r) => r.uri)).toEqual([
      'test://greeting',
      'test://data.json',
    ]);
    expect((row.prompts as { name: string }[]).map((p) => p.name)).toEqual(['greet', 'summarise']);
  });

  it('a malformed call result is a tool error in words, and does not open the circuit', async () => {
    const server = await createServer('malformed result', { UPSTREAM_TEST_BAD: 'malformed-result' });
    expect(server.status).toBe('ok');
    const call = await caller(server.id);
    for (let i = 0; i < 4; i++) {
      const result = await call('malformed');
      expect(result.isError).toBe(true);
      const error = errorOf(result);
      expect(error.code).toBe('UPSTREAM_FAILED');
      expect(error.message).toMatch(
        /^upstream server "malformed result" answered tools\/call of malformed with a result MCP does not allow: content: /,
      );
      expect(error.details.circuit).toBeUndefined();
    }
    // The server is fine: its other tools answer, and it is not reported failing.
    expect((await call('echo', { text: 'alive' })).content[0]!.text).toBe('alive');
    const shown = await t.call('GET', `/api/v2/upstream-servers/${server.id}`, as());
    expect(shown.body.status).toBe('ok');
  });
});
