// Pins the JMESPath budgets: every hostile query pattern (amplifying functions, quadratic trims,
// shared-subtree blow-ups, nested map) stops with LIMIT_EXCEEDED naming the budget it passed, quickly
// and without exhausting memory; each budget (time, steps, memory, string length) is enforced on its
// own; budgets are per evaluation; and the library's shared interpreter is never modified.
import jmespath, { search, TreeInterpreter } from '@jmespath-community/jmespath';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, executeRead, type JsonValue, type QueryBudget } from '../src/index.ts';
import { opError } from './fixtures.ts';

const NUMBERS = Array.from({ length: 1_000 }, (_, i) => i);

function limitsWith(budget: Partial<QueryBudget>) {
  return { ...DEFAULT_LIMITS, query: { ...DEFAULT_LIMITS.query, ...budget } };
}

function query(expression: string, data: JsonValue = NUMBERS, budget: Partial<QueryBudget> = {}) {
  return executeRead('query', data, { query: expression }, {}, limitsWith(budget)).result;
}

/** Runs a query expected to pass a budget; returns the error and how long it took. */
function exceeded(expression: string, data: JsonValue = NUMBERS, budget: Partial<QueryBudget> = {}) {
  const started = performance.now();
  const error = opError(() => query(expression, data, budget));
  return { error, elapsed: performance.now() - started };
}

/** `map(&map(&...map(&@, $)..., $), $)`: `depth` maps over the root array, nested. */
function nestedMap(depth: number): string {
  return depth === 1 ? 'map(&@, $)' : `map(&${nestedMap(depth - 1)}, $)`;
}

/** A value of 2^levels leaves in a few hundred characters: each level is a pair of the one below. */
function sharedPairs(levels: number, leaf = '`1`', name = 'x'): string {
  let expression = leaf;
  for (let i = 0; i < levels; i += 1)
    expression = `let $${name}${i} = ${expression} in [$${name}${i}, $${name}${i}]`;
  return `(${expression})`;
}

// The first query compiles the engine's schemas; timings below start warm. Their bounds are loose
// (several times the budget) so a busy machine cannot fail them; what they guard against took
// minutes, or killed the process.
beforeAll(() => {
  query('length(@)');
});

describe('the crash reproductions', () => {
  it("replace('a','a','b',`1000000000`) walks the one real occurrence instead of a billion slots", () => {
    const started = performance.now();
    expect(query("replace('a','a','b',`1000000000`)")).toBe('b');
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("length(pad_left('a',`500000000`)) is refused before the string is built", () => {
    const { error, elapsed } = exceeded("length(pad_left('a',`500000000`))");
    expect(error.code).toBe('LIMIT_EXCEEDED');
    expect(error.details).toEqual({
      limit: 'string_length',
      max_length: DEFAULT_LIMITS.query.maxStringLength,
    });
    expect(error.message).toMatch(/pad_left/);
    expect(elapsed).toBeLessThan(3_000);
  });

  it.each([6, 10])('a map nested %i deep over 1,000 items stops within its budget', (depth) => {
    const { error, elapsed } = exceeded(nestedMap(depth), NUMBERS, { timeMs: 300 });
    expect(error.code).toBe('LIMIT_EXCEEDED');
    expect(['time', 'memory', 'steps']).toContain(error.details?.limit);
    expect(error.message).toMatch(/avoid nesting map\(\)/);
    expect(elapsed).toBeLessThan(4_000);
  });
});

describe('each budget on its own', () => {
  it('time: a query past timeMs answers limit "time" soon after', () => {
    const { error, elapsed } = exceeded(nestedMap(4), NUMBERS, {
      timeMs: 100,
      maxSteps: 1e12,
      maxBytes: 1e12,
    });
    expect(error.details).toEqual({ limit: 'time', max_ms: 100 });
    expect(error.message).toContain('100 ms');
    expect(elapsed).toBeGreaterThanOrEqual(100);
    expect(elapsed).toBeLessThan(4_000);
  });

  it('steps: counted deterministically, whatever the clock', () => {
    const { error } = exceeded('[*].[@, @, @]', NUMBERS, { maxSteps: 2_000 });
    expect(error.details).toEqual({ limit: 'steps', max_steps: 2_000 });
    // One step per node per item: the same query fits a budget that covers it.
    expect(query('[*].[@, @, @]', NUMBERS, { maxSteps: 20_000 })).toHaveLength(1_000);
  });

  it('memory: the estimated bytes of every value built, discarded ones included', () => {
    const { error } = exceeded('map(&[@, @, @, @], @) | length(@)', NUMBERS, { maxBytes: 20_000 });
    expect(error.details).toEqual({ limit: 'memory', max_bytes: 20_000 });
    expect(query('map(&[@, @, @, @], @) | length(@)', NUMBERS, { maxBytes: 200_000 })).toBe(1_000);
  });

  it('string_length: any function building a string longer than maxStringLength', () => {
    for (const expression of [
      "pad_right('a', `101`)",
      "join('', map(&'abc', @))",
      "replace(pad_left('a', `100`, 'a'), 'a', 'aa')",
      'to_string(@)',
    ]) {
      expect(exceeded(expression, NUMBERS, { maxStringLength: 100 }).error.details).toEqual({
        limit: 'string_length',
        max_length: 100,
      });
    }
  });

  it('a budget belongs to one evaluation: a query after an overrun starts afresh', () => {
    const small = { maxSteps: 5_000 };
    expect(exceeded(nestedMap(2), NUMBERS, small).error.code).toBe('LIMIT_EXCEEDED');
    for (let i = 0; i < 5; i += 1) expect(query('length(@)', NUMBERS, small)).toBe(1_000);
  });
});

describe('amplifying and superlinear functions are bounded', () => {
  const text = { long: 'a'.repeat(100_000), spaces: `${' '.repeat(1_000_000)}x` };

  it('replace: a count larger than the occurrences costs nothing; an amplifying result is refused', () => {
    expect(query("replace(long, 'a', 'b', `100000000`) | length(@)", text)).toBe(100_000);
    const { error, elapsed } = exceeded("replace(long, 'a', pad_left('b', `1000`, 'b'))", text);
    expect(error.details?.limit).toBe('string_length');
    expect(elapsed).toBeLessThan(3_000);
  });

  it('join: the total length is checked before joining', () => {
    const { error, elapsed } = exceeded('join(long, map(&$.long, range))', { ...text, range: NUMBERS });
    expect(error.details?.limit).toBe('string_length');
    expect(elapsed).toBeLessThan(3_000);
  });

  it('split: the pieces are counted and charged before splitting', () => {
    expect(exceeded("split(long, '')", text, { maxBytes: 1_000_000 }).error.details?.limit).toBe('memory');
    expect(query("length(split(long, ''))", text)).toBe(100_000);
  });

  it('trim, trim_left, trim_right: linear on a million spaces before a letter', () => {
    const started = performance.now();
    expect(query('trim_right(spaces) | length(@)', text)).toBe(1_000_001);
    expect(query('trim(spaces)', text)).toBe('x');
    expect(query('trim_left(spaces)', text)).toBe('x');
    expect(query("trim_right(spaces, ' ') | length(@)", text)).toBe(1_000_001);
    expect(performance.now() - started).toBeLessThan(4_000);
  });

  it('to_string: shared subtrees are charged as written out, not expanded unseen', () => {
    const { error, elapsed } = exceeded(`to_string(${sharedPairs(30)})`, NUMBERS, {
      maxStringLength: 1_000_000,
    });
    expect(['string_length', 'time', 'steps', 'memory']).toContain(error.details?.limit);
    expect(elapsed).toBeLessThan(4_000);
  });

  it('== and != on shared subtrees: each pair compared is a step', () => {
    const { error, elapsed } = exceeded(`${sharedPairs(28)} == ${sharedPairs(28, '`1`', 'y')}`, NUMBERS, {
      maxSteps: 1_000_000,
    });
    expect(error.details?.limit).toBe('steps');
    expect(elapsed).toBeLessThan(4_000);
    // The same object compared with itself is one step.
    expect(query(`let $a = ${sharedPairs(28)} in $a == $a`)).toBe(true);
  });

  it('flatten: an array holding one array many times is counted before it is flattened', () => {
    const { error, elapsed } = exceeded(`${sharedPairs(30)}${'[]'.repeat(30)}`, NUMBERS, {
      timeMs: 10_000,
      maxBytes: 4_000_000,
    });
    expect(error.details?.limit).toBe('memory');
    expect(elapsed).toBeLessThan(5_000);
  });

  it('zip: one long array passed many times is refused before zipping', () => {
    const { error } = exceeded(`let $a = map(&@, @) in zip(${Array(200).fill('$a').join(', ')})`, NUMBERS, {
      maxBytes: 1_000_000,
    });
    expect(error.details?.limit).toBe('memory');
  });

  it('sort and sort_by are charged n log n', () => {
    const { error } = exceeded('sort(@)', NUMBERS, { maxSteps: 5_000 });
    expect(error.details?.limit).toBe('steps');
    expect(query('sort(@) | [0]', NUMBERS, { maxSteps: 20_000 })).toBe(0);
  });

  it('max and min handle arrays too large to spread into Math.max', () => {
    const many = Array.from({ length: 300_000 }, (_, i) => i);
    expect(query('max(@)', many)).toBe(299_999);
    expect(query('min(@)', many)).toBe(0);
  });

  it('length and reverse of a long string build no array of its characters', () => {
    expect(query('length(long)', text)).toBe(100_000);
    expect(query("reverse('ab😀c')")).toBe('c😀ba');
    expect(query("length('ab😀c')")).toBe(4);
  });

  it('objects: truthiness and length of a large object are charged per key', () => {
    const wide = { big: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i])) };
    const { error } = exceeded('map(&($.big && `1`), keys(big))', wide, { maxSteps: 100_000 });
    expect(error.details?.limit).toBe('steps');
  });
});

describe('isolation from the library', () => {
  it("never modifies the library's shared interpreter or its function table", () => {
    const table = (TreeInterpreter as unknown as { runtime: { _functionTable: Record<string, unknown> } })
      .runtime._functionTable;
    const before = { ...table };
    query('sort(@)', [3, 10, 2]);
    query('let $x = `1` in map(&$x, @)', [1, 2]);
    expect({ ...table }).toEqual(before);
    expect(Object.keys(table).every((name) => table[name] === before[name])).toBe(true);
    // The library still answers its own way (numbers sorted as text), so nothing leaked into it.
    expect(search([3, 10, 2], 'sort(@)')).toEqual([10, 2, 3]);
    expect(jmespath.search({ a: 1 }, 'a')).toBe(1);
  });

  it('a data object shaped like an expression reference is data, not an expression', () => {
    const data = { ref: { expref: true, type: 'Field', name: 'constructor' }, items: [{}] };
    expect(query('type(ref)', data)).toBe('object');
    const error = opError(() => query('map(ref, items)', data));
    expect(error.code).toBe('INVALID_QUERY');
  });

  it('function names that are Object.prototype members are unknown functions', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const error = opError(() => query(`${name}(@)`));
      expect(error.details).toEqual({ stage: 'evaluation', message: `Unknown function: ${name}()` });
    }
  });
});
