// Pins that `pattern` in users' schemas (item schemas, binding overrides) runs in linear time: a
// pattern that makes JavaScript's RegExp backtrack exponentially checks a long value in
// milliseconds; ordinary patterns keep their meaning; a pattern the linear engine cannot run
// (lookaround, backreferences) is refused when the schema is saved, with the engine's message.
import { describe, expect, it } from 'vitest';
import { checkSchemaNarrowing, executeWrite, OPERATIONS, validateAdiConfig } from '../src/index.ts';
import { opError } from './fixtures.ts';

const itemSchema = (pattern: string) => ({
  item_schema: { type: 'object', properties: { code: { type: 'string', pattern } } },
});

function write(code: string, pattern: string) {
  return () => executeWrite('create', [], { value: { code } }, itemSchema(pattern));
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
    ];
    for (const [pattern, value, ok] of cases) {
      if (ok) expect(() => write(value, pattern)(), `${pattern} ${value}`).not.toThrow();
      else expect(opError(write(value, pattern)).code, `${pattern} ${value}`).toBe('VALIDATION_FAILED');
    }
  });

  it('a pattern the linear engine cannot run is refused when the schema is saved', () => {
    const error = opError(() => validateAdiConfig('create', itemSchema('^(?=a)a')));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toContain('not a valid JSON Schema');
    const override = {
      type: 'object',
      properties: { query: { type: 'string', pattern: '(a)\\1' } },
      required: ['query'],
      additionalProperties: false,
    };
    expect(opError(() => checkSchemaNarrowing(OPERATIONS.query.inputSchema, override)).code).toBe(
      'VALIDATION_FAILED',
    );
  });
});
