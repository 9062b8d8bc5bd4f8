// Pins the finder of JSON the platform cannot store: NUL characters and unpaired surrogates in keys
// and values (surrogate pairs are fine), numbers that overflow to Infinity, with the pointer and a
// one-line message naming where; and the raw-text pre-test, which must never miss one (a long
// mantissa with a 2-digit exponent once slipped past it) and must stay linear on hostile text
// (long digit runs once took 16 s for 9 MB).
import { describe, expect, it } from 'vitest';
import { findUnstorable, mayHoldUnstorable, unstorableMessage } from '../src/index.ts';

describe('findUnstorable', () => {
  it('finds NULs and lone surrogates in values and keys, with their pointer', () => {
    expect(findUnstorable({ a: ['ok', 'x\u0000'] })).toEqual({
      pointer: '/a/1',
      in: 'value',
      problem: 'NUL',
    });
    expect(findUnstorable({ 'k/\u0000': 1 })).toEqual({ pointer: '/k~1\u0000', in: 'key', problem: 'NUL' });
    expect(findUnstorable(['\ud800'])?.problem).toBe('lone surrogate');
    expect(findUnstorable(['x\udc00'])?.problem).toBe('lone surrogate');
    expect(findUnstorable(['\udc00\ud800'])?.problem).toBe('lone surrogate'); // reversed pair
    expect(findUnstorable({ a: '\ud83d\ude00', b: 'plain', c: [1, null, true] })).toBeUndefined();
  });

  it('finds numbers that are not finite', () => {
    expect(findUnstorable(JSON.parse('{"n":[1e999]}'))).toEqual({
      pointer: '/n/0',
      in: 'value',
      problem: 'non-finite number',
    });
    expect(findUnstorable([1e308, -1e-300, 0])).toBeUndefined();
  });

  it('names the first one found from a base pointer, keys escaped, siblings that are fine left out', () => {
    const value = JSON.parse('{"ok":[1,"a",{"b":null}],"a":[true,{"x/y~":[0,-1e999]}],"later":1e999}');
    expect(findUnstorable(value, '/executions/0/parameters')).toEqual({
      pointer: '/executions/0/parameters/a/1/x~1y~0/1',
      in: 'value',
      problem: 'non-finite number',
    });
  });

  it('says where in one line, with the bad characters escaped', () => {
    const found = findUnstorable({ 'a\u0000': 1 })!;
    expect(unstorableMessage('body', found)).toBe(
      'body/a\\u0000: the key contains a NUL character (U+0000), which cannot be stored',
    );
  });
});

describe('mayHoldUnstorable', () => {
  it('is true for every text that parses to something unstorable', () => {
    for (const text of [
      '"\\u0000"',
      '{"\\uD800":1}',
      '"\\udfff"',
      '1e999',
      '-1E+400',
      '[2E+308]',
      '9'.repeat(400),
      // A 2-digit exponent after many digits: 1e310. Counting 309 digits alone missed it.
      `{"n":1${'0'.repeat(250)}e60}`,
      `-${'9'.repeat(210)}e99`,
      `${'9'.repeat(210)}.5E+99`,
    ]) {
      expect(mayHoldUnstorable(text), text.slice(0, 20)).toBe(true);
      expect(findUnstorable(JSON.parse(text)), text.slice(0, 20)).toBeDefined();
    }
  });

  it('is false for ordinary JSON, and for the largest numbers that stay finite without a long exponent', () => {
    expect(mayHoldUnstorable(JSON.stringify({ a: [1, 2.5, 'x', 1e10, 123456789012345], b: '\u00e9' }))).toBe(
      false,
    );
    for (const text of ['[1e99, -1E+99, 2.5e-10, 0.000001, 9007199254740993]', `${'9'.repeat(209)}e99`]) {
      expect(mayHoldUnstorable(text), text.slice(0, 20)).toBe(false);
      expect(findUnstorable(JSON.parse(text)), text.slice(0, 20)).toBeUndefined();
    }
  });

  it('stays linear on long runs of digits', () => {
    const runs = `[${Array.from({ length: 10_000 }, () => '9'.repeat(209)).join(',')}]`;
    const started = performance.now();
    expect(mayHoldUnstorable(runs)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
