// Pins `POST /api/v2/openapi-imports` against a real control plane: the OAI petstore-expanded
// example (as YAML text, as an object, or fetched from a URL on 127.0.0.1) becomes its 4 HTTP ADIs
// in the project, with their schemas and their source, and they call a real API on 127.0.0.1
// correctly; importing it again reports no change and bumps no exposure; a dry run reports what
// an import would do and writes nothing; a changed document updates tools in place (added,
// changed, removed: the removed tool's bindings go with it and its exposures get a new
// config_version); two imports at once make one set of tools; an external $ref is reported and
// never fetched.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type CallResult, type TestApp } from './support/app.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';

const PETSTORE = readFileSync(new URL('./fixtures/openapi/petstore-expanded.yaml', import.meta.url), 'utf8');
const OPERATIONS = ['findPets', 'addPet', 'find pet by id', 'deletePet'];

let t: TestApp;
let api: RecordingApi;
let refs: RecordingApi;
let user: { id: string; token: string };
let projectId: string;

function ok(res: CallResult, what: string) {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
const as = (body?: unknown, token = user.token) => ({ token, ...(body !== undefined && { body }) });
const importing = (body: Record<string, unknown>, token = user.token) =>
  t.call('POST', '/api/v2/openapi-imports', as(body, token));
const httpAdis = async (token = user.token) =>
  ok(await t.call('GET', '/api/v2/adis?kind=http&limit=100', as(undefined, token)), 'list').items;

beforeAll(async () => {
  api = await startRecordingApi((request, response) => {
    if (request.url === '/spec.yaml') {
      response.writeHead(200, { 'content-type': 'application/yaml' });
      return void response.end(PETSTORE);
    }
    if (request.method === 'DELETE') {
      response.writeHead(204);
      return void response.end();
    }
    sendJson(response, 200, { method: request.method, url: request.url, body: request.body || null });
  });
  refs = await startRecordingApi((_request, response) => sendJson(response, 200, { type: 'object' }));
  t = await startTestApp({ allowedNetworks: ['127.0.0.1/32'] });
  user = await t.newUser('importer');
  projectId = ok(await t.call('POST', '/api/v2/projects', as({ name: 'Petstore' })), 'project').id;
});
afterAll(async () => {
  await t.close();
  await api.close();
  await refs.close();
});

describe('importing petstore-expanded', () => {
  let imported: Record<string, { id: string; name: string }>;
  let aei: { id: string };
  let bindings: Record<string, string>;

  it('creates its 4 operations as HTTP ADIs of the project, with their schemas', async () => {
    const res = await importing({ document: PETSTORE, project_id: projectId, base_url: api.url });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      dry_run: false,
      project_id: projectId,
      api: 'Swagger Petstore',
      changed: [],
      removed: [],
      unchanged: 0,
      warnings: [],
      secrets_to_create: [],
    });
    expect(res.body.added.map((a: { operation_id: string }) => a.operation_id)).toEqual(OPERATIONS);
    expect(res.body.adis.map((a: { name: string }) => a.name)).toEqual([
      'findPets',
      'addPet',
      'find_pet_by_id',
      'deletePet',
    ]);
    imported = Object.fromEntries(
      res.body.adis.map((a: { operation_id: string; id: string; name: string }) => [a.operation_id, a]),
    );
    const adis = await httpAdis();
    expect(adis).toHaveLength(4);
    const byName = Object.fromEntries(adis.map((a: { name: string }) => [a.name, a]));
    expect(byName.findPets).toMatchObject({
      id: imported.findPets!.id,
      kind: 'http',
      project_id: projectId,
      annotations: { readOnlyHint: true, openWorldHint: true },
      config: {
        method: 'GET',
        url: `${api.url}/pets`,
        source: { api: 'Swagger Petstore', operation_id: 'findPets' },
      },
      input_schema: {
        type: 'object',
        properties: {
          tags: { type: 'array', items: { type: 'string' }, description: 'tags to filter by' },
          limit: { type: 'integer', format: 'int32', description: 'maximum number of results to return' },
        },
        additionalProperties: false,
      },
    });
    expect(byName.addPet.input_schema).toMatchObject({
      properties: { name: { type: 'string' }, tag: { type: 'string' } },
      required: ['name'],
    });
    expect(byName.find_pet_by_id.input_schema).toMatchObject({
      properties: { id: { type: 'integer', format: 'int64' } },
      required: ['id'],
    });
    expect(byName.deletePet.config).toMatchObject({ method: 'DELETE', url: `${api.url}/pets/{id}` });
    expect(byName.deletePet.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
  });

  it('gives tools that call the API as the document describes', async () => {
    aei = ok(await t.call('POST', '/api/v2/aeis', as({ name: 'pets agent' })), 'aei');
    const bound = ok(
      await t.call(
        'POST',
        `/api/v2/aeis/${aei.id}/bindings`,
        as(OPERATIONS.map((op) => ({ adi_id: imported[op]!.id }))),
      ),
      'bind',
    );
    bindings = Object.fromEntries(bound.items.map((b: { adi_id: string; id: string }) => [b.adi_id, b.id]));
    const call = async (op: string, args: Record<string, unknown>) => {
      const adiId = imported[op]!.id;
      const res = await t.call('POST', `/internal/adi/${adiId}/execute`, {
        token: INTERNAL_TOKEN,
        body: { aei_id: aei.id, binding_id: bindings[adiId], arguments: args },
      });
      expect(res.body.isError, JSON.stringify(res.body)).toBeUndefined();
      return res.body;
    };
    expect((await call('findPets', { tags: ['cat', 'dog'], limit: 2 })).structuredContent).toMatchObject({
      method: 'GET',
      url: '/pets?tags=cat&tags=dog&limit=2',
    });
    expect((await call('addPet', { name: 'Rex', tag: 'dog' })).structuredContent).toMatchObject({
      method: 'POST',
      url: '/pets',
      body: '{"name":"Rex","tag":"dog"}',
    });
    expect((await call('find pet by id', { id: 7 })).structuredContent).toMatchObject({ url: '/pets/7' });
    await call('deletePet', { id: 7 });
    expect(api.requests.at(-1)).toMatchObject({ method: 'DELETE', url: '/pets/7' });
  });

  it('reports no change when imported again, and tells no exposure', async () => {
    const version = ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version;
    const again = ok(
      await importing({ document: parse(PETSTORE), project_id: projectId, base_url: api.url }),
      'again',
    );
    expect(again).toMatchObject({ added: [], changed: [], removed: [], unchanged: 4 });
    expect(again.adis.map((a: { id: string }) => a.id)).toEqual(OPERATIONS.map((op) => imported[op]!.id));
    expect(ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version).toBe(version);
    expect(await httpAdis()).toHaveLength(4);
  });

  /** The petstore with deletePet gone, findPets' description changed and a new operation. */
  function changedPetstore() {
    const doc = parse(PETSTORE);
    delete doc.paths['/pets/{id}'].delete;
    doc.paths['/pets'].get.description = 'Lists the pets';
    doc.paths['/pets/{id}/photo'] = {
      get: {
        operationId: 'getPhoto',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
        responses: { 200: { description: 'a photo URL' } },
      },
    };
    return doc;
  }

  it('a dry run of a changed document reports added, changed and removed, and writes nothing', async () => {
    const before = JSON.stringify(await httpAdis());
    const version = ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version;
    const res = await importing({
      document: changedPetstore(),
      project_id: projectId,
      base_url: api.url,
      dry_run: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      dry_run: true,
      added: [{ operation_id: 'getPhoto', name: 'getPhoto', id: null }],
      changed: [{ operation_id: 'findPets', id: imported.findPets!.id }],
      removed: [{ operation_id: 'deletePet', name: 'deletePet', id: imported.deletePet!.id }],
      unchanged: 2,
    });
    expect(JSON.stringify(await httpAdis())).toBe(before);
    expect(ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version).toBe(version);
  });

  it('the same import updates in place, deletes the removed tool with its binding, and bumps its exposure', async () => {
    const version = ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version;
    const res = ok(
      await importing({ document: changedPetstore(), project_id: projectId, base_url: api.url }),
      'import',
    );
    expect(res.added.map((a: { operation_id: string }) => a.operation_id)).toEqual(['getPhoto']);
    expect(res.changed.map((a: { operation_id: string }) => a.operation_id)).toEqual(['findPets']);
    expect(res.removed.map((a: { operation_id: string }) => a.operation_id)).toEqual(['deletePet']);
    const adis = await httpAdis();
    expect(adis.map((a: { name: string }) => a.name).sort()).toEqual(
      ['addPet', 'findPets', 'find_pet_by_id', 'getPhoto'].sort(),
    );
    const findPets = adis.find((a: { name: string }) => a.name === 'findPets');
    expect(findPets.id).toBe(imported.findPets!.id);
    expect(findPets.description).toBe('Lists the pets');
    const tools = ok(await t.call('GET', `/api/v2/aeis/${aei.id}/bindings`, as()), 'bindings');
    expect(tools.items.map((b: { tool_name: string }) => b.tool_name).sort()).toEqual(
      ['addPet', 'findPets', 'find_pet_by_id'].sort(),
    );
    expect(ok(await t.call('GET', `/api/v2/aeis/${aei.id}`, as()), 'aei').config_version).toBe(version + 1);
  });

  it('keeps imports of the same document into different projects apart', async () => {
    const res = ok(await importing({ document: PETSTORE, base_url: api.url }), 'no project');
    expect(res.project_id).toBeNull();
    expect(res.added).toHaveLength(4);
    expect(res.removed).toEqual([]);
    expect(await httpAdis()).toHaveLength(8);
  });
});

describe('two imports of the same document at once', () => {
  it('make one set of tools: the second finds the first’s', async () => {
    const other = await t.newUser('twice');
    const [a, b] = await Promise.all([
      importing({ document: PETSTORE, base_url: api.url }, other.token),
      importing({ document: PETSTORE, base_url: api.url }, other.token),
    ]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect([a.body.added.length, b.body.added.length].sort()).toEqual([0, 4]);
    expect([a.body.unchanged, b.body.unchanged].sort()).toEqual([0, 4]);
    expect(await httpAdis(other.token)).toHaveLength(4);
  });
});

describe('importing from a URL', () => {
  it('fetches the document through the guard (127.0.0.1 allowed here) and imports it', async () => {
    const other = await t.newUser('by-url');
    const res = await importing({ url: `${api.url}/spec.yaml`, base_url: api.url }, other.token);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.added).toHaveLength(4);
    expect(await httpAdis(other.token)).toHaveLength(4);
  });
});

describe('an external $ref', () => {
  it('is reported, never fetched, and the document imports', async () => {
    const other = await t.newUser('refs');
    const document = {
      openapi: '3.0.3',
      info: { title: 'Refs', version: '1' },
      servers: [{ url: 'https://api.example.com' }],
      paths: {
        '/things': {
          post: {
            operationId: 'addThing',
            requestBody: {
              content: { 'application/json': { schema: { $ref: `${refs.url}/schemas.json#/Thing` } } },
            },
            responses: {},
          },
        },
      },
    };
    const res = await importing({ document }, other.token);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.added.map((a: { name: string }) => a.name)).toEqual(['addThing']);
    expect(res.body.warnings.map((w: { message: string }) => w.message).join('\n')).toContain(
      'references outside the document are never fetched',
    );
    expect(refs.requests).toEqual([]);
  });
});

describe('a change of what a tool accepts, with a binding that narrows it', () => {
  /** One operation, listItems, taking `limit` and, unless dropped, `tag`. */
  function itemsApi(withTag: boolean) {
    return {
      openapi: '3.0.3',
      info: { title: 'Items', version: '1' },
      servers: [{ url: api.url }],
      paths: {
        '/items': {
          get: {
            operationId: 'listItems',
            parameters: [
              { name: 'limit', in: 'query', schema: { type: 'integer' } },
              ...(withTag ? [{ name: 'tag', in: 'query', schema: { type: 'string' } }] : []),
            ],
            responses: { 200: { description: 'items' } },
          },
        },
      },
    };
  }

  it('disables, on re-import, the bindings whose override the new tool no longer accepts, and reports them', async () => {
    const first = ok(await importing({ document: itemsApi(true) }), 'import');
    const adiId = first.adis[0].id as string;
    const adi = ok(await t.call('GET', `/api/v2/adis/${adiId}`, as()), 'adi');
    const exposure = ok(await t.call('POST', '/api/v2/aeis', as({ name: 'items agent' })), 'aei');
    const other = ok(await t.call('POST', '/api/v2/aeis', as({ name: 'other items agent' })), 'aei');
    const narrowed = structuredClone(adi.input_schema);
    narrowed.properties.tag.maxLength = 5;
    const bind = async (aeiId: string, body: Record<string, unknown>) =>
      ok(await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, as({ adi_id: adiId, ...body })), 'bind');
    const narrowedBinding = await bind(exposure.id, { tool_name: 'narrowed_items', input_schema: narrowed });
    const plainBinding = await bind(other.id, { tool_name: 'plain_items' });

    // A dry run says what would happen, and changes nothing.
    const dry = ok(await importing({ document: itemsApi(false), dry_run: true }), 'dry run');
    expect(dry.bindings_disabled).toEqual([
      expect.objectContaining({
        binding_id: narrowedBinding.id,
        aei_id: exposure.id,
        tool_name: 'narrowed_items',
      }),
    ]);
    const path = (b: { id: string; aei_id: string }) => `/api/v2/aeis/${b.aei_id}/bindings/${b.id}`;
    expect(ok(await t.call('GET', path(narrowedBinding), as()), 'binding').enabled).toBe(true);

    const res = ok(await importing({ document: itemsApi(false) }), 're-import');
    expect(res.changed.map((c: { id: string }) => c.id)).toEqual([adiId]);
    expect(res.bindings_disabled).toHaveLength(1);
    expect(res.bindings_disabled[0]).toMatchObject({
      binding_id: narrowedBinding.id,
      tool_name: 'narrowed_items',
    });
    expect(res.bindings_disabled[0].reason).toMatch(/tag/);
    expect(ok(await t.call('GET', path(narrowedBinding), as()), 'binding').enabled).toBe(false);
    expect(ok(await t.call('GET', path(plainBinding), as()), 'binding').enabled).toBe(true);
  });

  it('refuses a PATCH that would leave an override accepting what the tool no longer does', async () => {
    const created = ok(
      await t.call(
        'POST',
        '/api/v2/adis',
        as({
          kind: 'http',
          name: 'search_things',
          method: 'GET',
          url: `${api.url}/things`,
          params: [
            { name: 'q', in: 'query' },
            { name: 'page', in: 'query', type: 'integer' },
          ],
        }),
      ),
      'create',
    );
    const exposure = ok(await t.call('POST', '/api/v2/aeis', as({ name: 'things agent' })), 'aei');
    const narrowed = structuredClone(created.input_schema);
    narrowed.properties.page.maximum = 3;
    const binding = ok(
      await t.call(
        'POST',
        `/api/v2/aeis/${exposure.id}/bindings`,
        as({ adi_id: created.id, input_schema: narrowed }),
      ),
      'bind',
    );
    const res = await t.call(
      'PATCH',
      `/api/v2/adis/${created.id}`,
      as({ params: [{ name: 'q', in: 'query' }] }),
    );
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(res.body.error.message).toContain('search_things');
    expect(res.body.error.details.binding_ids).toEqual([binding.id]);
    // Nothing changed; a PATCH the override still fits goes through.
    expect(ok(await t.call('GET', `/api/v2/adis/${created.id}`, as()), 'adi').input_schema).toEqual(
      created.input_schema,
    );
    const kept = await t.call('PATCH', `/api/v2/adis/${created.id}`, as({ description: 'Searches things' }));
    expect(kept.status).toBe(200);
  });
});
