// Failures around upstream resources and prompts, with real stdio children: a server whose lists
// fail at a later sync keeps its snapshot (tools still synced, a warning says why), a listed
// resource the upstream no longer has is NOT_FOUND, and an answer over the result limit is
// RESULT_TOO_LARGE; each is audited as an error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { stdioServerBody } from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };

const as = () => ({ token: user.token });

async function newServer(name: string, env: Record<string, string>) {
  const res = await t.call('POST', '/api/v2/upstream-servers', { ...as(), body: stdioServerBody(name, env) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.status).toBe('ok');
  return res.body as { id: string };
}

async function attachedAei(name: string, serverId: string) {
  const aei = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name } });
  expect(aei.status).toBe(201);
  const res = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
    ...as(),
    body: { upstream_server_id: serverId, prefix: 'up' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return aei.body as { id: string; api_key: string };
}

function upstreamRequest(aeiId: string, body: Record<string, unknown>) {
  return t.call('POST', `/internal/aei/${aeiId}/upstream-request`, { token: INTERNAL_TOKEN, body });
}

beforeAll(async () => {
  // Room for test://ok's answer (86 bytes of JSON), not for the greeting's (over 100).
  t = await startTestApp({ upstreamStdioCommands: ['node'], maxResultBytes: 95 });
  user = await t.newUser('catalog-failures');
});
afterAll(async () => {
  await t?.close();
});

describe('upstream resources and prompts that fail', () => {
  it('a list that fails at a later sync keeps the snapshot; the tools are synced all the same', async () => {
    const server = await newServer('Failing Lists', {
      UPSTREAM_TEST_MARKER: 'fail-again',
      UPSTREAM_TEST_CATALOG: 'fail-again',
    });
    const aei = await attachedAei('failing-lists', server.id);
    const before = await t.database.prisma.upstreamServer.findUniqueOrThrow({ where: { id: server.id } });
    expect((before.resources as unknown[]).length).toBe(2);
    expect((before.prompts as unknown[]).length).toBe(2);
    const version = (await t.call('GET', `/api/v2/aeis/${aei.id}`, as())).body.config_version;
    const sync = await t.call('POST', `/api/v2/upstream-servers/${server.id}/sync`, as());
    expect(sync.status, JSON.stringify(sync.body)).toBe(200);
    expect(sync.body.server.status).toBe('ok');
    expect(sync.body.warnings).toEqual([
      expect.stringMatching(/^resources\/list failed; the resources listed before are kept: .*broken now/),
      expect.stringMatching(/^prompts\/list failed; the prompts listed before are kept: .*broken now/),
    ]);
    expect(sync.body.server.warnings).toEqual(sync.body.warnings);
    const after = await t.database.prisma.upstreamServer.findUniqueOrThrow({ where: { id: server.id } });
    expect(after.resources).toEqual(before.resources);
    expect(after.prompts).toEqual(before.prompts);
    // Nothing changed: the AEI keeps its config_version, and still serves the snapshot.
    expect((await t.call('GET', `/api/v2/aeis/${aei.id}`, as())).body.config_version).toBe(version);
    const config = await t.call('GET', `/internal/keys/${aei.api_key}/config`, { token: INTERNAL_TOKEN });
    expect(config.body.config.upstream_resources).toHaveLength(2);
    expect(config.body.config.upstream_prompts.map((p: { name: string }) => p.name)).toEqual([
      'up_greet',
      'up_summarise',
    ]);
  });

  it('a listed resource the upstream no longer has is NOT_FOUND; an answer over the limit RESULT_TOO_LARGE', async () => {
    const server = await newServer('Gone Resource', {
      UPSTREAM_TEST_MARKER: 'gone-resource-marker',
      UPSTREAM_TEST_EXTRA_RESOURCES: 'test://missing-one,test://ok',
    });
    const aei = await attachedAei('gone-resource', server.id);
    const gone = await upstreamRequest(aei.id, {
      upstream_server_id: server.id,
      read_resource: { uri: 'test://missing-one' },
    });
    expect(gone.status).toBe(200);
    // The upstream answers -32002; the SDK's client reads it as the 2026-07-28 era's code for a
    // resource not found, -32602 with the URI in its data.
    expect(gone.body.error).toMatchObject({
      code: 'NOT_FOUND',
      details: { rpc_code: -32602 },
    });
    const small = await upstreamRequest(aei.id, {
      upstream_server_id: server.id,
      read_resource: { uri: 'test://ok' },
    });
    expect(small.body.result?.contents, JSON.stringify(small.body)).toHaveLength(1);
    const large = await upstreamRequest(aei.id, {
      upstream_server_id: server.id,
      read_resource: { uri: 'test://greeting' },
    });
    expect(large.body.error).toMatchObject({ code: 'RESULT_TOO_LARGE', details: { limit_bytes: 95 } });
    const audit = await t.call('GET', '/api/v2/audit?limit=10', as());
    const rows = (audit.body.items as { tool_name: string; status: string; error_code: string | null }[]).map(
      (e) => `${e.tool_name}:${e.status}:${e.error_code}`,
    );
    expect(rows).toEqual(
      expect.arrayContaining([
        'test://missing-one:error:NOT_FOUND',
        'test://ok:ok:null',
        'test://greeting:error:RESULT_TOO_LARGE',
      ]),
    );
  });
});
