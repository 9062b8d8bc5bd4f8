// Pins the OpenAPI import's mapping: the OAI petstore-expanded example becomes its 4 tools with the
// right names, URLs and input schemas (and they call a real API on 127.0.0.1 correctly); Swagger
// 2.0 is upgraded; YAML, JSON text and objects give the same tools; filters, names, argument
// clashes, security schemes and secrets follow the documented rules; the same input always gives
// the same output.
import { readFileSync } from 'node:fs';
import { compileUserSchema } from '@bindery/context-ops';
import { Agent } from 'undici';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callHttpTool } from '../src/kinds/http/index.ts';
import { openApiToHttpTools, type ImportedHttpTool } from '../src/kinds/http/openapi/index.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';

const PETSTORE = readFileSync(new URL('./fixtures/openapi/petstore-expanded.yaml', import.meta.url), 'utf8');

function byName(tools: ImportedHttpTool[], name: string): ImportedHttpTool {
  const tool = tools.find((t) => t.name === name);
  if (tool === undefined) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return tool;
}

/** A 3.0 document with one path per entry of `paths`, the rest given by `extra`. */
function document(paths: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    openapi: '3.0.3',
    info: { title: 'Test', version: '1' },
    servers: [{ url: 'https://api.example.com/v1' }],
    paths,
    ...extra,
  };
}

describe('the petstore-expanded example', () => {
  const { tools, warnings, secrets } = openApiToHttpTools(PETSTORE);

  it('becomes its four operations, in document order', () => {
    expect(tools.map((t) => [t.operation_id, t.name, t.config.method, t.config.url])).toEqual([
      ['findPets', 'findPets', 'GET', 'https://petstore.swagger.io/v2/pets'],
      ['addPet', 'addPet', 'POST', 'https://petstore.swagger.io/v2/pets'],
      ['find pet by id', 'find_pet_by_id', 'GET', 'https://petstore.swagger.io/v2/pets/{id}'],
      ['deletePet', 'deletePet', 'DELETE', 'https://petstore.swagger.io/v2/pets/{id}'],
    ]);
    expect(warnings).toEqual([]);
    expect(secrets).toEqual([]);
  });

  it('derives each input schema from the parameters and the request body', () => {
    expect(byName(tools, 'findPets').config.input_schema).toEqual({
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string' }, description: 'tags to filter by' },
        limit: { type: 'integer', format: 'int32', description: 'maximum number of results to return' },
      },
      additionalProperties: false,
    });
    expect(byName(tools, 'addPet').config.input_schema).toEqual({
      type: 'object',
      properties: { name: { type: 'string' }, tag: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    });
    for (const name of ['find_pet_by_id', 'deletePet']) {
      expect(byName(tools, name).config.input_schema).toEqual({
        type: 'object',
        properties: {
          id: { type: 'integer', format: 'int64', description: expect.stringMatching(/^ID of pet to/) },
        },
        required: ['id'],
        additionalProperties: false,
      });
    }
  });

  it('maps every argument to its place and keeps the descriptions', () => {
    expect(byName(tools, 'findPets').config.params).toEqual([
      { name: 'tags', in: 'query' },
      { name: 'limit', in: 'query' },
    ]);
    expect(byName(tools, 'addPet').config.params).toEqual([
      { name: 'name', in: 'body', key: 'name' },
      { name: 'tag', in: 'body', key: 'tag' },
    ]);
    expect(byName(tools, 'deletePet').config.params).toEqual([{ name: 'id', in: 'path' }]);
    expect(byName(tools, 'findPets').description).toBe(
      'Returns all pets from the system that the user has access to',
    );
    expect(tools.every((t) => t.category === null)).toBe(true);
  });

  it('gives schemas the argument validator compiles and that check what the API expects', () => {
    const validate = compileUserSchema(byName(tools, 'addPet').config.input_schema!);
    expect(validate({ name: 'Rex', tag: 'dog' })).toBe(true);
    expect(validate({ tag: 'dog' })).toBe(false);
    expect(validate({ name: 'Rex', id: 3 })).toBe(false);
    const find = compileUserSchema(byName(tools, 'find_pet_by_id').config.input_schema!);
    expect(find({ id: 3 })).toBe(true);
    expect(find({ id: 'three' })).toBe(false);
  });

  it('reads the same from YAML text, JSON text and an object', () => {
    const object = parse(PETSTORE) as Record<string, unknown>;
    const fromYaml = openApiToHttpTools(PETSTORE);
    expect(openApiToHttpTools(JSON.stringify(object, null, 2))).toEqual(fromYaml);
    expect(openApiToHttpTools(object)).toEqual(fromYaml);
  });

  it('converts the same way every time, byte for byte, and leaves the given object unchanged', () => {
    const object = parse(PETSTORE) as Record<string, unknown>;
    const before = JSON.stringify(object);
    const first = JSON.stringify(openApiToHttpTools(object, { base_url: 'https://pets.example.com/api/' }));
    const second = JSON.stringify(openApiToHttpTools(object, { base_url: 'https://pets.example.com/api/' }));
    expect(second).toBe(first);
    expect(JSON.stringify(object)).toBe(before);
  });
});

describe('imported tools against a real API', () => {
  let api: RecordingApi;
  let dispatcher: Agent;

  beforeAll(async () => {
    api = await startRecordingApi((request, response) => sendJson(response, 200, { id: 1, name: 'Rex' }));
    dispatcher = new Agent();
  });
  afterAll(async () => {
    await dispatcher.close();
    await api.close();
  });

  it('send what the operation describes, to base_url', async () => {
    const { tools } = openApiToHttpTools(PETSTORE, { base_url: `${api.url}/v2` });
    const deps = { dispatcher, resolveSecrets: (t: string) => t, redact: (t: string) => t };
    await callHttpTool(byName(tools, 'findPets').config, { tags: ['dog', 'cat'], limit: 5 }, deps);
    expect(api.requests.at(-1)).toMatchObject({ method: 'GET', url: '/v2/pets?tags=dog&tags=cat&limit=5' });
    await callHttpTool(byName(tools, 'addPet').config, { name: 'Rex', tag: 'dog' }, deps);
    expect(api.requests.at(-1)).toMatchObject({ method: 'POST', url: '/v2/pets' });
    expect(JSON.parse(api.requests.at(-1)!.body)).toEqual({ name: 'Rex', tag: 'dog' });
    const answer = await callHttpTool(byName(tools, 'find_pet_by_id').config, { id: 42 }, deps);
    expect(api.requests.at(-1)).toMatchObject({ method: 'GET', url: '/v2/pets/42' });
    expect(answer).toEqual({ type: 'json', status: 200, value: { id: 1, name: 'Rex' } });
  });
});

describe('Swagger 2.0', () => {
  const swagger = {
    swagger: '2.0',
    info: { title: 'Legacy', version: '1' },
    host: 'legacy.example.com',
    basePath: '/api',
    schemes: ['https'],
    securityDefinitions: { api_key: { type: 'apiKey', name: 'X-Api-Key', in: 'header' } },
    security: [{ api_key: [] }],
    paths: {
      '/users/{userId}': {
        put: {
          operationId: 'updateUser',
          tags: ['users', 'admin'],
          summary: 'Update a user',
          consumes: ['application/json'],
          parameters: [
            { name: 'userId', in: 'path', required: true, type: 'integer' },
            { name: 'notify', in: 'query', type: 'boolean' },
            {
              name: 'user',
              in: 'body',
              required: true,
              schema: { $ref: '#/definitions/User' },
            },
          ],
          responses: { 200: { description: 'ok' } },
        },
      },
    },
    definitions: {
      User: {
        type: 'object',
        required: ['email'],
        properties: {
          email: { type: 'string', format: 'email' },
          nickname: { type: 'string', 'x-internal': true },
        },
      },
    },
  };

  it('is upgraded: host, basePath and scheme make the URL; the body parameter becomes body arguments', () => {
    const { tools, secrets } = openApiToHttpTools(swagger);
    expect(tools).toHaveLength(1);
    const [tool] = tools;
    expect(tool).toMatchObject({
      operation_id: 'updateUser',
      name: 'updateUser',
      description: 'Update a user',
      category: 'users',
      secret_refs: ['API_KEY'],
    });
    expect(tool!.config).toMatchObject({
      method: 'PUT',
      url: 'https://legacy.example.com/api/users/{userId}',
      headers: { 'X-Api-Key': '{{secret.API_KEY}}' },
      annotations: { title: 'Update a user' },
      params: [
        { name: 'userId', in: 'path' },
        { name: 'notify', in: 'query' },
        { name: 'email', in: 'body', key: 'email' },
        { name: 'nickname', in: 'body', key: 'nickname' },
      ],
      input_schema: {
        type: 'object',
        properties: {
          userId: { type: 'integer' },
          notify: { type: 'boolean' },
          email: { type: 'string', format: 'email' },
          nickname: { type: 'string' },
        },
        required: ['userId', 'email'],
        additionalProperties: false,
      },
    });
    expect(secrets).toEqual([
      { name: 'API_KEY', scheme: 'api_key', holds: 'the API key (header X-Api-Key)' },
    ]);
  });
});

describe('mapping rules', () => {
  it('names tools after operationId made fit, or method and path; a clash gets a stable hash suffix', () => {
    const doc = document({
      '/a': {
        get: { operationId: 'list items!', responses: {} },
        post: { operationId: 'list_items', responses: {} },
      },
      '/b/{id}/c': { get: { parameters: [{ name: 'id', in: 'path', required: true }], responses: {} } },
      '/long': { get: { operationId: 'x'.repeat(100), responses: {} } },
    });
    const names = openApiToHttpTools(doc).tools.map((t) => t.name);
    expect(names[0]).toBe('list_items');
    expect(names[1]).toMatch(/^list_items_[a-z2-7]{6}$/);
    expect(names[2]).toBe('get_b_id_c');
    expect(names[3]).toBe('x'.repeat(64));
    expect(names.every((n) => /^[A-Za-z0-9_.-]{1,64}$/.test(n))).toBe(true);
    // The same suffix on every import, and whatever a filter leaves out.
    expect(openApiToHttpTools(doc, { methods: ['POST'] }).tools.map((t) => t.name)).toEqual([names[1]]);
  });

  it('keys an operation without operationId by "METHOD /path"', () => {
    const { tools } = openApiToHttpTools(document({ '/ping': { head: { responses: {} } } }));
    expect(tools.map((t) => [t.operation_id, t.name])).toEqual([['HEAD /ping', 'head_ping']]);
  });

  it('renames a body property that clashes with a parameter to body_<name>, and a header to header_<name>', () => {
    const doc = document({
      '/items/{id}': {
        patch: {
          operationId: 'patchItem',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'id', in: 'header', schema: { type: 'string' } },
            { name: 'filter[status]', in: 'query', schema: { type: 'string' } },
          ],
          requestBody: {
            required: true,
            content: {
              'application/merge-patch+json': {
                schema: {
                  type: 'object',
                  required: ['id', 'name'],
                  properties: {
                    id: { type: 'string' },
                    name: { type: 'string' },
                    created: { type: 'string', readOnly: true },
                  },
                },
              },
            },
          },
          responses: {},
        },
      },
    });
    const [tool] = openApiToHttpTools(doc).tools;
    expect(tool!.config.params).toEqual([
      { name: 'id', in: 'path' },
      { name: 'filter_status', in: 'query', key: 'filter[status]' },
      { name: 'header_id', in: 'header', key: 'id' },
      { name: 'body_id', in: 'body', key: 'id' },
      { name: 'name', in: 'body', key: 'name' },
    ]);
    expect(tool!.config.input_schema!.required).toEqual(['id', 'body_id', 'name']);
  });

  it('sends a body that is not a plain object as one "body" argument', () => {
    const doc = document({
      '/batch': {
        post: {
          operationId: 'batch',
          requestBody: {
            description: 'the items to add',
            content: { 'application/json': { schema: { type: 'array', items: { type: 'integer' } } } },
          },
          responses: {},
        },
      },
    });
    const [tool] = openApiToHttpTools(doc).tools;
    expect(tool!.config.params).toEqual([{ name: 'body', in: 'body' }]);
    expect(tool!.config.input_schema).toEqual({
      type: 'object',
      properties: { body: { type: 'array', items: { type: 'integer' }, description: 'the items to add' } },
      additionalProperties: false,
    });
  });

  it('takes the category from the first tag and the description from summary and description', () => {
    const doc = document({
      '/x': {
        get: {
          operationId: 'x',
          tags: ['Billing', 'Other'],
          summary: 'Short',
          description: 'Long text.',
          deprecated: true,
          responses: {},
        },
      },
    });
    const [tool] = openApiToHttpTools(doc).tools;
    expect(tool).toMatchObject({ category: 'Billing', description: 'Deprecated. Short\n\nLong text.' });
    expect(tool!.config.annotations).toEqual({ title: 'Short' });
  });

  it('maps security schemes to secret references, each scheme its own secret', () => {
    const doc = document(
      {
        '/a': { get: { operationId: 'bearer', security: [{ bearerAuth: [] }], responses: {} } },
        '/b': { get: { operationId: 'basic', security: [{ basic: [] }], responses: {} } },
        '/c': { get: { operationId: 'keys', security: [{ 'query-key': [], session: [] }], responses: {} } },
        '/d': { get: { operationId: 'oauth', security: [{ oauth: ['read'] }], responses: {} } },
        '/e': { get: { operationId: 'open', security: [], responses: {} } },
        '/f': { get: { operationId: 'inherited', responses: {} } },
      },
      {
        security: [{ bearerAuth: [] }],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer' },
            basic: { type: 'http', scheme: 'basic' },
            'query-key': { type: 'apiKey', in: 'query', name: 'api_key' },
            session: { type: 'apiKey', in: 'cookie', name: 'sid' },
            oauth: { type: 'oauth2', flows: {} },
          },
        },
      },
    );
    const { tools, secrets } = openApiToHttpTools(doc);
    const config = (name: string) => byName(tools, name).config;
    expect(config('bearer').headers).toEqual({ Authorization: 'Bearer {{secret.BEARER_AUTH}}' });
    expect(config('basic').headers).toEqual({ Authorization: 'Basic {{secret.BASIC}}' });
    expect(config('keys').query).toEqual({ api_key: '{{secret.QUERY_KEY}}' });
    expect(config('keys').headers).toEqual({ Cookie: 'sid={{secret.SESSION}}' });
    expect(byName(tools, 'keys').secret_refs).toEqual(['QUERY_KEY', 'SESSION']);
    expect(config('oauth').headers).toEqual({ Authorization: 'Bearer {{secret.OAUTH}}' });
    expect(config('open').headers).toBeUndefined();
    expect(byName(tools, 'open').secret_refs).toEqual([]);
    expect(config('inherited').headers).toEqual({ Authorization: 'Bearer {{secret.BEARER_AUTH}}' });
    expect(secrets.map((s) => s.name)).toEqual(['BASIC', 'BEARER_AUTH', 'OAUTH', 'QUERY_KEY', 'SESSION']);
    expect(secrets.find((s) => s.name === 'BASIC')!.holds).toBe('base64 of "user:password"');
  });

  it('takes the server URL with its variables at their defaults, or base_url instead', () => {
    const doc = document(
      { '/x': { get: { operationId: 'x', responses: {} } } },
      {
        servers: [
          {
            url: 'https://{region}.example.com/{version}',
            variables: { region: { default: 'eu' }, version: { default: 'v2' } },
          },
        ],
      },
    );
    expect(openApiToHttpTools(doc).tools[0]!.config.url).toBe('https://eu.example.com/v2/x');
    expect(openApiToHttpTools(doc, { base_url: 'http://127.0.0.1:9/base/' }).tools[0]!.config.url).toBe(
      'http://127.0.0.1:9/base/x',
    );
    const relative = document(
      { '/x': { get: { operationId: 'x', responses: {} } } },
      { servers: [{ url: '/api' }] },
    );
    expect(
      openApiToHttpTools(relative, { base_url: 'https://api.example.com/api' }).tools[0]!.config.url,
    ).toBe('https://api.example.com/api/x');
  });

  it('cuts a recursive schema where it recurs, and the result still compiles', () => {
    const doc = document(
      {
        '/nodes': {
          post: {
            operationId: 'addNode',
            requestBody: {
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } },
            },
            responses: {},
          },
        },
      },
      {
        components: {
          schemas: {
            Node: {
              type: 'object',
              additionalProperties: false,
              properties: {
                label: { type: 'string' },
                children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
              },
            },
          },
        },
      },
    );
    const { tools, warnings } = openApiToHttpTools(doc);
    const schema = tools[0]!.config.input_schema!;
    expect(schema.properties).toEqual({
      label: { type: 'string' },
      children: { type: 'array', items: { type: 'object' } },
    });
    const validate = compileUserSchema(schema);
    expect(validate({ label: 'root', children: [{ label: 'leaf', anything: 1 }] })).toBe(true);
    expect(validate({ label: 3 })).toBe(false);
    expect(warnings).toEqual([
      { operation_id: 'addNode', message: expect.stringContaining('where it recurses') },
    ]);
  });

  it('keeps only JSON Schema keywords the validator accepts', () => {
    const doc = document({
      '/x': {
        post: {
          operationId: 'x',
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  discriminator: { propertyName: 'kind' },
                  'x-vendor': 1,
                  xml: { name: 'x' },
                  properties: {
                    phone: { type: 'string', format: 'phone', example: '+1', pattern: '^\\+' },
                    amount: { type: 'number', format: 'decimal', minimum: 0, exclusiveMaximum: 10 },
                    kind: { type: 'string', enum: ['a', 'b'], nullable: true },
                  },
                },
              },
            },
          },
          responses: {},
        },
      },
    });
    const [tool] = openApiToHttpTools(doc).tools;
    expect(tool!.config.input_schema!.properties).toEqual({
      phone: { type: 'string', pattern: '^\\+', examples: ['+1'] },
      amount: { type: 'number', minimum: 0, exclusiveMaximum: 10 },
      kind: { type: ['string', 'null'], enum: ['a', 'b'] },
    });
    expect(() => compileUserSchema(tool!.config.input_schema!)).not.toThrow();
  });
});

describe('filters', () => {
  const doc = document({
    '/pets': {
      get: { operationId: 'listPets', tags: ['pets'], responses: {} },
      post: { operationId: 'addPet', tags: ['pets', 'write'], responses: {} },
    },
    '/pets/{id}': {
      get: {
        operationId: 'getPet',
        tags: ['pets'],
        parameters: [{ name: 'id', in: 'path', required: true }],
        responses: {},
      },
    },
    '/stores/{id}/orders': {
      delete: {
        operationId: 'dropOrders',
        tags: ['store'],
        parameters: [{ name: 'id', in: 'path', required: true }],
        responses: {},
      },
    },
  });
  const ids = (options: Parameters<typeof openApiToHttpTools>[1]) =>
    openApiToHttpTools(doc, options).tools.map((t) => t.operation_id);

  it('by tag, path glob and method, together', () => {
    expect(ids({ tags: ['write', 'store'] })).toEqual(['addPet', 'dropOrders']);
    expect(ids({ paths: ['/pets/*'] })).toEqual(['getPet']);
    expect(ids({ paths: ['/pets/{id}'] })).toEqual(['getPet']);
    expect(ids({ paths: ['/stores/**', '/pets'] })).toEqual(['listPets', 'addPet', 'dropOrders']);
    expect(ids({ methods: ['get'] })).toEqual(['listPets', 'getPet']);
    expect(ids({ tags: ['pets'], methods: ['GET'], paths: ['/pets'] })).toEqual(['listPets']);
    expect(ids({ tags: [], paths: [], methods: [] })).toEqual(['listPets', 'addPet', 'getPet', 'dropOrders']);
  });
});
