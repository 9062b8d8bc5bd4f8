// Pins how table data is stored and read back: a write stores what it changed (a small patch,
// however large its context), patches are folded into the snapshot without changing what anyone
// reads, and every read (from the context cache, brought forward by patches, or from the database)
// sees exactly one version: a write that changes two places is seen whole or not at all, and a
// context under an array item that a write shifted is found at its new place. Runs on PostgreSQL
// and on PGlite, with the context cache on and off (every read from the database).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldPatches } from '../src/context/table-data.ts';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

const BIG_ITEMS = 10_000;

function big() {
  return Array.from({ length: BIG_ITEMS }, (_, i) => ({ id: i, name: `customer ${i}`, tags: ['a', 'b'] }));
}

const SPECS = {
  all: { json_path: '', operation_type: 'get_all' },
  add: { json_path: '/items', operation_type: 'create' },
  drop: { json_path: '/items', operation_type: 'delete' },
  second: { json_path: '/items/1', operation_type: 'get_all' },
  third: { json_path: '/items/2', operation_type: 'get_all' },
  shift: { json_path: '', operation_type: 'move' },
  grow: { json_path: '/big', operation_type: 'create' },
  sizes: { json_path: '', operation_type: 'query' },
};

async function patchRows(t: TestApp, tableId: string) {
  return t.database.prisma.$queryRaw<{ version: number; size: number }[]>`
    SELECT version, length(changes::text) AS size FROM table_patch WHERE table_id = ${tableId} ORDER BY version`;
}

describe.each([
  ['with the context cache', undefined],
  ['without a context cache', 0],
])('table storage, %s', (_, contextCacheBytes) => {
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    t = await startTestApp({
      ...(contextCacheBytes !== undefined && { contextCacheBytes }),
      bodyLimitBytes: 8 * 1024 * 1024,
      // Folded only when a test asks (a write after five patches).
      foldPolicy: { patches: 1_000_000, bytesPerPatch: 1 },
    });
    f = await buildFixture(
      t,
      { items: [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }], a: [1, 2, 3, 4, 5, 6, 7, 8], b: [], big: big() },
      SPECS,
    );
  });
  afterAll(() => t.close());

  it('a write to a large context stores a patch of its own size, not the context', async () => {
    const before = await tableState(t, f);
    const written = toolAnswer(await execute(t, f, 'grow', { value: { id: 'new', name: 'Newcomer' } }));
    expect(written.isError).toBe(false);
    const rows = await patchRows(t, f.tableId);
    expect(rows.at(-1)?.version).toBe(before.version + 1);
    expect(rows.at(-1)?.size).toBeLessThan(200);
    const after = await tableState(t, f);
    expect(after.data.big).toHaveLength(BIG_ITEMS + 1);
    expect(after.data.big.at(-1)).toEqual({ id: 'new', name: 'Newcomer' });
    expect(after.data.items).toEqual(before.data.items);
  });

  it('a context under an array item is read at its place after a write shifted the items', async () => {
    expect(toolAnswer(await execute(t, f, 'second')).value).toEqual({ n: 1 });
    expect(toolAnswer(await execute(t, f, 'third')).value).toEqual({ n: 2 });
    // Removing the first item shifts the others: /items/1 is now what was /items/2.
    toolAnswer(await execute(t, f, 'drop', { path: '/0' }));
    expect(toolAnswer(await execute(t, f, 'second')).value).toEqual({ n: 2 });
    expect(toolAnswer(await execute(t, f, 'third')).value).toEqual({ n: 3 });
    toolAnswer(await execute(t, f, 'drop', { path: '/0' }));
    toolAnswer(await execute(t, f, 'add', { index: 0, value: { n: 'first' } }));
    expect(toolAnswer(await execute(t, f, 'second')).value).toEqual({ n: 2 });
    toolAnswer(await execute(t, f, 'drop', { path: '/0' }));
    // Two items left: /items/2 is gone, and its tool says so, in a call and in the admin API.
    const gone = toolAnswer(await execute(t, f, 'third'));
    expect(gone.isError).toBe(true);
    expect(gone.value.error.code).toBe('NOT_FOUND');
    const adis = await t.call('GET', '/api/v2/adis?limit=50', { token: f.token });
    const status = (id: string) => adis.body.items.find((a: { id: string }) => a.id === id)?.status;
    expect(status(f.tools.third!.adiId)).toBe('context_missing');
    expect(status(f.tools.second!.adiId)).toBe('ok');
    expect((await tableState(t, f)).data.items).toEqual([{ n: 2 }, { n: 3 }]);
  });

  it('a write that changes two places is read whole or not at all, by every reader', async () => {
    const total = (data: { a: unknown[]; b: unknown[] }) => data.a.length + data.b.length;
    const start = await tableState(t, f);
    const expected = total(start.data);
    const moves = Array.from({ length: 24 }, (_, i) => ({ from: '/a/0', to: i % 3 === 0 ? '/b/0' : '/b/-' }));
    let lastVersion = start.version;
    const seen: number[] = [];
    const readers = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 12; i += 1) {
        const read = toolAnswer(await execute(t, f, 'sizes', { query: '[length(a), length(b)]' }));
        seen.push(read.value[0] + read.value[1]);
        const state = await tableState(t, f);
        seen.push(total(state.data));
        expect(state.version).toBeGreaterThanOrEqual(start.version);
      }
    });
    const writers = Promise.all(
      moves.slice(0, 8).map(async (args) => {
        const answer = toolAnswer(await execute(t, f, 'shift', args));
        expect(answer.isError).toBe(false);
        lastVersion = Math.max(lastVersion, answer.value.table_version);
      }),
    );
    await Promise.all([...readers, writers]);
    expect(seen.length).toBe(96);
    expect(new Set(seen)).toEqual(new Set([expected]));
    const end = await tableState(t, f);
    expect(end.version).toBe(start.version + 8);
    expect(end.data.a).toHaveLength(0);
    expect(end.data.b).toHaveLength(8);
  });

  it('folding the patches into the snapshot changes nothing anyone reads', async () => {
    const before = await tableState(t, f);
    const pending = (await patchRows(t, f.tableId)).length;
    expect(pending).toBeGreaterThan(5);
    const reads = {
      all: toolAnswer(await execute(t, f, 'all')).value,
      second: toolAnswer(await execute(t, f, 'second')).value,
    };
    expect(await foldPatches(t.database.prisma, f.tableId, () => 1)).toBe(pending);
    expect(await patchRows(t, f.tableId)).toEqual([]);
    const snapshot = await t.database.prisma.tableSnapshot.findUniqueOrThrow({
      where: { tableId: f.tableId },
    });
    expect(snapshot.version).toBe(before.version);
    expect(snapshot.data).toEqual(before.data);
    expect(snapshot.bytes).toBe(JSON.stringify(snapshot.data).length);
    expect(await tableState(t, f)).toEqual(before);
    expect(toolAnswer(await execute(t, f, 'all')).value).toEqual(reads.all);
    expect(toolAnswer(await execute(t, f, 'second')).value).toEqual(reads.second);
    // Writes go on after the fold, as patches after the snapshot.
    toolAnswer(await execute(t, f, 'add', { value: { n: 'after' } }));
    expect((await patchRows(t, f.tableId)).map((r) => r.version)).toEqual([before.version + 1]);
    expect((await tableState(t, f)).data.items.at(-1)).toEqual({ n: 'after' });
  });
});

describe('folding in the background', () => {
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    t = await startTestApp({ foldPolicy: { patches: 5, bytesPerPatch: Number.MAX_SAFE_INTEGER } });
    f = await buildFixture(t, { items: [] }, { add: SPECS.add, all: SPECS.all });
  });
  afterAll(() => t.close());

  it('folds once enough patches were written, and reads stay the same', async () => {
    for (let i = 0; i < 12; i += 1) toolAnswer(await execute(t, f, 'add', { value: i }));
    // Folds run after the writes' answers: wait for the snapshot to catch up.
    for (let tries = 0; ; tries += 1) {
      const snapshot = await t.database.prisma.tableSnapshot.findUniqueOrThrow({
        where: { tableId: f.tableId },
      });
      if (snapshot.version >= 11) break;
      if (tries > 100) throw new Error(`the snapshot is still at version ${snapshot.version}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const left = await patchRows(t, f.tableId);
    expect(left.length).toBeLessThan(5);
    expect(toolAnswer(await execute(t, f, 'all')).value).toEqual({
      items: Array.from({ length: 12 }, (_, i) => i),
    });
    expect((await tableState(t, f)).version).toBe(13);
  });
});
