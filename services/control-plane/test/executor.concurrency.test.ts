// Pins that writes through the executor never lose an update: 64 concurrent creates on one table
// leave exactly 64 new items and the version 64 higher, on PostgreSQL and on PGlite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engine, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { items: [{ id: 'seed' }], other: { untouched: true } },
    {
      add: { json_path: '/items', operation_type: 'create' },
      put: { json_path: '', operation_type: 'create' },
    },
  );
});
afterAll(() => t.close());

describe('concurrent writes', () => {
  it('64 concurrent creates leave exactly 64 new items and version +64', async () => {
    const before = await tableState(t, f);
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) => execute(t, f, 'add', { value: { id: `w${i}` } })),
    );
    for (const res of results) expect(toolAnswer(res).isError).toBe(false);
    const versions = results.map((r) => toolAnswer(r).value.table_version).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 64 }, (_, i) => before.version + 1 + i));

    const after = await tableState(t, f);
    expect(after.version).toBe(before.version + 64);
    expect(after.data.items).toHaveLength(65);
    const ids = new Set(after.data.items.map((x: { id: string }) => x.id));
    for (let i = 0; i < 64; i++) expect(ids.has(`w${i}`)).toBe(true);
    expect(after.data.other).toEqual({ untouched: true });
  });

  it('concurrent creates of the same object key: one wins, the rest are CONFLICT', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => execute(t, f, 'put', { key: 'singleton', value: i })),
    );
    const answers = results.map(toolAnswer);
    expect(answers.filter((a) => !a.isError)).toHaveLength(1);
    expect(answers.filter((a) => a.isError && a.value.error.code === 'CONFLICT')).toHaveLength(7);
  });
});

describe.runIf(engine === 'postgres')('two control planes on one database', () => {
  it("never serve a stale cached context after the other one's write", async () => {
    const second = await startTestApp({ sameDatabaseAs: t });
    try {
      const g = await buildFixture(
        t,
        { items: [] },
        {
          read: { json_path: '/items', operation_type: 'get_all' },
          add: { json_path: '/items', operation_type: 'create' },
        },
      );
      expect(toolAnswer(await execute(t, g, 'read')).value).toEqual([]);
      expect(toolAnswer(await execute(second, g, 'read')).value).toEqual([]);
      toolAnswer(await execute(second, g, 'add', { value: 'from the second' }));
      expect(toolAnswer(await execute(t, g, 'read')).value).toEqual(['from the second']);
      toolAnswer(await execute(t, g, 'add', { value: 'from the first' }));
      expect(toolAnswer(await execute(second, g, 'read')).value).toEqual([
        'from the second',
        'from the first',
      ]);
    } finally {
      await second.close();
    }
  });
});
