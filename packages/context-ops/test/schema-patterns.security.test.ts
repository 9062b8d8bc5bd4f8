// Pins that `pattern` in users' schemas (item schemas, binding overrides) is cheap to check and
// means what JSON Schema says (an ECMA-262 regular expression): a pattern that makes JavaScript's
// RegExp backtrack exponentially checks a long value in milliseconds; a pattern whose compiled
// program is large (counted repeats) is refused when the schema is saved, quickly and by name; a
// string too long to check fails validation with a message instead of a slow check, and the checks
// of one validation stop at their time budget; `\s`, `.`, `\S` and classes keep JavaScript's meaning
// on the linear engine (non-ASCII white space included); constructs it cannot run are refused.
import { describe, expect, it } from 'vitest';
import {
  checkSchemaNarrowing,
  compileUserSchema,
  executeWrite,
  MAX_PATTERN_INPUT,
  OPERATIONS,
  PATTERN_TIME_BUDGET_MS,
  PATTERN_WORK_PER_CHECK,
  validateAdiConfig,
} from '../src/index.ts';
import { compilePattern, ECMA_WHITE_SPACE } from '../src/schema-pattern.ts';
import { opError } from './fixtures.ts';

const itemSchema = (pattern: string) => ({
  item_schema: { type: 'object', properties: { code: { type: 'string', pattern } } },
});

function write(code: string, pattern: string) {
  return () => executeWrite('create', [], { value: { code } }, itemSchema(pattern));
}

const queryOverride = (pattern: string) => ({
  type: 'object',
  properties: { query: { type: 'string', minLength: 1, pattern } },
  required: ['query'],
  additionalProperties: false,
});

/** `length` "a"s and "b"s in a pseudo-random order fixed by `seed` (no cache of states helps). */
function randomAb(length: number, seed = 1): string {
  let text = '';
  for (let i = 0; i < length; i += 1) {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += seed < 1_073_741_824 ? 'a' : 'b';
  }
  return text;
}

describe('schema patterns', () => {
  it('a catastrophic pattern checks a 10,000-character value at once (RegExp: 1 s at 26)', () => {
    opError(write('b', '^(a+)+$')); // compiles the schema first
    const started = performance.now();
    const error = opError(write(`${'a'.repeat(10_000)}!`, '^(a+)+$'));
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toContain('must match pattern');
    expect(write('aaaa', '^(a+)+$')()).toMatchObject({ result: { pointer: '/0' } });
  });

  it('ordinary patterns keep their meaning', () => {
    const cases: [string, string, boolean][] = [
      ['^[a-z0-9-]+$', 'order-42', true],
      ['^[a-z0-9-]+$', 'Order 42', false],
      ['^\\d{3}-\\d{4}$', '555-1234', true],
      ['^\\d{3}-\\d{4}$', '555-12345', false],
      ['^\\p{Lu}', 'Émile', true],
      ['^\\p{Lu}', 'émile', false],
      ['@', 'ada@example.com', true],
      ['^.{2}$', '😀é', true],
      ['^[A-Za-z0-9_.-]{1,64}$', 'tool_name.v2', true],
    ];
    for (const [pattern, value, ok] of cases) {
      if (ok) expect(() => write(value, pattern)(), `${pattern} ${value}`).not.toThrow();
      else expect(opError(write(value, pattern)).code, `${pattern} ${value}`).toBe('VALIDATION_FAILED');
    }
  });

  it('a pattern the linear engine cannot run is refused when the schema is saved, naming the construct', () => {
    const error = opError(() => validateAdiConfig('create', itemSchema('^(?=a)a')));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toBe(
      'config.item_schema cannot be used: pattern "^(?=a)a" uses a lookahead (?=...), which the linear-time engine cannot run',
    );
    expect(error.details).toMatchObject({ field: 'item_schema', pattern: '^(?=a)a' });
    const refused = opError(() =>
      checkSchemaNarrowing(OPERATIONS.query.inputSchema, queryOverride('(a)\\1')),
    );
    expect(refused.code).toBe('VALIDATION_FAILED');
    expect(refused.message).toContain('a backreference (\\1)');
    const refusals: [string, string][] = [
      ['(?<=a)b', 'a lookbehind'],
      ['a(?!b)', 'a negative lookahead'],
      ['(?<x>a)\\k<x>', 'a backreference (\\k<x>)'],
      ['(?i:a)', 'an inline modifier'],
      ['\\p{Script_Extensions=Greek}', 'script extensions'],
      ['\\p{Alphabetic}', 'the binary property'],
    ];
    for (const [pattern, construct] of refusals) {
      const { message } = opError(() => validateAdiConfig('create', itemSchema(pattern)));
      expect(message, pattern).toContain(construct);
    }
    // RE2's own syntax is not JavaScript's, so it is not a pattern (ajv's "regex" format says so).
    for (const pattern of ['(?P<x>a)', 'a\\z', '\\pL']) {
      expect(opError(() => validateAdiConfig('create', itemSchema(pattern))).code, pattern).toBe(
        'VALIDATION_FAILED',
      );
    }
  });
});

describe('pattern size and cost (each check bounded)', () => {
  it('the reported pattern, whose checks took seconds, is refused when saved, at once and by name', () => {
    const pattern = '(?:[a-c]|ab){700,999}$';
    for (const save of [
      () => validateAdiConfig('create', itemSchema(pattern)),
      () => checkSchemaNarrowing(OPERATIONS.query.inputSchema, queryOverride(pattern)),
    ]) {
      const started = performance.now();
      const error = opError(save);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.message).toContain(`pattern "${pattern}" is too complex to check quickly`);
      expect(error.message).toMatch(/compiles to (about )?[\d,]+ instructions, more than the 1,000 allowed/);
      expect(error.details).toMatchObject({ pattern });
    }
  });

  it('counted repeats that add up past the limit are refused; one within it is saved and works', () => {
    for (const pattern of ['^a{600}b{600}$', '^(?:(?:ab){40}){20}$', 'x{1001}', '(?:a{100}){11}']) {
      expect(opError(() => validateAdiConfig('create', itemSchema(pattern))).message, pattern).toContain(
        `pattern ${JSON.stringify(pattern)}`,
      );
    }
    expect(validateAdiConfig('create', itemSchema('^[a-z]{1,64}$'))).toBeDefined();
    expect(write('abc', '^[a-z]{1,64}$')()).toMatchObject({ result: { pointer: '/0' } });
    expect(opError(write('ABC', '^[a-z]{1,64}$')).message).toContain('must match pattern');
  });

  it('a string longer than the pattern may check fails validation, with the path, the limit and the pattern', () => {
    const long = 'a'.repeat(MAX_PATTERN_INPUT + 1);
    const started = performance.now();
    const error = opError(write(long, '^a+$'));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toBe(
      'The write breaks the item schema: /0/code must be at most 65,536 characters long to be checked ' +
        'against pattern "^a+$" (it has 65,537)',
    );
    // A larger program checks shorter strings: its limit is the work budget over its size.
    const big = compilePattern('^[a-z]{1,400}$');
    expect(big.maxInput).toBe(Math.floor(PATTERN_WORK_PER_CHECK / big.programSize));
    expect(big.maxInput).toBeLessThan(MAX_PATTERN_INPUT);
    expect(opError(write('a'.repeat(big.maxInput + 1), '^[a-z]{1,400}$')).message).toContain(
      `must be at most ${big.maxInput.toLocaleString('en')} characters`,
    );
  });

  it('a too-long string cannot slip through where a failed pattern would not count (not, patternProperties)', () => {
    const long = 'a'.repeat(MAX_PATTERN_INPUT + 1);
    const negated = compileUserSchema({ type: 'string', not: { pattern: '^b' } });
    expect(negated('abc')).toBe(true);
    expect(negated(long)).toBe(false);
    expect(negated.errors?.[0]?.message).toContain('has a string that must be at most 65,536 characters');
    const keys = compileUserSchema({ type: 'object', patternProperties: { '^a': { type: 'number' } } });
    expect(keys({ abc: 'not a number' })).toBe(false);
    expect(keys({ [long]: 'not a number' })).toBe(false);
  });

  it('one check at the limits is bounded work (the reported pattern took 8 s on 64 KiB)', () => {
    // A program that defeats RE2's cache of states, on the longest input it may check; and the
    // largest program allowed on the longest input it may check. The work (instructions times
    // characters) is capped by construction; the time is a loose guard for a loaded machine (about
    // 100 ms each when idle; the figures are in the query benchmark's neighbourhood, not here).
    for (const source of ['[ab]*a[ab]{20}$', `[ab]*a[ab]{${990}}$`]) {
      const pattern = compilePattern(source);
      expect(pattern.programSize * pattern.maxInput, source).toBeLessThanOrEqual(PATTERN_WORK_PER_CHECK);
      const input = randomAb(pattern.maxInput);
      const started = performance.now();
      pattern.test(input);
      expect(performance.now() - started, source).toBeLessThan(5_000);
    }
  });

  it('the checks of one validation stop at their time budget: LIMIT_EXCEEDED, not seconds', () => {
    const pattern = '[ab]*a[ab]{20}$';
    const schema = { item_schema: { type: 'object', additionalProperties: { type: 'string', pattern } } };
    const value = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`k${i}`, randomAb(MAX_PATTERN_INPUT, i + 1)]),
    );
    const started = performance.now();
    const error = opError(() => executeWrite('create', [], { value }, schema));
    const elapsed = performance.now() - started;
    expect(error.code).toBe('LIMIT_EXCEEDED');
    expect(error.details).toMatchObject({ limit: 'pattern_time', budget_ms: PATTERN_TIME_BUDGET_MS });
    expect(elapsed).toBeLessThan(PATTERN_TIME_BUDGET_MS + 4_000);
  });
});

describe('JavaScript meaning on the linear engine', () => {
  it('\\s matches non-ASCII white space and line terminators, as in JavaScript', () => {
    for (const char of ['\u00a0', '\u2003', '\u3000', '\ufeff', '\u2028', '\u000b', '\u1680', ' ', '\t']) {
      const code = `U+${char.codePointAt(0)!.toString(16).padStart(4, '0')}`;
      expect(compilePattern('^\\s$').test(char), code).toBe(true);
      expect(compilePattern('^\\S$').test(char), code).toBe(false);
      expect(compilePattern('^[\\s]$').test(char), code).toBe(true);
      expect(compilePattern('^[^\\s]$').test(char), code).toBe(false);
      expect(compilePattern('^[\\S]$').test(char), code).toBe(false);
    }
    expect(() => write('\u00a0', '^\\s$')()).not.toThrow();
    expect(opError(write('\u2003', '^\\S+$')).code).toBe('VALIDATION_FAILED');
  });

  it("the white space list is exactly what JavaScript's \\s matches, over every code point", () => {
    const listed = new Set<number>();
    for (const [low, high] of ECMA_WHITE_SPACE) for (let c = low; c <= high; c += 1) listed.add(c);
    const space = /^\s$/u;
    for (let c = 0; c <= 0x10ffff; c += 1) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      if (space.test(String.fromCodePoint(c)) !== listed.has(c)) {
        throw new Error(`U+${c.toString(16)}: JavaScript and the list disagree`);
      }
    }
  });

  it("answers as JavaScript's RegExp does on patterns and strings where RE2 differs", () => {
    const patterns = [
      '^\\s+$',
      '^\\S+$',
      '^.$',
      '^.+$',
      'a.b',
      '^[\\s\\d]+$',
      '^[^\\s]+$',
      '^[\\S\\d]+$',
      '^[\\W]+$',
      '^[^\\D]+$',
      '^\\w+$',
      '\\bword\\b',
      '\\Bor\\B',
      '^\\d+$',
      '^[]$',
      '^[^]$',
      '^a[^]b$',
      'end$',
      '^start',
      '^\\u00e9\\u{1F600}\\x41\\0$',
      '^\\cJ$',
      '^[\\p{L}\\p{Nd}]+$',
      '^\\P{Letter}+$',
      '^\\p{Script=Greek}+$',
      '^\\p{ASCII}+$',
      '^[^\\p{ASCII}]$',
      '^a{2,3}?$',
      '^(?:ab|a)+?$',
      '^(x)(?<name>y)$',
      '^[\\-\\]\\\\^]+$',
      '^\\/\\.\\*\\$\\^$',
    ];
    const strings = [
      '',
      ' ',
      '\u00a0',
      '\u2003\u3000',
      '\r',
      '\n',
      '\u2028',
      '\u2029',
      '\u0085',
      'a\rb',
      'a\nb',
      'axb',
      'a word here',
      'sword',
      'words',
      'ab',
      'é',
      '😀',
      '123',
      '١٢٣',
      'ΑΒΓ',
      'abc',
      'aa',
      'aaa',
      'aaaa',
      'xy',
      '-]\\^',
      '/.*$^',
      'the end',
      'start here',
      'é😀A\u0000',
      '\n',
      'Ab1',
      'a\u00a0b',
    ];
    for (const source of patterns) {
      const javascript = new RegExp(source, 'u');
      const linear = compilePattern(source);
      for (const text of strings) {
        expect(linear.test(text), `${source} on ${JSON.stringify(text)}`).toBe(javascript.test(text));
      }
    }
  });
});
