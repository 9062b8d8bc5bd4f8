// Pins how `POST /api/v2/openapi-imports` refuses bad input, each time with a clear 4xx (or the
// upstream's 5xx for a URL) naming the field and nothing written: unparseable JSON or YAML text
// (with line and column), a document that is not OpenAPI, both or neither of document and url,
// a bad method filter, a bad base_url or relative servers without one, another user's project;
// the route's own body limit (OPENAPI_IMPORT_MAX_BYTES, above BODY_LIMIT_BYTES) is named when
// crossed; a URL outside the allowed networks is refused before any request, one that answers an
// error or too large a document is reported.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type CallResult, type TestApp } from './support/app.ts';
import { sendJson, startRecordingApi, type RecordingApi } from './support/recording-api.ts';

const PETSTORE = readFileSync(new URL('./fixtures/openapi/petstore-expanded.yaml', import.meta.url), 'utf8');
const IMPORT_LIMIT = 2 * 1024 * 1024;
let t: TestApp; // 127.0.0.1/32 allowed, a 1 MiB body limit and a 2 MiB import limit
let closed: TestApp; // nothing allowed
let api: RecordingApi;
let user: { id: string; token: string };

function ok(res: CallResult, what: string) {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
const importing = (body: unknown, app = t, token = user.token) =>
  app.call('POST', '/api/v2/openapi-imports', { token, body });
const adiCount = () => t.database.prisma.adi.count();

beforeAll(async () => {
  api = await startRecordingApi((request, response) => {
    if (request.url === '/huge.json') {
      response.writeHead(200, { 'content-type': 'application/json' });
      return void response.end(JSON.stringify({ openapi: '3.0.0', padding: 'x'.repeat(IMPORT_LIMIT) }));
    }
    sendJson(response, 404, { error: 'no such document' });
  });
  t = await startTestApp({
    allowedNetworks: ['127.0.0.1/32'],
    bodyLimitBytes: 1024 * 1024,
    openApiImportMaxBytes: IMPORT_LIMIT,
  });
  closed = await startTestApp();
  user = await t.newUser('importer');
});
afterAll(async () => {
  await t.close();
  await closed.close();
  await api.close();
});

describe('bad documents and options', () => {
  const cases: [string, Record<string, unknown>, number, string, string][] = [
    [
      'JSON text that does not parse',
      { document: '{"openapi": "3.0.0",\n "paths": {,}}' },
      400,
      'document',
      'document: not valid JSON at line 2, column 12',
    ],
    [
      'YAML text that does not parse',
      { document: 'openapi: 3.0.0\npaths:\n  /a: [unclosed\n' },
      400,
      'document',
      'document: not valid YAML',
    ],
    [
      'a document that is not OpenAPI',
      { document: { title: 'a JSON Schema, not an API' } },
      400,
      'document',
      'document: not an OpenAPI document',
    ],
    [
      'neither document nor url',
      { base_url: 'https://api.example.com' },
      400,
      'document',
      'give the OpenAPI document',
    ],
    [
      'both document and url',
      { document: PETSTORE, url: 'https://api.example.com/openapi.json' },
      400,
      'url',
      'url: give either document or url, not both',
    ],
    [
      'a bad method filter',
      { document: PETSTORE, methods: ['FETCH'] },
      400,
      'methods',
      'methods: "FETCH" is not one of',
    ],
    [
      'a base_url that is not absolute',
      { document: PETSTORE, base_url: '/v2' },
      400,
      'base_url',
      'base_url: "/v2" must be an absolute http(s) URL',
    ],
    [
      'relative servers without base_url',
      { document: PETSTORE.replace('https://petstore.swagger.io/v2', '/v2') },
      400,
      'base_url',
      'is not absolute; give base_url',
    ],
  ];
  for (const [what, body, status, field, message] of cases) {
    it(`${what}: ${status} naming ${field}, nothing written`, async () => {
      const before = await adiCount();
      const res = await importing(body);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.message).toContain(message);
      expect(res.body.error.details.field).toBe(field);
      expect(await adiCount()).toBe(before);
    });
  }

  it('an unknown field of the body is named', async () => {
    const res = await importing({ document: PETSTORE, tag: ['pets'] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('body must NOT have additional properties: "tag"');
  });

  it('another user’s project is not found, nothing written', async () => {
    const stranger = await t.newUser('stranger');
    const project = ok(
      await t.call('POST', '/api/v2/projects', { token: stranger.token, body: { name: 'Theirs' } }),
      'project',
    );
    const before = await adiCount();
    const res = await importing({ document: PETSTORE, project_id: project.id });
    expect(res.status).toBe(404);
    expect(await adiCount()).toBe(before);
  });
});

describe('sizes', () => {
  /** The petstore with `bytes` of description: a body of about that size. */
  const padded = (bytes: number) =>
    PETSTORE.replace('title: Swagger Petstore', `title: Swagger Petstore\n  x-padding: ${'p'.repeat(bytes)}`);

  it('takes a document larger than BODY_LIMIT_BYTES on this route', async () => {
    const res = await importing({ document: padded(1.5 * 1024 * 1024), dry_run: true });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(res.body.added).toHaveLength(4);
  });

  it('refuses a body over OPENAPI_IMPORT_MAX_BYTES with 413 naming the setting', async () => {
    const res = await importing({ document: padded(IMPORT_LIMIT) });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(res.body.error.message).toContain(
      `${IMPORT_LIMIT} bytes this server accepts (OPENAPI_IMPORT_MAX_BYTES)`,
    );
  });

  it('refuses a fetched document over OPENAPI_IMPORT_MAX_BYTES, naming it', async () => {
    const res = await importing({ url: `${api.url}/huge.json` });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('LIMIT_EXCEEDED');
    expect(res.body.error.message).toMatch(/^url: .*larger than 2097152 bytes \(OPENAPI_IMPORT_MAX_BYTES\)$/);
  });
});

describe('URLs', () => {
  it('refuses a loopback URL without an allowance, before any request', async () => {
    const before = api.requests.length;
    const res = await importing(
      { url: `${api.url}/openapi.json` },
      closed,
      (await closed.newUser('u')).token,
    );
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(res.body.error.message).toMatch(/^url: outgoing request to 127\.0\.0\.1 refused/);
    expect(res.body.error.details.field).toBe('url');
    expect(api.requests.length).toBe(before);
  });

  it('reports a URL that answers an error, naming its status', async () => {
    const res = await importing({ url: `${api.url}/missing.json` });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: `url: ${api.url} answered HTTP 404 instead of the document`,
      details: { field: 'url', status: 404 },
    });
  });

  it('refuses a URL that is not http(s), naming the field', async () => {
    const res = await importing({ url: 'file:///etc/passwd' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('url: only http and https URLs can be fetched, not file:');
  });
});
