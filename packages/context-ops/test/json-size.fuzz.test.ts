// Pins the size a table's cap is checked against: jsonBytes is the UTF-8 length of the compact
// JSON text (multi-byte characters, emoji, escapes and lone surrogates included), and for any
// write operation on any context jsonBytesDelta of the context before and after equals the change
// of that length, so a store adding up deltas never drifts from the data's real size.
import { describe, expect, it } from 'vitest';
import { executeWrite, jsonBytes, jsonBytesDelta, nodeAtTokens, type JsonValue } from '../src/index.ts';
import type { OperationType } from '@bindery/contracts/operations';
import { deepFreeze } from './fixtures.ts';

type Obj = Record<string, JsonValue>;
const SEED = Number(process.env.FUZZ_SEED ?? 1);
const RUNS = Number(process.env.FUZZ_RUNS ?? 80);

const real = (value: JsonValue) => Buffer.byteLength(JSON.stringify(value));

// A small seeded generator, so a failure replays the same way.
function random(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

const PIECES = ['a', 'Ω', '中文', '😀', '"', '\\', '\n', '\u0001', '\ud800', '\udc00x', '/', '~'];

function text(pick: (n: number) => number): string {
  return Array.from({ length: pick(4) }, () => PIECES[pick(PIECES.length)]).join('');
}

function value(pick: (n: number) => number, depth: number): JsonValue {
  switch (depth > 2 ? pick(4) : pick(6)) {
    case 0:
      return null;
    case 1:
      return pick(2) === 0;
    case 2:
      return [0, -1.5, 1e21, 123456789, -0][pick(5)] as number;
    case 3:
      return text(pick);
    case 4:
      return Array.from({ length: pick(4) }, () => value(pick, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: pick(4) }, () => [text(pick), value(pick, depth + 1)]));
  }
}

function sample(pick: (n: number) => number): Obj {
  return deepFreeze({
    items: Array.from({ length: 6 }, (_, i) => ({ id: i, name: text(pick), tags: [text(pick)] })),
    map: { a: { x: [1, 2] }, 'ü b': [{ y: 1 }], c: 3 },
    list: [[1, 2], [3], []],
    scalar: 'v',
  });
}

function randomWrite(pick: (n: number) => number): { op: OperationType; args: Obj } {
  const paths = ['/items', '/items/3', '/items/3/tags', '/map', '/map/a/x', '/list/0', '/list', ''];
  const path = paths[pick(paths.length)] as string;
  const v = value(pick, 0);
  switch (pick(5)) {
    case 0:
      return { op: 'create', args: { path, value: v, ...(pick(2) === 0 ? { key: text(pick) || 'k' } : {}) } };
    case 1:
      return { op: 'update', args: { path: `${path}/${pick(4)}`, value: v, merge: pick(2) === 0 } };
    case 2:
      return { op: 'delete', args: { path: `${path}/${pick(4)}` } };
    case 3:
      return { op: 'move', args: { from: `${path}/${pick(3)}`, to: `/list/${pick(3)}` } };
    default:
      return { op: 'copy', args: { from: `${path}/${pick(3)}`, to: `/map/k${pick(9)}` } };
  }
}

const CONTEXTS = [[], ['items'], ['items', '3'], ['map'], ['list']];

describe('jsonBytes', () => {
  it('is the UTF-8 length of the compact JSON text', () => {
    const pick = random(SEED);
    for (let i = 0; i < RUNS * 10; i += 1) {
      const v = value(pick, 0);
      expect(jsonBytes(v), JSON.stringify(v)).toBe(real(v));
    }
  });
});

describe('jsonBytesDelta', () => {
  it('equals the change of the size for every write, on every context', () => {
    let writes = 0;
    for (let seed = SEED; seed < SEED + RUNS; seed += 1) {
      const pick = random(seed);
      let data: JsonValue = sample(pick);
      for (let step = 0; step < 30; step += 1) {
        const at = CONTEXTS[pick(CONTEXTS.length)] as string[];
        const node = nodeAtTokens(data, at);
        if (node === undefined || typeof node !== 'object' || node === null) continue;
        const { op, args } = randomWrite(pick);
        let context: JsonValue;
        try {
          context = executeWrite(op, node, args, {}).context;
        } catch {
          continue;
        }
        writes += 1;
        expect(jsonBytesDelta(node, context), `seed ${seed}, ${op} ${JSON.stringify(args)}`).toBe(
          real(context) - real(node),
        );
        data = deepFreeze(at.length === 0 ? context : replaceAt(data, at, context));
      }
    }
    expect(writes).toBeGreaterThan(RUNS * 2);
  });

  it('a copied but equal value, or a whole new document, is measured whole', () => {
    const before = deepFreeze({ a: [1, 2, 3], b: 'x' });
    expect(jsonBytesDelta(before, { a: [1, 2, 3], b: 'x' })).toBe(0);
    expect(jsonBytesDelta(before, ['中'])).toBe(real(['中']) - real(before));
    expect(jsonBytesDelta('short', 'a longer one')).toBe(7);
  });
});

/** `data` with the node at `at` replaced by `node`, sharing everything else (copy on write). */
function replaceAt(data: JsonValue, at: readonly string[], node: JsonValue): JsonValue {
  const [head, ...rest] = at;
  if (head === undefined) return node;
  if (Array.isArray(data)) {
    const copy = [...data];
    copy[Number(head)] = replaceAt(data[Number(head)] as JsonValue, rest, node);
    return copy;
  }
  const object = data as Obj;
  return { ...object, [head]: replaceAt(object[head] as JsonValue, rest, node) };
}
