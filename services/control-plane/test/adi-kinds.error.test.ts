// Pins how ADI bodies of a kind this server does not run, or of no kind at all, are refused: 400
// naming `kind` (and saying the kind is not available yet), nothing saved; a body of the default
// kind is checked against the context body alone, so its errors name the context field at fault;
// an import document with such a kind is refused at its place; `?kind=` takes known kinds only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let user: { id: string; token: string };
let tableId: string;

beforeAll(async () => {
  t = await startTestApp();
  user = await t.newUser('kinds');
  const table = await t.call('POST', '/api/v2/tables', {
    token: user.token,
    body: { name: 'crm', data: { customers: [] } },
  });
  tableId = table.body.id;
});
afterAll(() => t.close());

const adiCount = () => t.database.prisma.adi.count({ where: { userId: user.id } });

describe('creating an ADI of another kind', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      // Every body here gets the context's table_id, which a custom body has in `context`.
      'a custom body with a field of the context kind',
      { kind: 'custom', name: 'sum', code: 'export default async (args) => 1', input_schema: {} },
      'body must NOT have additional properties: "table_id"',
    ],
    ['an unknown kind', { kind: 'sql', name: 'x' }, 'body/kind must be one of "context", "custom", "http"'],
    ['a kind that is not a string', { kind: 7 }, 'body/kind must be one of "context", "custom", "http"'],
    [
      'a context body with a wrong field',
      { json_path: '', operation_type: 'drop_all' },
      'body/operation_type must be one of "get_all"',
    ],
    [
      'a context body with a field of another kind',
      { json_path: '', operation_type: 'query', url: 'https://api.example.com' },
      'body must NOT have additional properties: "url"',
    ],
  ];
  for (const [what, body, message] of cases) {
    it(`${what}: 400 naming the field, nothing saved`, async () => {
      const before = await adiCount();
      const res = await t.call('POST', '/api/v2/adis', {
        token: user.token,
        body: { table_id: tableId, ...body },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.message).toContain(message);
      expect(await adiCount()).toBe(before);
    });
  }
});

describe('listing by kind', () => {
  it('refuses a kind that does not exist', async () => {
    const res = await t.call('GET', '/api/v2/adis?kind=sql', { token: user.token });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('querystring/kind must be one of "context", "custom", "http"');
  });
});

describe('importing an ADI whose kind refuses its config', () => {
  it('is refused at the ADI, naming the field, nothing imported', async () => {
    const doc = {
      format: 'bindery-export',
      version: 1,
      projects: [],
      tables: [{ id: 't1', name: 'crm', project_id: null, data: {} }],
      adis: [
        {
          id: 'a1',
          kind: 'custom',
          table_id: null,
          json_path: null,
          operation_type: null,
          name: 'sum',
          description: null,
          category: null,
          // No input_schema, and code that does not parse.
          config: { code: 'export default (args) => args.a +' },
        },
      ],
      aeis: [],
      bindings: [],
    };
    const before = await adiCount();
    const res = await t.call('POST', '/api/v2/import', { token: user.token, body: doc });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.message).toMatch(/^body\/adis\/0\//);
    expect(await adiCount()).toBe(before);
  });
});
