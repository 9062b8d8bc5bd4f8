// Pins what the OpenAPI import refuses and what it reports: an unreadable document is a clear
// error with the parser's message and the line and column; a document that is not OpenAPI, a bad
// option or relative servers without base_url name the field; an operation that cannot become a
// tool is left out with a warning saying why, and the rest still import.
import { describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.ts';
import { openApiToHttpTools } from '../src/kinds/http/openapi/index.ts';

function refusal(run: () => unknown): DomainError {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(DomainError);
  expect((thrown as DomainError).code).toBe('VALIDATION_FAILED');
  return thrown as DomainError;
}

const info = { title: 'T', version: '1' };

describe('a document that cannot be read', () => {
  it('is refused with the JSON parser’s message, line and column', () => {
    const error = refusal(() => openApiToHttpTools('{\n  "openapi": "3.0.0",\n  "info": {,\n}'));
    expect(error.message).toMatch(/^document: not valid JSON at line 3, column 12: /);
    expect(error.details).toMatchObject({ field: 'document', line: 3, column: 12 });
  });

  it('is refused with the YAML parser’s message, line and column', () => {
    const error = refusal(() => openApiToHttpTools('openapi: 3.0.0\ninfo:\n  title: x\n   bad: [\n'));
    expect(error.message).toMatch(/^document: not valid YAML: .+ at line \d+, column \d+$/);
    expect(error.details).toMatchObject({
      field: 'document',
      line: expect.any(Number),
      column: expect.any(Number),
    });
  });

  it.each([
    ['', 'document: the document is empty'],
    ['just some words', 'document: neither JSON nor YAML'],
    ['[1, 2]', 'document: an OpenAPI document is a JSON or YAML object'],
    [
      '{"info": {}}',
      'document: not an OpenAPI document: it has no "openapi" (3.x) or "swagger" (2.0) version field',
    ],
    ['openapi: 4.0.0\npaths: {}', 'document: OpenAPI 4.0.0 is not supported (3.0, 3.1 and Swagger 2.0 are)'],
    ['{"swagger": "1.2"}', 'document: Swagger 1.2 is not supported (3.0, 3.1 and Swagger 2.0 are)'],
  ])('%j is refused', (text, message) => {
    const error = refusal(() => openApiToHttpTools(text));
    expect(error.message).toBe(message);
    expect(error.details?.field).toBe('document');
  });
});

describe('options and servers', () => {
  const relative = {
    openapi: '3.1.0',
    info,
    servers: [{ url: '/api/v3' }],
    paths: { '/x': { get: { responses: {} } } },
  };

  it('a relative server URL needs base_url', () => {
    const error = refusal(() => openApiToHttpTools(relative));
    expect(error.message).toBe(
      'base_url: the document\'s server URL "/api/v3" is not absolute; give base_url (the API\'s absolute base URL, e.g. https://api.example.com/v1)',
    );
    expect(error.details?.field).toBe('base_url');
    const noServers = { openapi: '3.1.0', info, paths: { '/x': { get: { responses: {} } } } };
    expect(refusal(() => openApiToHttpTools(noServers)).details?.field).toBe('base_url');
  });

  it.each(['ftp://files.example.com', 'api.example.com', 'https://api.example.com/?v=1'])(
    'base_url %s is refused',
    (url) => {
      const error = refusal(() => openApiToHttpTools(relative, { base_url: url }));
      expect(error.details?.field).toBe('base_url');
    },
  );

  it('a method filter names the methods tools have', () => {
    const error = refusal(() =>
      openApiToHttpTools(relative, { base_url: 'https://x.example', methods: ['get', 'options'] }),
    );
    expect(error.message).toBe('methods: "OPTIONS" is not one of GET, POST, PUT, PATCH, DELETE, HEAD');
  });
});

describe('operations that cannot become tools as they are', () => {
  const doc = {
    openapi: '3.0.3',
    info,
    servers: [{ url: 'https://api.example.com' }],
    components: {
      securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-Key' }, mtls: { type: 'mutualTLS' } },
    },
    paths: {
      '/form': {
        post: {
          operationId: 'postForm',
          requestBody: {
            required: true,
            content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' } } },
          },
          responses: {},
        },
        put: {
          operationId: 'putMaybeXml',
          requestBody: { content: { 'application/xml': { schema: { type: 'object' } } } },
          responses: {},
        },
        options: { operationId: 'formOptions', responses: {} },
      },
      '/users/{id}/{section}': {
        get: {
          operationId: 'getSection',
          security: [{ key: [] }, { mtls: [] }],
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
            { name: 'session', in: 'cookie', schema: { type: 'string' } },
            { name: 'X-Key', in: 'header', schema: { type: 'string' } },
            { name: 'Accept', in: 'header', schema: { type: 'string' } },
            { name: 'ghost', in: 'path', required: true, schema: { type: 'string' } },
          ],
          responses: {},
        },
      },
      '/secure': {
        get: { operationId: 'secure', security: [{ mtls: [] }, { undefinedScheme: [] }], responses: {} },
      },
      '/pattern': {
        get: {
          operationId: 'lookahead',
          parameters: [
            {
              name: 'code',
              in: 'query',
              schema: { type: 'string', pattern: '^(?=.*\\d)\\w+$', format: 'uuid' },
            },
          ],
          responses: {},
        },
      },
    },
  };

  const { tools, warnings } = openApiToHttpTools(doc);
  const about = (operationId: string) =>
    warnings.filter((w) => w.operation_id === operationId).map((w) => w.message);

  it('leaves out an operation whose required body is not JSON, saying why', () => {
    expect(tools.map((t) => t.operation_id)).toEqual(['putMaybeXml', 'getSection', 'secure', 'lookahead']);
    expect(about('postForm')).toEqual([
      'not imported: its request body is application/x-www-form-urlencoded; only JSON bodies can be sent',
    ]);
    expect(about('formOptions')).toEqual(['OPTIONS operations are not imported']);
  });

  it('imports the rest, with a warning for each part it leaves out or adds', () => {
    expect(about('putMaybeXml')).toEqual([
      'the optional request body (application/xml) is left out; only JSON bodies can be sent',
    ]);
    expect(about('getSection')).toEqual([
      'the cookie parameter "session" is not sent (cookies are not supported)',
      'the header parameter "X-Key" is left out: the security scheme sends it',
      'the path placeholder {section} has no declared parameter; it is imported as a required string',
      'the path parameter "ghost" has no {ghost} in the path and is left out',
    ]);
    const section = tools.find((t) => t.operation_id === 'getSection')!;
    expect(section.config.params).toEqual([
      { name: 'id', in: 'path' },
      { name: 'section', in: 'path' },
    ]);
    expect(section.config.headers).toEqual({ 'X-Key': '{{secret.KEY}}' });
  });

  it('reports security schemes it cannot send', () => {
    expect(about('secure')).toEqual([
      'the security scheme "mtls" (mutualTLS) is not supported; no credentials sent for it',
    ]);
    expect(tools.find((t) => t.operation_id === 'secure')!.config.headers).toBeUndefined();
  });

  it('drops patterns and formats the validator refuses, and says so', () => {
    const tool = tools.find((t) => t.operation_id === 'lookahead')!;
    expect(tool.config.input_schema!.properties).toEqual({ code: { type: 'string' } });
    expect(about('lookahead')).toEqual([
      expect.stringMatching(/^patterns and formats were left out of the input schema: input_schema: /),
    ]);
  });
});
