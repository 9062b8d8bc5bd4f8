// Pins how an import refuses: a malformed document is a 400 naming the place of the fault (its
// shape, its version, a dangling reference, a bad pointer or config, a tool name used twice in an
// AEI, an override wider than its operation allows, duplicate ids) and writes nothing; a document
// over the body limit is 413 naming the limit; an import failing half way leaves nothing; an
// export holds only the caller's own things.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';

// Documents are edited freely here; each case asserts the answer it expects.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const BODY_LIMIT = 64 * 1024;
let t: TestApp;
let user: { id: string; token: string };
let other: { id: string; token: string };

const doc = (): Json => ({
  format: 'bindery-export',
  version: 1,
  projects: [{ id: 'p1', name: 'Shop', slug: 'shop', description: null }],
  tables: [{ id: 't1', name: 'items', project_id: 'p1', data: { items: [{ id: 1 }] } }],
  adis: [
    {
      id: 'a1',
      table_id: 't1',
      json_path: '/items',
      operation_type: 'select',
      name: 'pick',
      description: null,
      category: null,
      config: { id_field: 'id' },
    },
    {
      id: 'a2',
      table_id: 't1',
      json_path: '/items',
      operation_type: 'get_all',
      name: 'all',
      description: null,
      category: null,
      config: {},
    },
  ],
  aeis: [
    {
      id: 'e1',
      name: 'agent',
      type: 'mcp',
      status: 'enabled',
      exposure_mode: 'direct',
      catalog_search: false,
    },
  ],
  bindings: [
    {
      aei_id: 'e1',
      adi_id: 'a1',
      tool_name: null,
      tool_description: null,
      input_schema: null,
      enabled: true,
    },
    {
      aei_id: 'e1',
      adi_id: 'a2',
      tool_name: null,
      tool_description: null,
      input_schema: null,
      enabled: true,
    },
  ],
});

async function counts() {
  const p = t.database.prisma;
  return [await p.project.count(), await p.table.count(), await p.adi.count(), await p.aei.count()];
}

beforeAll(async () => {
  t = await startTestApp({ bodyLimitBytes: BODY_LIMIT });
  user = await t.newUser('importer');
  other = await t.newUser('someone-else');
});
afterAll(() => t.close());

describe('a malformed document', () => {
  const cases: [string, (d: Json) => void, string][] = [
    ['not an export', (d) => delete d.format, "body must have required property 'format'"],
    ['another version', (d) => (d.version = 2), 'body/version must be 1'],
    ['a wrong type', (d) => (d.tables[0].name = 7), 'body/tables/0/name must be string'],
    [
      'a key smuggled into an AEI',
      (d) => (d.aeis[0].api_key = 'bnd_key_x'),
      'body/aeis/0 must NOT have additional properties: "api_key"',
    ],
    [
      'an unknown operation',
      (d) => (d.adis[0].operation_type = 'drop_all'),
      'body/adis/0/operation_type must be',
    ],
    [
      'an unknown status',
      (d) => (d.aeis[0].status = 'on'),
      'body/aeis/0/status must be one of "enabled", "disabled"',
    ],
    [
      'a dangling reference',
      (d) => (d.bindings[1].adi_id = 'a9'),
      'body/bindings/1/adi_id: no ADI with id "a9" in this document',
    ],
    ['a table of no project', (d) => (d.tables[0].project_id = 'p9'), 'body/tables/0/project_id: no project'],
    ['a duplicate id', (d) => (d.adis[1].id = 'a1'), 'body/adis/1/id: id "a1" appears twice in adis'],
    ['a duplicate slug', (d) => d.projects.push({ ...d.projects[0], id: 'p2' }), 'body/projects/1/slug'],
    ['a bad pointer', (d) => (d.adis[0].json_path = 'items'), 'body/adis/0/json_path: '],
    ['a bad config', (d) => (d.adis[1].config = { preview_keys: ['x'] }), 'body/adis/1/config: '],
    [
      'a tool name twice in one AEI',
      (d) => (d.bindings[1].tool_name = 'pick'),
      'body/bindings/1/tool_name: tool name "pick" is used twice in AEI "e1"',
    ],
    ['an ADI bound twice', (d) => (d.bindings[1].adi_id = 'a1'), 'body/bindings/1/adi_id: ADI "a1" is bound'],
    [
      'an override wider than the operation',
      (d) => (d.bindings[0].input_schema = { type: 'object', properties: { keys: { type: 'array' } } }),
      'body/bindings/0/input_schema: ',
    ],
    [
      'a prompt of no AEI of the document',
      (d) => (d.prompts = [{ ...PROMPT, aei_id: 'e9' }]),
      'body/prompts/0/aei_id: no AEI with id "e9"',
    ],
    [
      'a prompt name twice in one AEI',
      (d) => (d.prompts = [PROMPT, PROMPT]),
      'body/prompts/1/name: prompt name "p" is used twice in AEI "e1"',
    ],
    [
      'a placeholder naming no argument',
      (d) => (d.prompts = [{ ...PROMPT, arguments: [] }]),
      'body/prompts/0: messages[0].text uses the placeholder {{who}}',
    ],
    [
      'rules the data does not keep',
      (d) => (d.tables[0].rules = { schema: { type: 'object', required: ['missing'] } }),
      'body/tables/0/rules: the data does not satisfy the schema now',
    ],
    [
      'a rule path that is no pointer',
      (d) => (d.tables[0].rules = { protect: [{ path: 'items', deny: ['write'] }] }),
      'body/tables/0/rules: protect[0].path',
    ],
    [
      'data nested deeper than stored JSON may be',
      (d) => {
        let deep: Json = 1;
        for (let i = 0; i < 66; i++) deep = [deep];
        d.tables[0].data = deep;
      },
      'body/tables/0/data: ',
    ],
  ];

  const PROMPT = {
    aei_id: 'e1',
    name: 'p',
    title: null,
    description: null,
    arguments: [{ name: 'who' }],
    messages: [{ role: 'user', text: 'hi {{who}}' }],
  };
  for (const [what, spoil, message] of cases) {
    it(`${what}: 400 naming where, nothing written`, async () => {
      const before = await counts();
      const body = doc();
      spoil(body);
      for (const query of ['', '?dry_run=true']) {
        const res = await t.call('POST', `/api/v2/import${query}`, { token: user.token, body });
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(res.body.error.message).toContain(message);
      }
      expect(await counts()).toEqual(before);
    });
  }

  it('names the pointer in details for faults found past the schema', async () => {
    const body = doc();
    body.bindings[0].aei_id = 'e9';
    const res = await t.call('POST', '/api/v2/import', { token: user.token, body });
    expect(res.body.error.details).toMatchObject({ location: 'body', pointer: '/bindings/0/aei_id' });
  });

  it('the unchanged document imports', async () => {
    const res = await t.call('POST', '/api/v2/import', { token: user.token, body: doc() });
    expect(res.status).toBe(201);
  });
});

describe('size', () => {
  it('a document over BODY_LIMIT_BYTES is 413 naming the limit; the export itself has none', async () => {
    const big = await t.newUser('big');
    const chunk = 'x'.repeat(1000);
    for (let i = 0; i < 3; i++) {
      const res = await t.call('POST', '/api/v2/tables', {
        token: big.token,
        body: { name: `t${i}`, data: Array.from({ length: 30 }, () => chunk) },
      });
      expect(res.status).toBe(201);
    }
    const exported = await t.call('GET', '/api/v2/export', { token: big.token });
    expect(exported.status).toBe(200);
    expect(JSON.stringify(exported.body).length).toBeGreaterThan(BODY_LIMIT);
    const res = await t.call('POST', '/api/v2/import', { token: big.token, body: exported.body });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { limit_bytes: BODY_LIMIT } });
    expect(res.body.error.message).toContain('BODY_LIMIT_BYTES');
  });
});

describe('all or nothing', () => {
  it('an import failing half way leaves nothing behind', async () => {
    await t.database.prisma.$executeRawUnsafe(`
      CREATE FUNCTION refuse_explode() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.tool_name = 'explode' THEN RAISE EXCEPTION 'refused by the test'; END IF;
        RETURN NEW;
      END $$`);
    await t.database.prisma.$executeRawUnsafe(
      `CREATE TRIGGER refuse_explode BEFORE INSERT ON aei_binding FOR EACH ROW EXECUTE FUNCTION refuse_explode()`,
    );
    const body = doc();
    body.bindings[1].tool_name = 'explode';
    const before = await counts();
    const res = await t.call('POST', '/api/v2/import', { token: user.token, body });
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain('refused by the test');
    expect(await counts()).toEqual(before);
  });
});

describe('isolation', () => {
  it("an export holds only the caller's own things", async () => {
    const mine = await t.call('GET', '/api/v2/export', { token: other.token });
    expect(mine.body).toMatchObject({ projects: [], tables: [], adis: [], aeis: [], bindings: [] });
    const theirs = await t.call('GET', '/api/v2/export', { token: user.token });
    expect(theirs.body.projects.length).toBeGreaterThan(0);
  });
});
