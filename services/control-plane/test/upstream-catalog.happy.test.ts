// Resources and prompts of upstream MCP servers end to end in the control plane, with real stdio
// children: sync keeps a snapshot of each server's lists (resource templates too, read through by
// a URI that matches one), config v2 carries the attached servers'
// entries (prompts under the attachment's prefix, or their own names without one), clashes go to the server attached first or to
// the AEI's own (shown in the admin API, logged once per config version), the internal route reads
// a listed resource and gets a listed prompt (secrets redacted, audited) and refuses anything else,
// and a list change announced by the upstream re-syncs and bumps the AEI's config_version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { stdioServerBody, until } from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };
const logLines: string[] = [];
let alpha: { id: string };
let beta: { id: string };
let plain: { id: string };
let aei: { id: string; api_key: string };

const SECRET = 'catalog-secret-value-4711';

const as = () => ({ token: user.token });

async function newServer(name: string, env: Record<string, string>) {
  const res = await t.call('POST', '/api/v2/upstream-servers', { ...as(), body: stdioServerBody(name, env) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.status).toBe('ok');
  return res.body as { id: string; warnings: string[] };
}

async function newAei(name: string) {
  const res = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string; api_key: string };
}

async function attach(aeiId: string, serverId: string, prefix: string) {
  const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
    ...as(),
    body: { upstream_server_id: serverId, prefix },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.items as { id: string; adi_id: string; tool_name: string }[];
}

async function configOf(apiKey: string) {
  const res = await t.call('GET', `/internal/keys/${apiKey}/config`, { token: INTERNAL_TOKEN });
  expect(res.status).toBe(200);
  return res.body.config;
}

function upstreamRequest(aeiId: string, body: Record<string, unknown>) {
  return t.call('POST', `/internal/aei/${aeiId}/upstream-request`, { token: INTERNAL_TOKEN, body });
}

beforeAll(async () => {
  t = await startTestApp({
    upstreamStdioCommands: ['node'],
    logStream: { write: (line) => void logLines.push(line) },
  });
  user = await t.newUser('catalog-owner');
  const secret = await t.call('POST', '/api/v2/secrets', {
    ...as(),
    body: { name: 'CATALOG_MARKER', value: SECRET },
  });
  expect(secret.status, JSON.stringify(secret.body)).toBe(201);
  // Alpha names a secret in its greeting; Beta lists the same resources and prompts, plus a
  // resource of its own and one posing as the AEI's own; Plain serves tools only.
  alpha = await newServer('Alpha Catalog', { UPSTREAM_TEST_MARKER: '{{secret.CATALOG_MARKER}}' });
  beta = await newServer('Beta Catalog', {
    UPSTREAM_TEST_MARKER: 'beta',
    UPSTREAM_TEST_EXTRA_RESOURCES: 'test://beta-only,bindery://sneaky',
  });
  plain = await newServer('Plain Tools', { UPSTREAM_TEST_MARKER: 'plain', UPSTREAM_TEST_CATALOG: 'none' });
  aei = await newAei('catalog');
});
afterAll(async () => {
  await t?.close();
});

const ALPHA_RESOURCES = [
  {
    uri: 'test://greeting',
    name: 'greeting',
    title: 'Greeting',
    description: 'A friendly text.',
    mime_type: 'text/plain',
  },
  {
    uri: 'test://data.json',
    name: 'data',
    description: 'Some JSON.',
    mime_type: 'application/json',
    size: 17,
  },
];
const ALPHA_PROMPTS = [
  {
    name: 'greet',
    title: 'Greet someone',
    description: 'Asks for a greeting.',
    arguments: [{ name: 'name', description: 'who to greet', required: true }],
  },
  { name: 'summarise', description: 'Asks for a summary.', arguments: [{ name: 'topic' }] },
];

describe('sync', () => {
  it('keeps a snapshot of the resources and prompts each server lists (none without the capabilities)', async () => {
    const rows = await t.database.prisma.upstreamServer.findMany({
      where: { id: { in: [alpha.id, beta.id, plain.id] } },
      select: { id: true, resources: true, prompts: true, warnings: true },
    });
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(alpha.id)).toMatchObject({
      resources: ALPHA_RESOURCES,
      prompts: ALPHA_PROMPTS,
      warnings: [],
    });
    expect(byId.get(beta.id)?.resources).toEqual([
      ...ALPHA_RESOURCES,
      { uri: 'test://beta-only', name: 'test://beta-only', mime_type: 'text/plain' },
      { uri: 'bindery://sneaky', name: 'bindery://sneaky', mime_type: 'text/plain' },
    ]);
    expect(byId.get(plain.id)).toMatchObject({ resources: [], prompts: [], warnings: [] });
  });
});

describe('config v2 and the admin API', () => {
  it('carry the attached servers’ resources and prefixed prompts; the first attached and the AEI’s own win', async () => {
    await attach(aei.id, alpha.id, 'al');
    await attach(aei.id, beta.id, 'be');
    await attach(aei.id, plain.id, 'pl');
    const own = await t.call('POST', `/api/v2/aeis/${aei.id}/prompts`, {
      ...as(),
      body: { name: 'be_greet', messages: [{ role: 'user', text: 'my own greeting' }] },
    });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    const config = await configOf(aei.api_key);
    expect(config.upstream_resources).toEqual([
      ...ALPHA_RESOURCES.map((r) => ({ upstream_server_id: alpha.id, ...r })),
      {
        upstream_server_id: beta.id,
        uri: 'test://beta-only',
        name: 'test://beta-only',
        mime_type: 'text/plain',
      },
    ]);
    expect(config.upstream_prompts).toEqual([
      { upstream_server_id: alpha.id, ...ALPHA_PROMPTS[0], name: 'al_greet', upstream_name: 'greet' },
      {
        upstream_server_id: alpha.id,
        name: 'al_summarise',
        upstream_name: 'summarise',
        description: 'Asks for a summary.',
        arguments: [{ name: 'topic' }],
      },
      {
        upstream_server_id: beta.id,
        name: 'be_summarise',
        upstream_name: 'summarise',
        description: 'Asks for a summary.',
        arguments: [{ name: 'topic' }],
      },
    ]);
    expect(config.prompts.map((p: { name: string }) => p.name)).toEqual(['be_greet']);

    const catalog = await t.call('GET', `/api/v2/aeis/${aei.id}/upstream-catalog`, as());
    expect(catalog.status).toBe(200);
    expect(catalog.body.resources).toEqual(config.upstream_resources);
    expect(catalog.body.prompts).toEqual(config.upstream_prompts);
    expect(catalog.body.clashes).toEqual([
      { kind: 'prompt', name: 'be_greet', used: 'aei_prompt', hidden: [beta.id] },
      { kind: 'resource', name: 'bindery://sneaky', used: 'bindery', hidden: [beta.id] },
      { kind: 'resource', name: 'test://data.json', used: alpha.id, hidden: [beta.id] },
      { kind: 'resource', name: 'test://greeting', used: alpha.id, hidden: [beta.id] },
    ]);
    // Another owner does not see it.
    const stranger = await t.newUser('catalog-stranger');
    const foreign = await t.call('GET', `/api/v2/aeis/${aei.id}/upstream-catalog`, { token: stranger.token });
    expect(foreign.status).toBe(404);

    // Logged once for this config version, however often the config is read.
    await configOf(aei.api_key);
    const logged = logLines.filter(
      (l) => l.includes('upstream resources or prompts hidden') && l.includes(aei.id),
    );
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({
      aei_id: aei.id,
      config_version: config.aei.config_version,
    });
  });
});

describe('an attachment without a prefix', () => {
  it('keeps the upstream’s tool and prompt names, and refuses a second server whose names clash', async () => {
    const bare = await newAei('catalog-bare');
    const items = await attach(bare.id, alpha.id, '');
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) expect(item.tool_name).not.toMatch(/^_/);
    const config = await configOf(bare.api_key);
    expect(config.upstream_prompts.map((p: { name: string }) => p.name)).toEqual(['greet', 'summarise']);
    expect(config.upstream_prompts.map((p: { upstream_name: string }) => p.upstream_name)).toEqual([
      'greet',
      'summarise',
    ]);
    // Beta serves tools of the same names: unprefixed, they would clash.
    const clash = await t.call('POST', `/api/v2/aeis/${bare.id}/bindings`, {
      ...as(),
      body: { upstream_server_id: beta.id, prefix: '' },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.error.details.clashes.map((c: { tool_name: string }) => c.tool_name).sort()).toEqual(
      items.map((i) => i.tool_name).sort(),
    );
  });
});

describe('the internal upstream-request route', () => {
  it('reads a listed resource (secrets redacted) and gets a prompt, audited', async () => {
    const read = await upstreamRequest(aei.id, {
      upstream_server_id: alpha.id,
      request_id: 'req-read-1',
      read_resource: { uri: 'test://greeting' },
    });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.result.contents).toEqual([
      { uri: 'test://greeting', mimeType: 'text/plain', text: 'Hello from [secret CATALOG_MARKER]' },
    ]);
    expect(JSON.stringify(read.body)).not.toContain(SECRET);
    const data = await upstreamRequest(aei.id, {
      upstream_server_id: alpha.id,
      read_resource: { uri: 'test://data.json' },
    });
    expect(JSON.parse(data.body.result.contents[0].text)).toEqual({ items: [1, 2, 3] });

    const got = await upstreamRequest(aei.id, {
      upstream_server_id: alpha.id,
      session_id: 'session-1',
      get_prompt: { name: 'greet', arguments: { name: 'Ada' } },
    });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body.result).toMatchObject({
      description: 'A greeting',
      messages: [{ role: 'user', content: { type: 'text', text: 'Please greet Ada warmly.' } }],
    });
    // The upstream refuses missing arguments (-32602): VALIDATION_FAILED.
    const refused = await upstreamRequest(aei.id, {
      upstream_server_id: alpha.id,
      get_prompt: { name: 'greet' },
    });
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });

    const audit = await t.call('GET', '/api/v2/audit?limit=20', as());
    const rows = audit.body.items as {
      action: string;
      tool_name: string;
      operation: string;
      status: string;
      error_code: string | null;
      request_id: string | null;
      aei_id: string;
    }[];
    expect(rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'upstream.resource.read',
          tool_name: 'test://greeting',
          operation: 'read',
          status: 'ok',
          aei_id: aei.id,
          request_id: 'req-read-1',
        }),
        expect.objectContaining({
          action: 'upstream.prompt.get',
          tool_name: 'al_greet',
          operation: 'get',
          status: 'ok',
        }),
        expect.objectContaining({
          action: 'upstream.prompt.get',
          tool_name: 'al_greet',
          status: 'error',
          error_code: 'VALIDATION_FAILED',
        }),
      ]),
    );
  });

  it('refuses an unlisted URI or prompt, a server not attached, an unknown AEI and a disabled one', async () => {
    const code = async (aeiId: string, body: Record<string, unknown>) => {
      const res = await upstreamRequest(aeiId, body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.error?.code as string | undefined;
    };
    // Not listed by Alpha (Beta lists it): never asked, whatever the upstream would answer.
    expect(
      await code(aei.id, { upstream_server_id: alpha.id, read_resource: { uri: 'test://beta-only' } }),
    ).toBe('NOT_FOUND');
    expect(
      await code(aei.id, { upstream_server_id: alpha.id, read_resource: { uri: 'file:///etc/passwd' } }),
    ).toBe('NOT_FOUND');
    expect(await code(aei.id, { upstream_server_id: alpha.id, get_prompt: { name: 'nope' } })).toBe(
      'NOT_FOUND',
    );
    const other = await newAei('catalog-other');
    expect(
      await code(other.id, { upstream_server_id: alpha.id, read_resource: { uri: 'test://greeting' } }),
    ).toBe('NOT_FOUND');
    expect(
      await code('aei_nope', { upstream_server_id: alpha.id, read_resource: { uri: 'test://greeting' } }),
    ).toBe('NOT_FOUND');
    // Both or neither of the two requests: the request itself is wrong.
    const both = await upstreamRequest(aei.id, {
      upstream_server_id: alpha.id,
      read_resource: { uri: 'test://greeting' },
      get_prompt: { name: 'greet' },
    });
    expect(both.status).toBe(400);

    const disable = await t.call('PATCH', `/api/v2/aeis/${aei.id}`, {
      ...as(),
      body: { status: 'disabled' },
    });
    expect(disable.status).toBe(200);
    const forbidden = await upstreamRequest(aei.id, {
      upstream_server_id: alpha.id,
      read_resource: { uri: 'test://greeting' },
    });
    expect(forbidden.body.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'exposure "catalog" is disabled',
    });
    const config = await configOf(aei.api_key);
    expect(config.upstream_resources ?? []).toEqual([]);
    expect(config.upstream_prompts ?? []).toEqual([]);
    await t.call('PATCH', `/api/v2/aeis/${aei.id}`, { ...as(), body: { status: 'enabled' } });

    const audit = await t.call('GET', '/api/v2/audit?limit=20', as());
    const refusals = (audit.body.items as { status: string; error_code: string; action: string }[]).filter(
      (e) => e.action === 'upstream.resource.read' && e.status === 'refused',
    );
    expect(refusals.map((e) => e.error_code).sort()).toEqual([
      'FORBIDDEN',
      'NOT_FOUND',
      'NOT_FOUND',
      'NOT_FOUND',
    ]);
  });
});

describe('list changes', () => {
  it('an upstream announcing a changed resource or prompt list is synced again, and the AEI bumped', async () => {
    const changing = await newServer('Changing Catalog', { UPSTREAM_TEST_MARKER: 'changing-catalog' });
    const target = await newAei('catalog-changing');
    const bindings = await attach(target.id, changing.id, 'chg');
    const setTools = bindings.find((b) => b.tool_name === 'chg_set_tools')!;
    const versionOf = async () =>
      (await t.call('GET', `/api/v2/aeis/${target.id}`, as())).body.config_version;
    const before = await versionOf();
    const run = await t.call('POST', `/internal/adi/${setTools.adi_id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: target.id, binding_id: setTools.id, arguments: { resources: ['test://fresh'] } },
    });
    expect(run.body.isError).toBeUndefined();
    // No admin action: the notification leads to a sync, which stores the new list.
    const resources = await until(
      async () => ((await configOf(target.api_key)).upstream_resources ?? []) as { uri: string }[],
      (items) => items.some((r) => r.uri === 'test://fresh'),
    );
    expect(resources.map((r) => r.uri)).toEqual(['test://greeting', 'test://data.json', 'test://fresh']);
    const afterResources = await versionOf();
    expect(afterResources).toBeGreaterThan(before);

    await t.call('POST', `/internal/adi/${setTools.adi_id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: target.id, binding_id: setTools.id, arguments: { prompts: ['fresh_prompt'] } },
    });
    const prompts = await until(
      async () => ((await configOf(target.api_key)).upstream_prompts ?? []) as { name: string }[],
      (items) => items.some((p) => p.name === 'chg_fresh_prompt'),
    );
    expect(prompts.map((p) => p.name)).toEqual(['chg_fresh_prompt', 'chg_greet', 'chg_summarise']);
    expect(await versionOf()).toBeGreaterThan(afterResources);
    // Now listed, so readable.
    const read = await upstreamRequest(target.id, {
      upstream_server_id: changing.id,
      read_resource: { uri: 'test://fresh' },
    });
    expect(read.body.result.contents[0].text).toBe('resource test://fresh');
  });
});

describe('what a server lists, with its secrets', () => {
  it('leaves out a resource URI or prompt name holding one of them, and says so in the warnings', async () => {
    const leaky = await newServer('Leaky Catalog', {
      UPSTREAM_TEST_MARKER: 'leaky',
      UPSTREAM_TEST_EXTRA_RESOURCES: 'test://leak/{{secret.CATALOG_MARKER}},test://clean',
      UPSTREAM_TEST_EXTRA_PROMPTS: 'ask_{{secret.CATALOG_MARKER}},tidy',
    });
    const server = await t.call('GET', `/api/v2/upstream-servers/${leaky.id}`, as());
    expect(server.body.warnings.join('\n')).toMatch(
      /1 resource\(s\) whose URI holds one of the server's secrets/,
    );
    expect(server.body.warnings.join('\n')).toMatch(
      /1 prompt\(s\) whose name holds one of the server's secrets/,
    );
    const target = await newAei('leaky');
    await attach(target.id, leaky.id, 'leaky');
    const config = await configOf(target.api_key);
    const text = JSON.stringify(config);
    expect(text).not.toContain(SECRET);
    expect(config.upstream_resources.map((r: { uri: string }) => r.uri)).toContain('test://clean');
    expect(config.upstream_prompts.map((p: { name: string }) => p.name)).toContain('leaky_tidy');
  });
});

describe('resource templates', () => {
  it('are kept at sync, carried in config v2, and a URI matching one is read from its server', async () => {
    const templated = await newServer('Templated Catalog', { UPSTREAM_TEST_TEMPLATE: '1' });
    expect(templated.warnings).toEqual(
      expect.arrayContaining([
        'resource template "test://items/{id}" is listed twice; the first is kept',
        'resource template "test://broken/{id" was skipped: an expression is not closed',
      ]),
    );
    const own = await newAei('catalog-templates');
    await attach(own.id, templated.id, 'tp');
    const config = await configOf(own.api_key);
    expect(config.upstream_resource_templates).toEqual([
      {
        upstream_server_id: templated.id,
        uri_template: 'test://items/{id}',
        name: 'item',
        description: 'One item by id.',
        mime_type: 'text/plain',
      },
    ]);
    const catalog = await t.call('GET', `/api/v2/aeis/${own.id}/upstream-catalog`, as());
    expect(catalog.body.resource_templates).toEqual(config.upstream_resource_templates);

    const read = await upstreamRequest(own.id, {
      upstream_server_id: templated.id,
      read_resource: { uri: 'test://items/42' },
    });
    expect(read.body.result.contents).toEqual([
      { uri: 'test://items/42', mimeType: 'text/plain', text: 'item 42' },
    ]);
    // Only what a listed resource or template names is asked for.
    for (const uri of ['test://items/42/more', 'test://other/42']) {
      const refused = await upstreamRequest(own.id, {
        upstream_server_id: templated.id,
        read_resource: { uri },
      });
      expect(refused.body.error, uri).toMatchObject({ code: 'NOT_FOUND' });
    }
  });
});
