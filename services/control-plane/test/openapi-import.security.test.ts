// Pins that importing an OpenAPI document reaches nothing outside it: external $refs (http, https,
// relative files) are reported and never fetched (a server on 127.0.0.1 named by them counts zero
// requests, for 3.x and Swagger 2.0 documents); and hostile documents (prototype keys, an alias
// bomb, absurd nesting) end in a clear refusal or a clean import, never in a polluted process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.ts';
import { openApiToHttpTools } from '../src/kinds/http/openapi/index.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';

let refs: RecordingApi;

beforeAll(async () => {
  // What a fetching parser would find there: a valid fragment, so only a fetch could resolve it.
  refs = await startRecordingApi((_request, response) =>
    sendJson(response, 200, {
      Limit: { name: 'limit', in: 'query', schema: { type: 'integer' } },
      Pet: { type: 'object' },
    }),
  );
});

afterAll(async () => {
  await refs.close();
});

describe('external references', () => {
  it('are never fetched from a 3.x document, and each is reported', () => {
    const document = JSON.stringify({
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'https://api.example.com' }],
      paths: {
        '/pets': {
          get: {
            operationId: 'listPets',
            parameters: [
              { $ref: `${refs.url}/common.json#/Limit` },
              { name: 'q', in: 'query', schema: { type: 'string' } },
            ],
            responses: {},
          },
          post: {
            operationId: 'addPet',
            requestBody: {
              content: { 'application/json': { schema: { $ref: `${refs.url}/schemas.json#/Pet` } } },
            },
            responses: {},
          },
        },
        '/remote': { $ref: `${refs.url}/paths.json#/remote` },
        '/owners': {
          post: {
            operationId: 'addOwner',
            requestBody: { $ref: `${refs.url.replace('http:', 'https:')}/bodies.json#/Owner` },
            responses: {},
          },
          put: {
            operationId: 'putOwner',
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    properties: { pet: { $ref: './local-file.yaml#/Pet' }, name: { type: 'string' } },
                  },
                },
              },
            },
            responses: {},
          },
        },
      },
    });
    const { tools, warnings } = openApiToHttpTools(document);
    expect(refs.requests).toEqual([]);
    expect(tools.map((t) => t.operation_id)).toEqual(['listPets', 'addPet', 'putOwner', 'addOwner']);
    const messages = warnings.map((w) => w.message).join('\n');
    for (const ref of ['common.json', 'schemas.json', 'paths.json', 'bodies.json', 'local-file.yaml']) {
      expect(messages).toContain(ref);
    }
    expect(messages).toContain('references outside the document are never fetched');
    // What used the unresolved reference accepts any value; the rest is mapped as usual.
    expect(tools.find((t) => t.operation_id === 'putOwner')!.config.input_schema!.properties).toEqual({
      pet: {},
      name: { type: 'string' },
    });
    expect(tools.find((t) => t.operation_id === 'listPets')!.config.params).toEqual([
      { name: 'q', in: 'query' },
    ]);
  });

  it('are never fetched from a Swagger 2.0 document', () => {
    const document = {
      swagger: '2.0',
      info: { title: 'T', version: '1' },
      host: 'api.example.com',
      paths: {
        '/pets': {
          post: {
            operationId: 'addPet',
            parameters: [
              { name: 'pet', in: 'body', required: true, schema: { $ref: `${refs.url}/schemas.json#/Pet` } },
            ],
            responses: { 200: { description: 'ok', schema: { $ref: `${refs.url}/schemas.json#/Pet` } } },
          },
        },
      },
    };
    const { tools, warnings } = openApiToHttpTools(document);
    expect(refs.requests).toEqual([]);
    expect(tools.map((t) => t.operation_id)).toEqual(['addPet']);
    expect(warnings.map((w) => w.message).join('\n')).toContain(`${refs.url}/schemas.json`);
  });
});

describe('hostile documents', () => {
  it('cannot reach Object.prototype through "__proto__" keys', () => {
    const text =
      '{"openapi": "3.0.0", "info": {"title": "T", "version": "1"}, "__proto__": {"polluted": true},' +
      ' "servers": [{"url": "https://api.example.com"}], "paths": {"/x": {"get": {"operationId": "x",' +
      ' "parameters": [{"name": "q", "in": "query", "schema": {"type": "string", "__proto__": {"type": "integer"}}}],' +
      ' "responses": {}}}}}';
    const { tools } = openApiToHttpTools(text);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(tools[0]!.config.input_schema!.properties).toEqual({ q: { type: 'string' } });
  });

  it('refuses a YAML alias bomb quickly', () => {
    const lines = ['openapi: 3.0.0', 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 10; i++)
      lines.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    const started = performance.now();
    let thrown: unknown;
    try {
      openApiToHttpTools(lines.join('\n'));
    } catch (error) {
      thrown = error;
    }
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).message).toMatch(/^document: not valid YAML: /);
  });

  it.each([
    ['JSON', `{"openapi": "3.0.0", "x": ${'['.repeat(5_000)}${']'.repeat(5_000)}}`],
    ['YAML', `openapi: 3.0.0\nx: ${'['.repeat(5_000)}${']'.repeat(5_000)}\n`],
  ])('refuses %s nested thousands of levels deep', (_format, text) => {
    let thrown: unknown;
    try {
      openApiToHttpTools(text);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).details?.field).toBe('document');
  });
});
