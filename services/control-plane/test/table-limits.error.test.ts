// Pins the size caps of tables on every path that writes their data: a tool write (a context tool's
// or a custom tool's ctx.context.write) storing more than TABLE_WRITE_MAX_BYTES, or growing its table
// past TABLE_MAX_BYTES, is PAYLOAD_TOO_LARGE naming the setting and writes nothing, while the writes
// before it stand, a write that shrinks the table passes, and the cap falls exactly where the data's
// compact JSON reaches it in UTF-8 bytes; creating, replacing (PUT) or importing data over the cap is
// 413 and changes nothing; a table stored before sizes were kept is measured at its first write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { customTool, customToolUser } from './support/custom-tools.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

const TABLE_MAX = 4096;
const WRITE_MAX = 1024;
const size = (data: unknown) => Buffer.byteLength(JSON.stringify(data));

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp({ tables: { tableMaxBytes: TABLE_MAX, tableWriteMaxBytes: WRITE_MAX } });
  f = await buildFixture(
    t,
    { notes: [] },
    {
      add_note: { json_path: '/notes', operation_type: 'create' },
      drop_note: { json_path: '/notes', operation_type: 'delete' },
    },
  );
});
afterAll(() => t.close());

const addNote = async (value: unknown) => toolAnswer(await execute(t, f, 'add_note', { value }));

describe('tool writes', () => {
  it('one write storing more than TABLE_WRITE_MAX_BYTES: PAYLOAD_TOO_LARGE, nothing written', async () => {
    const before = await tableState(t, f);
    const answer = await addNote('w'.repeat(WRITE_MAX));
    expect(answer).toMatchObject({
      isError: true,
      value: {
        error: {
          code: 'PAYLOAD_TOO_LARGE',
          details: { limit: 'write_bytes', limit_bytes: WRITE_MAX, table_id: f.tableId },
        },
      },
    });
    expect(answer.value.error.message).toMatch(/more than the 1024 one write may \(TABLE_WRITE_MAX_BYTES\)/);
    expect(await tableState(t, f)).toEqual(before);
  });

  it('growing the table past TABLE_MAX_BYTES: refused at exactly the cap, earlier writes stand, shrinking passes', async () => {
    // Two-byte characters: the cap counts UTF-8 bytes of the compact JSON, not characters.
    const notes = ['é'.repeat(400), 'é'.repeat(400), 'é'.repeat(400), 'é'.repeat(400)];
    for (const note of notes) expect((await addNote(note)).isError).toBe(false);
    // The last note that fits: the data's JSON is then exactly TABLE_MAX bytes.
    const room = TABLE_MAX - size({ notes }) - ','.length - '""'.length;
    const last = 'é'.repeat(room / 2);
    notes.push(last);
    expect(size({ notes })).toBe(TABLE_MAX);
    expect((await addNote(last)).isError).toBe(false);

    const full = await tableState(t, f);
    expect(full.data).toEqual({ notes });
    const refused = await addNote('x');
    expect(refused).toMatchObject({
      isError: true,
      value: {
        error: {
          code: 'PAYLOAD_TOO_LARGE',
          details: {
            limit: 'table_bytes',
            limit_bytes: TABLE_MAX,
            bytes: size({ notes: [...notes, 'x'] }),
            table_id: f.tableId,
          },
        },
      },
    });
    expect(refused.value.error.message).toMatch(/more than the 4096 a table may hold \(TABLE_MAX_BYTES\)/);
    expect(await tableState(t, f)).toEqual(full);

    expect((await toolAnswer(await execute(t, f, 'drop_note', { path: '/0' }))).isError).toBe(false);
    expect((await addNote('x')).isError).toBe(false);
    expect((await tableState(t, f)).data).toEqual({ notes: [...notes.slice(1), 'x'] });
  });

  it('ctx.context.write is held to both caps the same way', async () => {
    const u = await customToolUser(t, { items: [] }, 'custom-writer');
    await u.add(
      'fill',
      customTool(
        `export default async (args, ctx) => {
          const seen = [];
          const attempt = async (value) => {
            try { await ctx.context.write('create', { value }); seen.push('written'); }
            catch (e) { seen.push(e.code + ': ' + e.message); }
          };
          await attempt('a'.repeat(${WRITE_MAX}));
          for (let i = 0; i < 6; i++) await attempt('b'.repeat(900));
          return seen;
        }`,
        { context: { table_id: u.tableId, json_path: '/items', write: true } },
      ),
    );
    const answer = await u.call('fill');
    expect(answer.isError).toBe(false);
    // {"items":[]} grows by 902 bytes per item (903 from the second on): four fit in 4096.
    expect(answer.value).toEqual([
      expect.stringMatching(/^PAYLOAD_TOO_LARGE: .*TABLE_WRITE_MAX_BYTES/),
      'written',
      'written',
      'written',
      'written',
      expect.stringMatching(/^PAYLOAD_TOO_LARGE: .*TABLE_MAX_BYTES/),
      expect.stringMatching(/^PAYLOAD_TOO_LARGE: .*TABLE_MAX_BYTES/),
    ]);
    expect((await u.table()).data.items).toEqual(Array(4).fill('b'.repeat(900)));
  });

  it('a table stored before sizes were kept is measured at its first write', async () => {
    const g = await buildFixture(
      t,
      { notes: ['z'.repeat(3400)] },
      {
        add: { json_path: '/notes', operation_type: 'create' },
      },
    );
    await t.database.prisma.$executeRaw`UPDATE "table" SET bytes = NULL WHERE id = ${g.tableId}`;
    // 3,414 bytes stored: 703 more would pass the cap.
    const refused = toolAnswer(await execute(t, g, 'add', { value: 'y'.repeat(700) }));
    expect(refused).toMatchObject({
      isError: true,
      value: { error: { code: 'PAYLOAD_TOO_LARGE', details: { limit: 'table_bytes' } } },
    });
    expect(toolAnswer(await execute(t, g, 'add', { value: 'y'.repeat(600) })).isError).toBe(false);
    const data = (await tableState(t, g)).data;
    expect(
      toolAnswer(await execute(t, g, 'add', { value: 'y'.repeat(TABLE_MAX - size(data)) })),
    ).toMatchObject({ isError: true, value: { error: { details: { bytes: TABLE_MAX + 3 } } } });
  });
});

describe('the admin API', () => {
  const over = { blob: 'o'.repeat(TABLE_MAX) };

  it('creating a table with data over TABLE_MAX_BYTES: 413 naming the setting, no table', async () => {
    const before = await t.call('GET', '/api/v2/tables', { token: f.token });
    const res = await t.call('POST', '/api/v2/tables', { token: f.token, body: { name: 'big', data: over } });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      details: { limit: 'table_bytes', limit_bytes: TABLE_MAX, bytes: size(over) },
    });
    expect(res.body.error.message).toMatch(/TABLE_MAX_BYTES/);
    expect((await t.call('GET', '/api/v2/tables', { token: f.token })).body).toEqual(before.body);
  });

  it('PUT of data over TABLE_MAX_BYTES: 413, the data unchanged; data at the cap is taken', async () => {
    const before = await tableState(t, f);
    const res = await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, { token: f.token, body: over });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      details: { limit: 'table_bytes', table_id: f.tableId },
    });
    expect(await tableState(t, f)).toEqual(before);

    const exact = { notes: ['p'.repeat(TABLE_MAX - size({ notes: [''] }))] };
    expect(size(exact)).toBe(TABLE_MAX);
    const put = await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, { token: f.token, body: exact });
    expect(put.status).toBe(200);
    // The replacement's size is what later writes are counted from.
    expect(toolAnswer(await execute(t, f, 'add_note', { value: 1 }))).toMatchObject({
      isError: true,
      value: { error: { details: { limit: 'table_bytes', bytes: TABLE_MAX + 2 } } },
    });
  });

  it('an import with a table over TABLE_MAX_BYTES: 413 naming the table, nothing imported', async () => {
    const before = await t.call('GET', '/api/v2/tables', { token: f.token });
    const res = await t.call('POST', '/api/v2/import', {
      token: f.token,
      body: {
        format: 'bindery-export',
        version: 1,
        projects: [],
        tables: [
          { id: 't1', name: 'small', project_id: null, data: { a: 1 } },
          { id: 't2', name: 'big', project_id: null, data: over },
        ],
        adis: [],
        aeis: [],
        bindings: [],
      },
    });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      details: { limit: 'table_bytes', pointer: '/tables/1/data' },
    });
    expect(res.body.error.message).toMatch(/^body\/tables\/1\/data: .*TABLE_MAX_BYTES/);
    expect((await t.call('GET', '/api/v2/tables', { token: f.token })).body).toEqual(before.body);
  });
});
