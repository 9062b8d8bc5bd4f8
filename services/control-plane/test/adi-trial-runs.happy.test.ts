// Pins the trial run of an unsaved custom tool (`POST /api/v2/adis/trial-runs`): it answers the
// result, console lines and duration of a good run; its config is refused as a create refuses it
// (a syntax error with its line and column) and its arguments as a call refuses them; a loop ends
// with the sandbox's TIMEOUT; its fetch goes through the SSRF guard; it reads its context, but a
// write is refused and changes nothing; its secrets are the caller's own (and redacted as in a
// call); nothing is stored or audited.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { SUM_TOOL, customTool, customToolUser, type CustomToolUser } from './support/custom-tools.ts';

const CRM = { customers: [{ id: 'c1', name: 'Ada' }], notes: [] as unknown[] };

let t: TestApp;
let u: CustomToolUser;

beforeAll(async () => {
  t = await startTestApp({});
  u = await customToolUser(t, CRM, 'trial-author');
});
afterAll(() => t.close());

const tryRun = (config: Record<string, unknown>, args?: Record<string, unknown>, token = u.token) =>
  t.call('POST', '/api/v2/adis/trial-runs', {
    token,
    body: { kind: 'custom', config, ...(args !== undefined && { arguments: args }) },
  });

async function adiCount(): Promise<number> {
  const res = await t.call('GET', '/api/v2/adis?limit=200', { token: u.token });
  return res.body.items.length;
}

async function toolAuditRows(): Promise<number> {
  const res = await t.call('GET', '/api/v2/audit?limit=200', { token: u.token });
  expect(res.status).toBe(200);
  return res.body.items.length;
}

describe('a trial run', () => {
  it('answers the result, the console lines and the duration', async () => {
    const res = await tryRun(
      customTool(
        'export default async function (args) {\n  console.log("adding", args.numbers.length);\n  console.warn("careful");\n  return { sum: args.numbers.reduce((a, b) => a + b, 0) };\n}\n',
        { input_schema: SUM_TOOL.input_schema, name: 'sum_draft' },
      ),
      { numbers: [1, 2, 3.5] },
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      result: { sum: 6.5 },
      console: [
        { level: 'log', message: 'adding 3' },
        { level: 'warn', message: 'careful' },
      ],
      duration_ms: expect.any(Number),
    });
    expect(res.body.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('takes the create body as it is (kind included) and answers a result that is not an object', async () => {
    const res = await tryRun({ ...customTool('export default () => [1, "two", null]'), kind: 'custom' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, result: [1, 'two', null], console: [] });
  });

  it('bad JavaScript: 400 as a create answers it, with the line and column', async () => {
    const config = customTool(
      'export default async function (args) {\n  const total = ;\n  return total;\n}',
    );
    const res = await tryRun(config, {});
    const created = await u.save(config);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: "code: The source has a syntax error (line 2, column 17): unexpected token in expression: ';'",
      details: { field: 'code', line: 2, column: 17 },
    });
    expect(created.status).toBe(400);
    expect({ ...res.body.error, request_id: undefined }).toEqual({
      ...created.body.error,
      request_id: undefined,
    });
  });

  it('a bad schema, an unknown secret, a context of no table: refused as a create refuses them', async () => {
    const schema = await tryRun(customTool('export default () => 1', { input_schema: { type: 'array' } }));
    expect(schema.status).toBe(400);
    expect(schema.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { field: 'input_schema' },
    });
    const secret = await tryRun(customTool('export default () => 1', { secrets: ['NOPE'] }));
    expect(secret.status).toBe(400);
    expect(secret.body.error.message).toContain('NOPE');
    const table = await tryRun(
      customTool('export default () => 1', { context: { table_id: 'tbl_missing', json_path: '' } }),
    );
    expect(table.status).toBe(404);
  });

  it('arguments that do not fit the input schema: 400 naming the argument', async () => {
    const res = await tryRun({ ...SUM_TOOL, name: 'sum_draft' }, { numbers: 'seven' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(res.body.error.message).toContain('invalid arguments for sum_draft: argument /numbers');
  });

  it('a CPU loop ends with the sandbox’s TIMEOUT', async () => {
    const started = performance.now();
    const res = await tryRun(
      customTool('export default function () { console.log("spinning"); while (true) {} }'),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      ok: false,
      error: { code: 'TIMEOUT', details: { limit: 'time', timeout_ms: 1_000 } },
    });
    expect(res.body.error.message).toContain('time limit of 1000 ms');
    expect(res.body.duration_ms).toBeGreaterThanOrEqual(900);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('a thrown error is the tool error a call would answer', async () => {
    const res = await tryRun(customTool('export default () => { throw new Error("no such customer") }'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      ok: false,
      error: { message: expect.stringContaining('no such customer') },
    });
  });

  it('reads its context; a write is refused and the table is unchanged', async () => {
    const before = await u.table();
    const read = await tryRun(
      customTool('export default async (args, ctx) => ctx.context.read("/customers/0/name")', {
        context: { table_id: u.tableId, json_path: '' },
      }),
    );
    expect(read.body).toMatchObject({ ok: true, result: 'Ada' });
    const write = await tryRun(
      customTool(
        'export default async (args, ctx) => {\n  console.log("writing");\n  return ctx.context.write("create", { value: { text: "hi" } });\n}',
        { context: { table_id: u.tableId, json_path: '/notes', write: true } },
      ),
    );
    expect(write.status).toBe(200);
    expect(write.body).toMatchObject({
      ok: false,
      error: {
        code: 'FORBIDDEN',
        message: expect.stringContaining('a trial run cannot write; save the tool and call it to write'),
      },
      console: [{ level: 'log', message: 'writing' }],
    });
    const after = await u.table();
    expect(after).toEqual(before);
  });

  it('reads the caller’s own secrets, redacted from what it answers', async () => {
    const made = await t.call('POST', '/api/v2/secrets', {
      token: u.token,
      body: { name: 'API_TOKEN', value: 'tok-very-secret-1234' },
    });
    expect(made.status).toBe(201);
    const res = await tryRun(
      customTool(
        'export default (args, ctx) => ({ length: ctx.secrets.API_TOKEN.length, echo: ctx.secrets.API_TOKEN })',
        {
          secrets: ['API_TOKEN'],
        },
      ),
    );
    expect(res.body).toMatchObject({ ok: true, result: { length: 20 } });
    expect(JSON.stringify(res.body)).not.toContain('tok-very-secret-1234');
    // Another user's trial run cannot name them.
    const other = await t.newUser('someone-else');
    const refused = await tryRun(
      customTool('export default () => 1', { secrets: ['API_TOKEN'] }),
      undefined,
      other.token,
    );
    expect(refused.status).toBe(400);
  });

  it('fetches through the SSRF guard: a loopback host it lists is still refused', async () => {
    const server = createServer((_req, res) => res.end('{"hello":"loopback"}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const res = await tryRun(
        customTool(
          `export default async (args, ctx) => (await ctx.fetch('http://127.0.0.1:${port}/')).json()`,
          { allowed_hosts: [`127.0.0.1:${port}`] },
        ),
      );
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        ok: false,
        error: { code: 'FORBIDDEN', message: expect.stringContaining('127.0.0.1 is a loopback address') },
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('stores nothing and audits no tool call', async () => {
    const adis = await adiCount();
    const audits = await toolAuditRows();
    for (const code of ['export default () => 1', 'export default () => { while (true) {} }']) {
      await tryRun(customTool(code, { name: 'not_saved' }));
    }
    await tryRun(customTool('export default () => {', { name: 'not_saved' }));
    expect(await adiCount()).toBe(adis);
    expect(await toolAuditRows()).toBe(audits);
    const listed = await t.call('GET', '/api/v2/adis?limit=200', { token: u.token });
    expect(listed.body.items.map((a: { name: string }) => a.name)).not.toContain('not_saved');
  });

  it('needs an admin token; another kind is refused naming kind', async () => {
    const anonymous = await t.call('POST', '/api/v2/adis/trial-runs', {
      token: null,
      body: { kind: 'custom', config: customTool('export default () => 1') },
    });
    expect(anonymous.status).toBe(401);
    const http = await t.call('POST', '/api/v2/adis/trial-runs', {
      token: u.token,
      body: { kind: 'http', config: { method: 'GET', url: 'https://example.com/' } },
    });
    expect(http.status).toBe(400);
  });

  it('is in the OpenAPI document', async () => {
    const doc = await t.call('GET', '/openapi.json', { token: null });
    expect(doc.body.paths['/api/v2/adis/trial-runs'].post).toMatchObject({ tags: ['adis'] });
  });
});
