// Pins the `http` kind through the admin API and the executor, against a real API on 127.0.0.1
// (allowed by HTTP_TOOLS_ALLOWED_NETWORKS): an HTTP ADI is created from its flat body with a
// project, listed by `?kind=http`, described (input schema, annotations, title); a call maps each
// argument to its path, query, header and body place and fills the secret header (the API checks
// what it received), answers JSON as structured content and text as text; the tool sits in its
// project's app in config v2; a PATCH changes the config and bumps the exposure; deleting the
// project moves the tool to the default app.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type CallResult, type TestApp } from './support/app.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';

const TOKEN = 'notes-api-token-7fa1c2';
let t: TestApp;
let api: RecordingApi;
let user: { id: string; token: string };
let projectId: string;

function ok(res: CallResult, what: string) {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
const as = (body?: unknown) => ({ token: user.token, ...(body !== undefined && { body }) });

beforeAll(async () => {
  api = await startRecordingApi((request, response) => {
    const url = new URL(request.url, 'http://api');
    if (url.pathname === '/motd') {
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      return void response.end('Have a nice day.');
    }
    // The API itself checks that every part of the request arrived where the tool put it.
    const problems: string[] = [];
    if (request.method !== 'POST') problems.push(`method ${request.method}`);
    if (url.pathname !== '/users/u%2F42/notes') problems.push(`path ${url.pathname}`);
    if (url.searchParams.get('lang') !== 'en' || url.searchParams.get('v') !== '2') problems.push('query');
    if (request.headers['x-trace-id'] !== 'trace-1') problems.push('trace header');
    if (request.headers.authorization !== `Bearer ${TOKEN}`) problems.push('authorization');
    if (request.headers['content-type'] !== 'application/json') problems.push('content-type');
    const body = JSON.parse(request.body || 'null') as { text?: unknown; tags?: unknown } | null;
    if (body?.text !== 'hello' || JSON.stringify(body.tags) !== '["a","b"]') problems.push('body');
    if (problems.length > 0) return sendJson(response, 400, { problems });
    sendJson(response, 201, { id: 'n1', text: body!.text, tags: body!.tags });
  });
  t = await startTestApp({ allowedNetworks: ['127.0.0.1/32'] });
  user = await t.newUser('http-kind');
  projectId = ok(await t.call('POST', '/api/v2/projects', as({ name: 'Notes API' })), 'project').id;
  ok(await t.call('POST', '/api/v2/secrets', as({ name: 'NOTES_TOKEN', value: TOKEN })), 'secret');
});
afterAll(async () => {
  await t.close();
  await api.close();
});

const ADD_NOTE = () => ({
  kind: 'http',
  name: 'add_note',
  description: 'Adds a note to a user',
  project_id: projectId,
  method: 'POST',
  url: `${api.url}/users/{user_id}/notes`,
  params: [
    { name: 'user_id', in: 'path' },
    { name: 'lang', in: 'query', required: true },
    { name: 'trace', in: 'header', key: 'X-Trace-Id' },
    { name: 'text', in: 'body', key: 'text', required: true },
    { name: 'tags', in: 'body', key: 'tags', type: 'array' },
  ],
  headers: { Authorization: 'Bearer {{secret.NOTES_TOKEN}}' },
  query: { v: '2' },
});

async function bind(adiId: string, aeiId?: string) {
  const aei: { id: string; api_key?: string } = aeiId
    ? { id: aeiId }
    : ok(
        await t.call('POST', '/api/v2/aeis', as({ name: 'notes agent', exposure_mode: 'progressive' })),
        'aei',
      );
  const binding = ok(await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, as({ adi_id: adiId })), 'bind');
  return { aei, binding };
}

function execute(
  adiId: string,
  aeiId: string,
  bindingId: string,
  args: Record<string, unknown>,
  idempotencyKey?: string,
) {
  return t.call('POST', `/internal/adi/${adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: {
      aei_id: aeiId,
      binding_id: bindingId,
      arguments: args,
      ...(idempotencyKey !== undefined && { idempotency_key: idempotencyKey }),
    },
  });
}

describe('an HTTP ADI', () => {
  it('is created from the flat body, in its project, with its schema and annotations', async () => {
    const created = ok(await t.call('POST', '/api/v2/adis', as(ADD_NOTE())), 'create');
    expect(created).toMatchObject({
      kind: 'http',
      name: 'add_note',
      table_id: null,
      project_id: projectId,
      json_path: null,
      operation_type: null,
      output_schema: null,
      status: 'ok',
      annotations: {
        title: expect.stringMatching(/^POST 127\.0\.0\.1:\d+\/users\/\{user_id\}\/notes$/),
        readOnlyHint: false,
        openWorldHint: true,
      },
    });
    // Defaults are stored, so what a user reads back is what runs.
    expect(created.config).toMatchObject({ method: 'POST', timeout_ms: 10_000, max_response_bytes: 1048576 });
    expect(created.input_schema).toEqual({
      type: 'object',
      properties: {
        user_id: { type: 'string' },
        lang: { type: 'string' },
        trace: { type: 'string' },
        text: { type: 'string' },
        tags: { type: 'array' },
      },
      required: ['user_id', 'lang', 'text'],
      additionalProperties: false,
    });
    const listed = ok(await t.call('GET', '/api/v2/adis?kind=http', as()), 'list').items;
    expect(listed.map((a: { id: string }) => a.id)).toEqual([created.id]);
    expect(ok(await t.call('GET', '/api/v2/adis?kind=context', as()), 'list').items).toEqual([]);
  });

  it('sends each argument to its place with the secret header, and answers JSON as structured content', async () => {
    const adi = ok(await t.call('POST', '/api/v2/adis', as({ ...ADD_NOTE(), name: 'add_note_2' })), 'create');
    const { aei, binding } = await bind(adi.id);
    const before = api.requests.length;
    const res = await execute(adi.id, aei.id, binding.id, {
      user_id: 'u/42',
      lang: 'en',
      trace: 'trace-1',
      text: 'hello',
      tags: ['a', 'b'],
    });
    expect(res.status).toBe(200);
    expect(res.body.isError).toBeUndefined();
    expect(res.body.structuredContent).toEqual({ id: 'n1', text: 'hello', tags: ['a', 'b'] });
    expect(JSON.parse(res.body.content[0].text)).toEqual({ id: 'n1', text: 'hello', tags: ['a', 'b'] });
    const received = api.requests.slice(before);
    expect(received).toHaveLength(1);
    expect(received[0]!.url).toBe('/users/u%2F42/notes?v=2&lang=en');
  });

  it('with an idempotency key, calls the API once and answers a retry with the first answer', async () => {
    const adi = ok(
      await t.call('POST', '/api/v2/adis', as({ ...ADD_NOTE(), name: 'add_note_keyed' })),
      'create',
    );
    const { aei, binding } = await bind(adi.id);
    const args = { user_id: 'u/42', lang: 'en', trace: 'trace-1', text: 'hello', tags: ['a', 'b'] };
    const before = api.requests.length;
    const first = await execute(adi.id, aei.id, binding.id, args, 'note-1');
    const retry = await execute(adi.id, aei.id, binding.id, args, 'note-1');
    expect(first.body.structuredContent).toEqual({ id: 'n1', text: 'hello', tags: ['a', 'b'] });
    expect(retry.body).toEqual(first.body);
    const received = api.requests.slice(before);
    expect(received).toHaveLength(1);
    // The API gets a key of its own for the call: stable across retries, naming nothing of ours.
    const forwarded = received[0]!.headers['idempotency-key'];
    expect(forwarded).toMatch(/^bindery-[0-9a-f]{40}$/);
    expect(forwarded).not.toContain('note-1');

    const reused = await execute(adi.id, aei.id, binding.id, { ...args, text: 'other' }, 'note-1');
    expect(reused.body.isError).toBe(true);
    expect(JSON.parse(reused.body.content[0].text).error.code).toBe('CONFLICT');
    expect(api.requests.length - before).toBe(1);

    // Another key is another call.
    await execute(adi.id, aei.id, binding.id, args, 'note-2');
    expect(api.requests.length - before).toBe(2);
    const audit = ok(await t.call('GET', `/api/v2/audit?aei_id=${aei.id}`, as()), 'audit');
    const statuses = (audit.items as { status: string }[]).map((row) => row.status).sort();
    expect(statuses).toEqual(['error', 'ok', 'ok', 'replayed']);
  });

  it('answers a plain-text API answer as text, as it is', async () => {
    const adi = ok(
      await t.call(
        'POST',
        '/api/v2/adis',
        as({ kind: 'http', name: 'motd', method: 'GET', url: `${api.url}/motd` }),
      ),
      'create',
    );
    expect(adi.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    expect(adi.name).toBe('motd');
    const { aei, binding } = await bind(adi.id);
    const res = await execute(adi.id, aei.id, binding.id, {});
    expect(res.body).toEqual({ content: [{ type: 'text', text: 'Have a nice day.' }] });
  });

  it('gets a default name from its kind when saved without one', async () => {
    const adi = ok(
      await t.call('POST', '/api/v2/adis', as({ kind: 'http', method: 'GET', url: `${api.url}/motd` })),
      'create',
    );
    expect(adi.name).toMatch(/^http_[a-z2-7]{6}$/);
    expect(adi.project_id).toBeNull();
  });

  it('is listed under its project’s app in config v2, and under the default app without one', async () => {
    const inProject = ok(
      await t.call('POST', '/api/v2/adis', as({ ...ADD_NOTE(), name: 'in_project' })),
      'a',
    );
    const outside = ok(
      await t.call('POST', '/api/v2/adis', as({ ...ADD_NOTE(), name: 'outside', project_id: null })),
      'b',
    );
    const { aei } = await bind(inProject.id);
    await bind(outside.id, aei.id);
    const config = ok(
      await t.call('GET', `/internal/keys/${aei.api_key}/config`, { token: INTERNAL_TOKEN }),
      'config',
    ).config;
    const apps = Object.fromEntries(
      config.bindings.map((b: { tool_name: string; app: string; app_id: string }) => [
        b.tool_name,
        [b.app, b.app_id],
      ]),
    );
    expect(apps).toEqual({ in_project: ['notes-api', projectId], outside: ['default', 'default'] });
    expect(config.bindings[0].adi_ref).toEqual({
      kind: 'http',
      adi_id: inProject.id,
      method: 'POST',
      url: `${api.url}/users/{user_id}/notes`,
    });
  });

  it('a PATCH changes its config (null restores a default) and bumps the exposures binding it', async () => {
    const adi = ok(
      await t.call('POST', '/api/v2/adis', as({ ...ADD_NOTE(), name: 'patched', timeout_ms: 500 })),
      'c',
    );
    const { aei } = await bind(adi.id);
    const version = ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version;
    const patched = ok(
      await t.call('PATCH', `/api/v2/adis/${adi.id}`, as({ method: 'PUT', timeout_ms: null })),
      'patch',
    );
    expect(patched.config).toMatchObject({ method: 'PUT', timeout_ms: 10_000 });
    expect(patched.annotations).toMatchObject({ idempotentHint: true });
    expect(ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version).toBe(version + 1);
  });

  it('moves to no project when its project is deleted, and the exposure is told', async () => {
    const project = ok(await t.call('POST', '/api/v2/projects', as({ name: 'Short lived' })), 'project');
    const adi = ok(
      await t.call('POST', '/api/v2/adis', as({ ...ADD_NOTE(), name: 'orphan', project_id: project.id })),
      'c',
    );
    const { aei } = await bind(adi.id);
    const version = ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version;
    expect((await t.call('DELETE', `/api/v2/projects/${project.id}`, as())).status).toBe(204);
    expect(ok(await t.call('GET', `/api/v2/adis/${adi.id}`, as()), 'get').project_id).toBeNull();
    expect(ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version).toBe(version + 1);
  });

  it('keeps its project through export and import', async () => {
    const doc = ok(await t.call('GET', '/api/v2/export', as()), 'export');
    const exported = doc.adis.find((a: { name: string }) => a.name === 'in_project');
    expect(exported.project_id).toBe(projectId);
    const other = await t.newUser('importer');
    ok(
      await t.call('POST', '/api/v2/secrets', {
        token: other.token,
        body: { name: 'NOTES_TOKEN', value: 'importer-token' },
      }),
      's',
    );
    const imported = ok(await t.call('POST', '/api/v2/import', { token: other.token, body: doc }), 'import');
    const adis = ok(
      await t.call('GET', '/api/v2/adis?kind=http&limit=100', { token: other.token }),
      'list',
    ).items;
    const copy = adis.find((a: { name: string }) => a.name === 'in_project');
    expect(copy.project_id).toBe(imported.id_map[projectId]);
    expect(imported.secrets_to_create).toEqual([]);
    // Without the secret the import still succeeds, and says which secret to create.
    const lacking = await t.newUser('lacking');
    const withoutSecret = ok(
      await t.call('POST', '/api/v2/import', { token: lacking.token, body: { ...doc, secrets: [] } }),
      'import',
    );
    expect(withoutSecret.secrets_to_create).toEqual(['NOTES_TOKEN']);
  });
});
