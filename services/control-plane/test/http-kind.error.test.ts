// Pins how bad HTTP ADIs are refused through the admin API: a 400 VALIDATION_FAILED naming the
// field at fault (bad method, bad URL template, unknown secret, malformed secret reference,
// duplicate argument names, a placeholder without its parameter, a field of another kind), a 404
// for another user's project, nothing saved; a PATCH is checked the same way; a call whose
// secret was deleted after save ends with NOT_FOUND naming the secret.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type CallResult, type TestApp } from './support/app.ts';

let t: TestApp;
let user: { id: string; token: string };

function ok(res: CallResult, what: string) {
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
const as = (body?: unknown, token = user.token) => ({ token, ...(body !== undefined && { body }) });
const adiCount = () => t.database.prisma.adi.count({ where: { userId: user.id } });

beforeAll(async () => {
  t = await startTestApp();
  user = await t.newUser('http-errors');
  ok(await t.call('POST', '/api/v2/secrets', as({ name: 'KNOWN', value: 'known-value' })), 'secret');
});
afterAll(() => t.close());

const BASE = { kind: 'http', name: 'get_user', method: 'GET', url: 'https://api.example.com/users/{id}' };
const PATH_PARAM = { params: [{ name: 'id', in: 'path' }] };

describe('creating an HTTP ADI with bad input', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['a bad method', { ...PATH_PARAM, method: 'FETCH' }, 'method', 'body/method must be one of'],
    [
      'a URL template with a placeholder in the host',
      { url: 'https://{tenant}.example.com/users', params: [{ name: 'tenant', in: 'path' }] },
      'url',
      'url: placeholders may only appear in the path',
    ],
    [
      'a URL that is not absolute',
      { ...PATH_PARAM, url: '/users/{id}' },
      'url',
      'is not an absolute http(s) URL',
    ],
    ['a placeholder without its parameter', {}, 'url', 'url: the placeholder {id} has no path parameter'],
    [
      'an unknown secret',
      { ...PATH_PARAM, headers: { Authorization: 'Bearer {{secret.MISSING}}' } },
      'headers/Authorization',
      'headers/Authorization: no secret named MISSING; create it with POST /api/v2/secrets first',
    ],
    [
      'a malformed secret reference',
      { ...PATH_PARAM, query: { key: '{{secrets.KNOWN}}' } },
      'query/key',
      'query/key: "{{secrets.KNOWN}}" is not a secret reference',
    ],
    [
      'duplicate argument names',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'id', in: 'query' },
        ],
      },
      'params/1/name',
      'params/1/name: duplicate argument name "id"',
    ],
    [
      'a body on a GET',
      {
        params: [
          { name: 'id', in: 'path' },
          { name: 'b', in: 'body' },
        ],
      },
      'params/1/in',
      'a GET request has no body',
    ],
  ];
  for (const [what, change, field, message] of cases) {
    it(`${what}: 400 naming ${field}, nothing saved`, async () => {
      const before = await adiCount();
      const res = await t.call('POST', '/api/v2/adis', as({ ...BASE, ...change }));
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.message).toContain(message);
      if (!message.startsWith('body/')) expect(res.body.error.details.field).toBe(field);
      expect(await adiCount()).toBe(before);
    });
  }

  it('a context field in an http body is refused by name', async () => {
    const res = await t.call('POST', '/api/v2/adis', as({ ...BASE, ...PATH_PARAM, json_path: '' }));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('body must NOT have additional properties: "json_path"');
  });

  it('another user’s project is not found (its id is not revealed), nothing saved', async () => {
    const stranger = await t.newUser('stranger');
    const project = ok(await t.call('POST', '/api/v2/projects', as({ name: 'Theirs' }, stranger.token)), 'p');
    const before = await adiCount();
    const res = await t.call('POST', '/api/v2/adis', as({ ...BASE, ...PATH_PARAM, project_id: project.id }));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect(await adiCount()).toBe(before);
  });

  it('a PATCH is checked like a create, naming the field, and changes nothing', async () => {
    const adi = ok(await t.call('POST', '/api/v2/adis', as({ ...BASE, ...PATH_PARAM })), 'create');
    const res = await t.call(
      'PATCH',
      `/api/v2/adis/${adi.id}`,
      as({ url: 'https://api.example.com/u/{uid}' }),
    );
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('params/0: path parameter "id" has no {id} in the url');
    const secret = await t.call(
      'PATCH',
      `/api/v2/adis/${adi.id}`,
      as({ headers: { 'X-Key': '{{secret.NOPE}}' } }),
    );
    expect(secret.status).toBe(400);
    expect(secret.body.error.details).toMatchObject({ field: 'headers/X-Key', missing: ['NOPE'] });
    const context = await t.call('PATCH', `/api/v2/adis/${adi.id}`, as({ json_path: '/x' }));
    expect(context.status).toBe(400);
    expect(context.body.error.message).toBe('json_path does not apply to a http ADI');
    expect(ok(await t.call('GET', `/api/v2/adis/${adi.id}`, as()), 'get').config.url).toBe(BASE.url);
  });
});

describe('calling an HTTP tool whose secret is gone', () => {
  it('ends with NOT_FOUND naming the secret, before any request is sent', async () => {
    ok(await t.call('POST', '/api/v2/secrets', as({ name: 'SHORT_LIVED', value: 'short-lived-value' })), 's');
    const adi = ok(
      await t.call(
        'POST',
        '/api/v2/adis',
        // Loopback, not allowed here: even a call that went further would be refused by the guard.
        as({
          ...BASE,
          ...PATH_PARAM,
          url: 'http://127.0.0.1:1/users/{id}',
          headers: { 'X-Key': '{{secret.SHORT_LIVED}}' },
        }),
      ),
      'create',
    );
    const aei = ok(await t.call('POST', '/api/v2/aeis', as({ name: 'agent' })), 'aei');
    const binding = ok(
      await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, as({ adi_id: adi.id })),
      'bind',
    );
    expect((await t.call('DELETE', '/api/v2/secrets/SHORT_LIVED', as())).status).toBe(204);
    const res = await t.call('POST', `/internal/adi/${adi.id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: aei.id, binding_id: binding.id, arguments: { id: '1' } },
    });
    expect(res.body.isError).toBe(true);
    const error = JSON.parse(res.body.content[0].text).error;
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toContain('this tool uses secret SHORT_LIVED, which no longer exists');
  });
});
