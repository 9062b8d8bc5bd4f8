// Pins what an author of a custom JavaScript tool gets: it is saved with its code and schemas and
// read back with its kind, annotations and title; a call answers what the code returns (as
// structuredContent too when it declares an output schema), with its console lines in `_meta`;
// it reads its context and, when read-write, writes it with the context operations' own rules
// (64 concurrent appends all land; a retry with the idempotency key writes nothing twice); it
// fetches from a local server it lists in allowed_hosts; PATCH, ?kind=, export/import and the
// table's deletion treat it like any ADI.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { SUM_TOOL, customTool, customToolUser, type CustomToolUser } from './support/custom-tools.ts';

const CRM = {
  customers: [
    { id: 'c1', name: 'Ada', tier: 'gold' },
    { id: 'c2', name: 'Grace', tier: 'silver' },
  ],
  notes: [] as unknown[],
};

let t: TestApp;
let u: CustomToolUser;
const logLines: string[] = [];
let server: Server;
let serverPort: number;
const received: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json', 'x-served-by': 'local' });
        res.end(JSON.stringify({ greeting: 'hello', path: req.url }));
      };
      if (req.url === '/slow') setTimeout(answer, 400);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverPort = (server.address() as AddressInfo).port;
  t = await startTestApp({
    allowedNetworks: ['127.0.0.1/32'],
    // 64 calls of one user at once: all admitted (the defaults refuse past 8 running or waiting).
    customTool: { customToolTenantCalls: 64, customToolQueue: 64, customToolTimeoutMs: 5_000 },
    logStream: { write: (line) => void logLines.push(line) },
  });
  u = await customToolUser(t, CRM);
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('saving a custom tool', () => {
  it('answers its kind, config, schemas and annotations: read-only without write or hosts', async () => {
    const res = await u.save({ ...SUM_TOOL, name: 'sum' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      kind: 'custom',
      name: 'sum',
      table_id: null,
      json_path: null,
      operation_type: null,
      input_schema: SUM_TOOL.input_schema,
      output_schema: null,
      annotations: { title: 'Custom tool', readOnlyHint: true, openWorldHint: false },
      config: { code: SUM_TOOL.code, context_write: false, allowed_hosts: [], secrets: [] },
      status: 'ok',
    });
    const got = await t.call('GET', `/api/v2/adis/${res.body.id}`, { token: u.token });
    expect(got.body).toEqual(res.body);
  });

  it('without a name gets custom_<hash>; a write context or hosts make it not read-only', async () => {
    const res = await u.save(
      customTool('export default () => 1', {
        context: { table_id: u.tableId, json_path: '/notes', write: true },
        allowed_hosts: ['API.Example.COM', '127.1:8443'],
      }),
    );
    expect(res.status).toBe(201);
    expect(res.body.name).toMatch(/^custom_[a-z2-7]{6}$/);
    expect(res.body).toMatchObject({
      table_id: u.tableId,
      json_path: '/notes',
      // Hosts are stored as they will be matched.
      config: { context_write: true, allowed_hosts: ['api.example.com', '127.0.0.1:8443'] },
      annotations: { title: 'Custom tool on crm /notes', readOnlyHint: false, openWorldHint: true },
    });
  });

  it('the author’s annotations win field by field', async () => {
    const res = await u.save(
      customTool('export default () => 1', {
        annotations: { title: 'Ping', idempotentHint: true, openWorldHint: true },
      }),
    );
    expect(res.body.annotations).toEqual({
      title: 'Ping',
      readOnlyHint: true,
      idempotentHint: true,
      openWorldHint: true,
    });
  });

  it('PATCH changes the code and context; ?kind=custom lists custom ADIs only', async () => {
    const { adiId } = await u.add('patched', customTool('export default () => "before"'));
    expect((await u.call('patched')).value).toBe('before');
    const patched = await t.call('PATCH', `/api/v2/adis/${adiId}`, {
      token: u.token,
      body: {
        code: 'export default (args, ctx) => ctx.context.read("/0/name")',
        context: { table_id: u.tableId, json_path: '/customers' },
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ json_path: '/customers', config: { context_write: false } });
    expect((await u.call('patched')).value).toBe('Ada');
    const removed = await t.call('PATCH', `/api/v2/adis/${adiId}`, {
      token: u.token,
      body: { context: null, code: 'export default (args, ctx) => typeof ctx.context' },
    });
    expect(removed.body).toMatchObject({ table_id: null, json_path: null });
    expect((await u.call('patched')).value).toBe('undefined');

    const contextAdi = await u.save({ table_id: u.tableId, json_path: '', operation_type: 'get_all' });
    const listed = await t.call('GET', '/api/v2/adis?kind=custom&limit=100', { token: u.token });
    const kinds = new Set(listed.body.items.map((a: { kind: string }) => a.kind));
    expect([...kinds]).toEqual(['custom']);
    expect(listed.body.items.map((a: { id: string }) => a.id)).not.toContain(contextAdi.body.id);
  });
});

describe('calling a custom tool', () => {
  it('sums an array argument', async () => {
    await u.add('sum_numbers', SUM_TOOL);
    const answer = await u.call('sum_numbers', { numbers: [1, 2, 3.5, 100] });
    expect(answer).toMatchObject({ isError: false, value: { sum: 106.5 } });
    // No output schema: no structuredContent, and no console, no _meta.
    expect(answer.structured).toBeUndefined();
    expect(answer.meta).toBeUndefined();
  });

  it('sends structuredContent when it declares an output schema', async () => {
    await u.add('sum_structured', {
      ...SUM_TOOL,
      output_schema: { type: 'object', required: ['sum'], properties: { sum: { type: 'number' } } },
    });
    const answer = await u.call('sum_structured', { numbers: [2, 2] });
    expect(answer).toMatchObject({ isError: false, value: { sum: 4 }, structured: { sum: 4 } });
  });

  it('returns its console lines in _meta and logs them at debug', async () => {
    await u.add(
      'chatty',
      customTool(
        'export default (args) => { console.log("adding", args.a, args.b); console.warn({ careful: true }); return args.a + args.b; }',
      ),
    );
    const answer = await u.call('chatty', { a: 2, b: 3 });
    expect(answer.value).toBe(5);
    expect(answer.meta).toEqual({
      'bindery/console': [
        { level: 'log', message: 'adding 2 3' },
        { level: 'warn', message: '{"careful":true}' },
      ],
    });
    const logged = logLines.map((line) => JSON.parse(line)).find((l) => l.msg === 'custom tool console');
    expect(logged).toMatchObject({ level: 20, tool_name: 'chatty', console: answer.meta['bindery/console'] });
  });

  it('reads its context by JSON Pointer inside it', async () => {
    await u.add(
      'gold_names',
      customTool(
        `export default async (args, ctx) => {
          const customers = await ctx.context.read('');
          const first = await ctx.context.read('/0/name');
          return { gold: customers.filter((c) => c.tier === args.tier).map((c) => c.name), first };
        }`,
        { context: { table_id: u.tableId, json_path: '/customers' } },
      ),
    );
    expect((await u.call('gold_names', { tier: 'gold' })).value).toEqual({ gold: ['Ada'], first: 'Ada' });
  });

  it('a read-write context: 64 concurrent appends all land', async () => {
    await u.add(
      'add_note',
      customTool(
        `export default async (args, ctx) => {
          const written = await ctx.context.write('create', { value: { n: args.n } });
          return written;
        }`,
        {
          input_schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
          context: { table_id: u.tableId, json_path: '/notes', write: true },
        },
      ),
    );
    const before = await u.table();
    const answers = await Promise.all(Array.from({ length: 64 }, (_, n) => u.call('add_note', { n })));
    expect(answers.filter((a) => a.isError)).toEqual([]);
    const after = await u.table();
    const notes = after.data.notes.map((note: { n: number }) => note.n).sort((a: number, b: number) => a - b);
    expect(notes).toEqual(Array.from({ length: 64 }, (_, n) => n));
    expect(after.version).toBe(before.version + 64);
    // Each call answered the context write's own answer, with the version it made.
    const versions = answers.map((a) => a.value.table_version).sort((a: number, b: number) => a - b);
    expect(new Set(versions).size).toBe(64);
  });

  it('with an idempotency key, a retried call replays its writes instead of writing again', async () => {
    await u.add(
      'two_notes',
      customTool(
        `export default async (args, ctx) => {
          const a = await ctx.context.write('create', { value: { tag: args.tag, part: 1 } });
          const b = await ctx.context.write('create', { value: { tag: args.tag, part: 2 } });
          return [a.table_version, b.table_version];
        }`,
        { context: { table_id: u.tableId, json_path: '/notes', write: true } },
      ),
    );
    const first = await u.call('two_notes', { tag: 'once' }, 'key-two-notes');
    const again = await u.call('two_notes', { tag: 'once' }, 'key-two-notes');
    expect(again).toEqual(first);
    const tagged = (await u.table()).data.notes.filter((note: { tag?: string }) => note.tag === 'once');
    expect(tagged).toHaveLength(2);
    // The same key for other arguments is refused, as for a context write.
    const reused = await u.call('two_notes', { tag: 'other' }, 'key-two-notes');
    expect(reused).toMatchObject({ isError: true, value: { error: { code: 'CONFLICT' } } });
  });

  it('fetches from a local server listed in allowed_hosts (and allowed by HTTP_TOOLS_ALLOWED_NETWORKS)', async () => {
    await u.add(
      'greet',
      customTool(
        `export default async (args, ctx) => {
          const res = await ctx.fetch('http://127.0.0.1:${serverPort}/hello?who=' + args.who, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-tool': 'greet' },
            body: JSON.stringify({ who: args.who }),
          });
          return { status: res.status, ok: res.ok, servedBy: res.headers.get('x-served-by'), body: await res.json() };
        }`,
        { allowed_hosts: [`127.0.0.1:${serverPort}`] },
      ),
    );
    const answer = await u.call('greet', { who: 'ada' });
    expect(answer).toMatchObject({
      isError: false,
      value: {
        status: 200,
        ok: true,
        servedBy: 'local',
        body: { greeting: 'hello', path: '/hello?who=ada' },
      },
    });
    expect(received.at(-1)).toMatchObject({
      method: 'POST',
      url: '/hello?who=ada',
      headers: { 'x-tool': 'greet', 'content-type': 'application/json' },
      body: '{"who":"ada"}',
    });
  });

  it('export and import carry it; deleting its table deletes it', async () => {
    const doomed = await customToolUser(t, { items: [1, 2] }, 'exporter');
    await doomed.add(
      'count_items',
      customTool('export default async (args, ctx) => (await ctx.context.read("")).length', {
        context: { table_id: doomed.tableId, json_path: '/items' },
      }),
    );
    const exported = await t.call('GET', '/api/v2/export', { token: doomed.token });
    expect(exported.status).toBe(200);
    const other = await t.newUser('importer');
    const imported = await t.call('POST', '/api/v2/import', { token: other.token, body: exported.body });
    expect(imported.status).toBeLessThan(300);
    const adis = await t.call('GET', '/api/v2/adis?kind=custom', { token: other.token });
    expect(adis.body.items).toMatchObject([{ name: 'count_items', kind: 'custom', json_path: '/items' }]);

    expect((await doomed.call('count_items')).value).toBe(2);
    expect(
      (await t.call('DELETE', `/api/v2/tables/${doomed.tableId}?force=true`, { token: doomed.token })).status,
    ).toBe(204);
    const left = await t.call('GET', '/api/v2/adis?kind=custom', { token: doomed.token });
    expect(left.body.items).toEqual([]);
  });

  it('a call in flight when the app closes is answered before the sandbox stops', async () => {
    const closing = await startTestApp({ allowedNetworks: ['127.0.0.1/32'] });
    const author = await customToolUser(closing, {}, 'closing');
    await author.add(
      'slow',
      customTool(
        `export default async (args, ctx) => (await (await ctx.fetch('http://127.0.0.1:${serverPort}/slow')).json()).path`,
        { allowed_hosts: [`127.0.0.1:${serverPort}`] },
      ),
    );
    const inFlight = author.call('slow');
    // The call has reached the local server: it is inside the sandbox, awaiting its fetch.
    while (received.at(-1)?.url !== '/slow') await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = closing.close();
    expect(await inFlight).toMatchObject({ isError: false, value: '/slow' });
    await closed;
  });
});
