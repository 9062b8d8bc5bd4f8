// Pins the edits a write is stored as: replaying the edits found between a context before and after
// any write operation rebuilds the new data exactly, touching only what changed; and a reader of
// one context (a cached node, a subtree of the stored data) reaches the same node as a full replay,
// or is told to read an ancestor again when an edit may have moved it.
import { describe, expect, it } from 'vitest';
import {
  advanceContext,
  applyChanges,
  diffChanges,
  executeWrite,
  nodeAtTokens,
  PRESENT,
  type DataChange,
  type JsonValue,
} from '../src/index.ts';
import type { OperationType } from '@bindery/contracts/operations';
import { crm, deepFreeze } from './fixtures.ts';

type Obj = Record<string, JsonValue>;

describe('diffChanges', () => {
  it('an append to a large array is one splice holding the new item', () => {
    const items = Array.from({ length: 10_000 }, (_, i) => ({ id: i }));
    const before = deepFreeze({ items, other: { a: 1 } });
    const { context } = executeWrite('create', before, { path: '/items', value: { id: 'new' } }, {});
    expect(diffChanges(before, context, ['t'])).toEqual([
      { op: 'splice', path: ['t', 'items'], index: 10_000, remove: 0, insert: [{ id: 'new' }] },
    ]);
  });

  it('an edit deep inside is one set at its place; a removed key is a remove', () => {
    const before = crm();
    const { context } = executeWrite('update', before, { path: '/customers/1/name', value: 'G' }, {});
    expect(diffChanges(before, context, [])).toEqual([
      { op: 'set', path: ['customers', '1', 'name'], value: 'G' },
    ]);
    const removed = executeWrite('delete', before, { path: '/settings/currency' }, {}).context;
    expect(diffChanges(before, removed, ['x'])).toEqual([
      { op: 'remove', path: ['x', 'settings', 'currency'] },
    ]);
  });

  it('nothing changed is no edit; more edits than the limit is one set of the whole context', () => {
    const before = crm();
    expect(diffChanges(before, before, [])).toEqual([]);
    const after = { ...before, a: 1, b: 2, c: 3 };
    expect(diffChanges(before, after, ['p'], 2)).toEqual([{ op: 'set', path: ['p'], value: after }]);
  });
});

describe('applyChanges', () => {
  it('never mutates its input and shares what no edit reaches', () => {
    const before = crm();
    const changes: DataChange[] = [
      { op: 'set', path: ['settings', 'currency'], value: 'USD' },
      { op: 'splice', path: ['customers'], index: 0, remove: 1, insert: [] },
      { op: 'remove', path: ['count'] },
    ];
    const after = applyChanges(before, changes) as Obj;
    expect(after.settings).toEqual({ currency: 'USD', 'a/b': 1, 'm~n': 2 });
    expect((after.customers as JsonValue[]).map((c) => (c as Obj).id)).toEqual([2, 3]);
    expect('count' in after).toBe(false);
    expect((after.customers as JsonValue[])[0]).toBe((before.customers as JsonValue[])[1]);
    expect(before.count).toBe(3);
  });

  it('reads array tokens as PostgreSQL does: a negative index counts from the end', () => {
    const after = applyChanges({ a: [1, 2, 3] }, [{ op: 'set', path: ['a', '-1'], value: 9 }]);
    expect(after).toEqual({ a: [1, 2, 9] });
    expect(nodeAtTokens({ a: [1, 2, 3] }, ['a', '-3'])).toBe(1);
    expect(nodeAtTokens({ a: [1, 2, 3] }, ['a', 'x'])).toBeUndefined();
    expect(nodeAtTokens({ a: [1, 2, 3] }, ['a', '3'])).toBeUndefined();
  });

  it('inserts more items than a call can take arguments', () => {
    const insert = Array.from({ length: 200_000 }, (_, i) => i);
    const after = applyChanges([-1, -2], [{ op: 'splice', path: [], index: 1, remove: 0, insert }]);
    expect((after as number[]).length).toBe(200_002);
    expect((after as number[]).at(-1)).toBe(-2);
  });
});

// A small seeded generator, so a failure replays the same way.
function random(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

function sample(): Obj {
  return deepFreeze({
    items: Array.from({ length: 12 }, (_, i) => ({ id: i, tags: [`t${i}`], nested: { n: i } })),
    map: { a: { x: [1, 2] }, b: [{ y: 1 }], c: 3 },
    list: [[1, 2], [3], []],
    scalar: 'v',
  });
}

/** A random write; the operations refuse some of them (a missing path, a key clash). */
function randomWrite(pick: (n: number) => number): { op: OperationType; args: Obj } {
  const paths = ['/items', '/items/3', '/items/3/tags', '/map', '/map/a/x', '/map/b', '/list/0', '/list', ''];
  const path = paths[pick(paths.length)] as string;
  const value = { v: pick(1000) };
  switch (pick(5)) {
    case 0:
      return { op: 'create', args: { path, value, ...(pick(2) === 0 ? { key: `k${pick(50)}` } : {}) } };
    case 1:
      return { op: 'update', args: { path: `${path}/${pick(4)}`, value, merge: pick(2) === 0 } };
    case 2:
      return { op: 'delete', args: { path: `${path}/${pick(4)}` } };
    case 3:
      return { op: 'move', args: { from: `${path}/${pick(3)}`, to: `/list/${pick(3)}` } };
    default:
      return { op: 'copy', args: { from: `${path}/${pick(3)}`, to: `/map/k${pick(9)}` } };
  }
}

const CONTEXTS = [
  [],
  ['items'],
  ['items', '3'],
  ['items', '5', 'nested'],
  ['items', '-1'],
  ['map', 'a'],
  ['map', 'k1'],
  ['list', '0'],
  ['list', '2'],
  ['nowhere'],
];

describe('random writes', () => {
  it('replaying the edits rebuilds every version, and every context reads as in the full data', () => {
    const seen = { writes: 0, rereads: 0, splices: 0 };
    for (let seed = 1; seed <= 60; seed += 1) {
      const pick = random(seed);
      const versions: JsonValue[] = [sample()];
      const log: { version: number; changes: DataChange[] }[] = [];
      for (let step = 1; step <= 40; step += 1) {
        const current = versions.at(-1) as JsonValue;
        // A write is done on the context at `at`, as a tool with that json_path would.
        const at = CONTEXTS[pick(4)] as string[];
        const node = nodeAtTokens(current, at);
        if (node === undefined || typeof node !== 'object' || node === null) continue;
        const { op, args } = randomWrite(pick);
        let context: JsonValue;
        try {
          context = executeWrite(op, node, args, {}).context;
        } catch {
          continue;
        }
        const changes = diffChanges(node, context, at);
        seen.writes += 1;
        seen.splices += changes.filter((c) => c.op === 'splice').length;
        const next = applyChanges(current, changes);
        expect(nodeAtTokens(next, at)).toEqual(context);
        versions.push(deepFreeze(next));
        log.push({ version: versions.length - 1, changes });
      }
      // Every context, read at any version and brought forward by the edits since, is the node
      // a fresh read of the latest data finds; or the reader is sent to read an ancestor again,
      // which then brings it there.
      const latest = versions.at(-1) as JsonValue;
      for (const at of CONTEXTS) {
        for (let from = 0; from < versions.length; from += 1) {
          const later = log.filter((l) => l.version > from);
          const expected = nodeAtTokens(latest, at);
          let depth = at.length;
          let reached: JsonValue | undefined;
          for (;;) {
            const ancestor = at.slice(0, depth);
            const outcome = advanceContext(nodeAtTokens(versions[from], ancestor), ancestor, later);
            if ('rereadFrom' in outcome) {
              seen.rereads += 1;
              expect(outcome.rereadFrom).toBeLessThan(depth);
              depth = outcome.rereadFrom;
              continue;
            }
            expect(outcome.state).not.toBe(PRESENT);
            reached = nodeAtTokens(outcome.state as JsonValue | undefined, at.slice(depth));
            break;
          }
          expect(reached, `seed ${seed}, context /${at.join('/')} from version ${from}`).toEqual(expected);
          const presence = advanceContext(
            nodeAtTokens(versions[from], at) === undefined ? undefined : PRESENT,
            at,
            later,
          );
          if ('state' in presence) expect(presence.state !== undefined).toBe(expected !== undefined);
        }
      }
    }
    // The generator reaches what matters: many writes, splices among them, readers sent back.
    expect(seen.writes).toBeGreaterThan(300);
    expect(seen.splices).toBeGreaterThan(100);
    expect(seen.rereads).toBeGreaterThan(50);
  });
});
