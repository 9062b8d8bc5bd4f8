// Upstream MCP servers end to end in the control plane: real stdio children and a real Streamable
// HTTP server (the MCP SDK), synced into mcp ADIs, bound, called through the internal executor,
// pooled by spec fingerprint (counted from the OS), re-synced when the upstream changes, deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import {
  httpUpstream,
  sseUpstream,
  stdioServerBody,
  upstreamChildren,
  type HttpUpstream,
  until,
} from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };
let http: HttpUpstream;

beforeAll(async () => {
  t = await startTestApp({ upstreamStdioCommands: ['node'], allowedNetworks: ['127.0.0.0/8'] });
  user = await t.newUser('upstream-owner');
  http = await httpUpstream();
});
afterAll(async () => {
  await t?.close();
  await http?.close();
});

const as = () => ({ token: user.token });

async function newAei(name: string) {
  const res = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string; api_key: string };
}

async function bindAll(aeiId: string, adiIds: string[]) {
  const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
    ...as(),
    body: adiIds.map((adi_id) => ({ adi_id })),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.items as { id: string; adi_id: string; tool_name: string }[];
}

function call(
  aeiId: string,
  binding: { id: string; adi_id: string },
  args: Record<string, unknown> = {},
  sessionId?: string,
) {
  return t.call('POST', `/internal/adi/${binding.adi_id}/execute`, {
    token: INTERNAL_TOKEN,
    body: {
      aei_id: aeiId,
      binding_id: binding.id,
      arguments: args,
      ...(sessionId !== undefined && { session_id: sessionId }),
    },
  });
}

describe('a stdio upstream server', () => {
  it('is synced into mcp tools on create, callable through a binding, its result passed through', async () => {
    const res = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: stdioServerBody('Test Tools'),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const server = res.body;
    expect(server).toMatchObject({ slug: 'test_tools', status: 'ok', transport: 'stdio', last_error: null });
    expect(server.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(server.tools.map((tool: { upstream_name: string }) => tool.upstream_name).sort()).toEqual(
      ['add', 'crash', 'echo', 'fail', 'hang', 'progress', 'set_tools', 'slow', 'whoami'].sort(),
    );
    const listed = await t.call(
      'GET',
      `/api/v2/adis?kind=mcp&upstream_server_id=${server.id}&limit=100`,
      as(),
    );
    expect(listed.status).toBe(200);
    expect(listed.body.items).toHaveLength(9);
    const add = listed.body.items.find((a: { name: string }) => a.name === 'add');
    expect(add).toMatchObject({
      kind: 'mcp',
      input_schema: { type: 'object', required: ['a', 'b'] },
      output_schema: { type: 'object', properties: { sum: { type: 'number' } } },
    });
    const echo = listed.body.items.find((a: { name: string }) => a.name === 'echo');
    expect(echo.annotations).toMatchObject({ title: 'Echo', readOnlyHint: true });

    const aei = await newAei('with upstream');
    const [bAdd, bEcho, bFail] = await bindAll(aei.id, [
      add.id,
      echo.id,
      listed.body.items.find((a: { name: string }) => a.name === 'fail').id,
    ]);
    const sum = await call(aei.id, bAdd!, { a: 2, b: 40 });
    expect(sum.status).toBe(200);
    expect(sum.body).toEqual({
      content: [{ type: 'text', text: '{"sum":42}' }],
      structuredContent: { sum: 42 },
    });
    const echoed = await call(aei.id, bEcho!, { text: 'plain words' });
    expect(echoed.body.content).toEqual([{ type: 'text', text: 'plain words' }]);
    // Arguments are checked against the tool's schema before the upstream sees them.
    const bad = await call(aei.id, bAdd!, { a: 'two' });
    expect(bad.body.isError).toBe(true);
    expect(JSON.parse(bad.body.content[0].text).error.code).toBe('VALIDATION_FAILED');
    const failed = await call(aei.id, bFail!);
    expect(failed.body).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'this tool always fails' }],
    });
    const audit = await t.call('GET', `/api/v2/audit?limit=10`, as());
    const statuses = audit.body.items.map(
      (e: { tool_name: string; status: string }) => `${e.tool_name}:${e.status}`,
    );
    expect(statuses).toEqual(expect.arrayContaining(['add:ok', 'echo:ok', 'fail:error', 'add:error']));
    const logs = await t.call('GET', `/api/v2/upstream-servers/${server.id}/logs`, as());
    expect(logs.body.lines.some((l: { text: string }) => /test upstream \d+ starting/.test(l.text))).toBe(
      true,
    );
  });

  it('shares one process between identical specs of different names; another env value makes two', async () => {
    const before = upstreamChildren().length;
    const a = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: stdioServerBody('Alpha', { UPSTREAM_TEST_MARKER: 'one' }),
    });
    const b = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: stdioServerBody('Beta', { UPSTREAM_TEST_MARKER: 'one' }),
    });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.fingerprint).toBe(a.body.fingerprint);
    expect(b.body.shared_with).toEqual([a.body.id]);
    const whoamiOf = async (serverId: string) => {
      const adis = await t.call(
        'GET',
        `/api/v2/adis?kind=mcp&upstream_server_id=${serverId}&limit=100`,
        as(),
      );
      return adis.body.items.find((x: { name: string }) => x.name === 'whoami').id as string;
    };
    const aei1 = await newAei('first');
    const aei2 = await newAei('second');
    const [b1] = await bindAll(aei1.id, [await whoamiOf(a.body.id)]);
    const [b2] = await bindAll(aei2.id, [await whoamiOf(b.body.id)]);
    // Three callers: two on the first exposure, one on the second.
    const answers = await Promise.all([call(aei1.id, b1!), call(aei1.id, b1!), call(aei2.id, b2!)]);
    const pids = new Set(answers.map((r) => JSON.parse(r.body.content[0].text).pid as number));
    expect(pids.size).toBe(1);
    expect(upstreamChildren().length).toBe(before + 1);

    const changed = await t.call('PATCH', `/api/v2/upstream-servers/${b.body.id}`, {
      ...as(),
      body: { env: { UPSTREAM_TEST_MARKER: 'two' } },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.fingerprint).not.toBe(a.body.fingerprint);
    const after = await Promise.all([call(aei1.id, b1!), call(aei2.id, b2!)]);
    const markers = after.map((r) => JSON.parse(r.body.content[0].text));
    expect(markers[0].marker).toBe('one');
    expect(markers[1].marker).toBe('two');
    expect(markers[0].pid).not.toBe(markers[1].pid);
    expect(upstreamChildren().length).toBe(before + 2);

    // Deleting both stops their pools: their processes are gone (killed and waited for).
    expect((await t.call('DELETE', `/api/v2/upstream-servers/${a.body.id}`, as())).status).toBe(204);
    expect((await t.call('DELETE', `/api/v2/upstream-servers/${b.body.id}`, as())).status).toBe(204);
    expect(
      await until(
        () => upstreamChildren().length,
        (n) => n === before,
      ),
    ).toBe(before);
    // Their bindings stay and answer a clear error.
    const gone = await call(aei1.id, b1!);
    expect(gone.body.isError).toBe(true);
    expect(JSON.parse(gone.body.content[0].text).error).toMatchObject({ code: 'NOT_FOUND' });
    expect(JSON.parse(gone.body.content[0].text).error.message).toMatch(/was deleted/);
  });

  it('re-syncs when the upstream announces a changed tool list, and bumps the AEIs that bind it', async () => {
    const res = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: stdioServerBody('Changing', { UPSTREAM_TEST_MARKER: 'changing' }),
    });
    const adis = await t.call(
      'GET',
      `/api/v2/adis?kind=mcp&upstream_server_id=${res.body.id}&limit=100`,
      as(),
    );
    const setTools = adis.body.items.find((x: { name: string }) => x.name === 'set_tools');
    const aei = await newAei('changing');
    const attach = await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, {
      ...as(),
      body: { upstream_server_id: res.body.id, prefix: 'chg' },
    });
    expect(attach.status, JSON.stringify(attach.body)).toBe(201);
    expect(attach.body.items.map((b: { tool_name: string }) => b.tool_name)).toContain('chg_set_tools');
    const other = await newAei('direct');
    const [direct] = await bindAll(other.id, [setTools.id]);
    const versionBefore = (await t.call('GET', `/api/v2/aeis/${aei.id}`, as())).body.config_version;
    const done = await call(other.id, direct!, { extra: ['fresh_tool'] });
    expect(done.body.isError).toBeUndefined();
    // No admin action: the notification leads to a sync, which binds the new tool under the prefix.
    const bindings = await until(
      async () =>
        (await t.call('GET', `/api/v2/aeis/${aei.id}/bindings?limit=100`, as())).body.items as {
          tool_name: string;
        }[],
      (items) => items.some((b) => b.tool_name === 'chg_fresh_tool'),
    );
    expect(bindings.map((b) => b.tool_name)).toContain('chg_fresh_tool');
    const versionAfter = (await t.call('GET', `/api/v2/aeis/${aei.id}`, as())).body.config_version;
    expect(versionAfter).toBeGreaterThan(versionBefore);
    await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
  });
});

describe('idle instances', () => {
  it('stop after the idle timeout: no process is left once nothing calls', async () => {
    const before = upstreamChildren().length;
    const res = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: {
        ...stdioServerBody('Idle', { UPSTREAM_TEST_MARKER: 'idle' }),
        limits: { idle_timeout_ms: 1000 },
      },
    });
    expect(res.body.status).toBe('ok');
    expect(upstreamChildren().length).toBe(before + 1);
    expect(
      await until(
        () => upstreamChildren().length,
        (n) => n === before,
        10_000,
      ),
    ).toBe(before);
    const body = await until(
      async () => (await t.call('GET', `/api/v2/upstream-servers/${res.body.id}`, as())).body,
      (b) => b.status === 'stopped',
    );
    expect(body).toMatchObject({ status: 'stopped', pool: { instances: 0 } });
    // The next call starts it again.
    const adis = await t.call(
      'GET',
      `/api/v2/adis?kind=mcp&upstream_server_id=${res.body.id}&limit=100`,
      as(),
    );
    const aei = await newAei('idle');
    const [echo] = await bindAll(aei.id, [
      adis.body.items.find((x: { name: string }) => x.name === 'echo').id,
    ]);
    expect((await call(aei.id, echo!, { text: 'awake' })).body.content[0].text).toBe('awake');
    await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
  });
});

describe('session_mode per_session', () => {
  it('gives each MCP session its own upstream instance, within max_instances', async () => {
    const before = upstreamChildren().length;
    const res = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: {
        ...stdioServerBody('Stateful', { UPSTREAM_TEST_MARKER: 'stateful' }),
        session_mode: 'per_session',
        limits: { max_instances: 2 },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.session_mode).toBe('per_session');
    const adis = await t.call(
      'GET',
      `/api/v2/adis?kind=mcp&upstream_server_id=${res.body.id}&limit=100`,
      as(),
    );
    const aei = await newAei('stateful');
    const [whoami] = await bindAll(aei.id, [
      adis.body.items.find((x: { name: string }) => x.name === 'whoami').id,
    ]);
    const pidOf = async (session: string) =>
      JSON.parse((await call(aei.id, whoami!, {}, session)).body.content[0].text).pid as number;
    const first = await pidOf('session-1');
    expect(await pidOf('session-1')).toBe(first);
    const second = await pidOf('session-2');
    expect(second).not.toBe(first);
    // Two sessions, two processes: the instance the first sync used was the idlest, and made room.
    expect(
      await until(
        () => upstreamChildren().length,
        (n) => n === before + 2,
      ),
    ).toBe(before + 2);
    expect(await pidOf('session-1')).toBe(first);
    await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
    expect(
      await until(
        () => upstreamChildren().length,
        (n) => n === before,
      ),
    ).toBe(before);
  });
});

describe('export', () => {
  it('leaves upstream tools and their bindings out, counted, so the document imports anywhere', async () => {
    const exported = await t.call('GET', '/api/v2/export', as());
    expect(exported.status).toBe(200);
    const doc = exported.body;
    expect(doc.adis.some((a: { kind: string }) => a.kind === 'mcp')).toBe(false);
    expect(doc.skipped.upstream_tools).toBeGreaterThan(0);
    const adiIds = new Set(doc.adis.map((a: { id: string }) => a.id));
    for (const binding of doc.bindings) expect(adiIds.has(binding.adi_id)).toBe(true);
    const other = await t.newUser('importer');
    const imported = await t.call('POST', '/api/v2/import', { token: other.token, body: doc });
    expect(imported.status, JSON.stringify(imported.body)).toBe(201);
  });
});

describe('a Streamable HTTP upstream server', () => {
  it('is synced and called like a stdio one', async () => {
    const res = await t.call('POST', '/api/v2/upstream-servers', {
      ...as(),
      body: { name: 'Remote', transport: 'http', url: http.url },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ status: 'ok', transport: 'http', url: http.url });
    const adis = await t.call(
      'GET',
      `/api/v2/adis?kind=mcp&upstream_server_id=${res.body.id}&limit=100`,
      as(),
    );
    const add = adis.body.items.find((x: { name: string }) => x.name === 'add');
    const aei = await newAei('remote');
    const [bAdd] = await bindAll(aei.id, [add.id]);
    const sum = await call(aei.id, bAdd!, { a: 1, b: 2 });
    expect(sum.body.structuredContent).toEqual({ sum: 3 });
    expect(http.sessions()).toBeGreaterThanOrEqual(1);
  });
});

describe('a server of the older HTTP+SSE transport', () => {
  it('is reached through the SSE fallback when it refuses the Streamable HTTP request', async () => {
    const sse = await sseUpstream();
    try {
      const res = await t.call('POST', '/api/v2/upstream-servers', {
        ...as(),
        body: { name: 'Old style', transport: 'http', url: sse.url },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.status, res.body.last_error).toBe('ok');
      expect(sse.streams()).toBeGreaterThanOrEqual(1);
      const adis = await t.call(
        'GET',
        `/api/v2/adis?kind=mcp&upstream_server_id=${res.body.id}&limit=100`,
        as(),
      );
      const aei = await newAei('old style');
      const [bAdd] = await bindAll(aei.id, [
        adis.body.items.find((x: { name: string }) => x.name === 'add').id,
      ]);
      expect((await call(aei.id, bAdd!, { a: 5, b: 6 })).body.structuredContent).toEqual({ sum: 11 });
      await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
    } finally {
      await sse.close();
    }
  });
});
