// Pins serializeResult: the same text as JSON.stringify within the budget, a byte (not character)
// budget, and RESULT_TOO_LARGE raised early, after walking only part of a huge value and without
// ever building its full text.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serializeResult, type JsonValue } from '../src/index.ts';
import { opError } from './fixtures.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('serializeResult', () => {
  it('produces exactly the text JSON.stringify produces', () => {
    const values: JsonValue[] = [
      null,
      true,
      0,
      -1.5e-7,
      1e21,
      'quote " backslash \\ newline \n tab \t control \u0001 emoji 😀',
      [],
      {},
      { a: [1, { b: null }], 'weird key "/~': 'x', nested: { deeper: [[[]]] } },
      JSON.parse('{"__proto__": {"kept": "as data"}}') as JsonValue,
    ];
    for (const value of values) expect(serializeResult(value, 10_000)).toBe(JSON.stringify(value));
  });

  it('accepts a result of exactly maxBytes and refuses one byte more', () => {
    const value = { k: 'abc' }; // {"k":"abc"} is 11 bytes
    expect(serializeResult(value, 11)).toBe('{"k":"abc"}');
    const error = opError(() => serializeResult(value, 10));
    expect(error.code).toBe('RESULT_TOO_LARGE');
    expect(error.details).toEqual({ max_bytes: 10 });
    expect(error.message).toBe(
      'The result is larger than the 10-byte limit. Use `preview` to page through the data, ' +
        'or a narrower `query` that selects fewer items or fields.',
    );
  });

  it('counts UTF-8 bytes, not characters', () => {
    // "é" is 2 bytes and "😀" 4 bytes in UTF-8: "\"é😀\"" is 8 bytes for 5 UTF-16 units.
    expect(serializeResult('é😀', 8)).toBe('"é😀"');
    expect(opError(() => serializeResult('é😀', 7)).code).toBe('RESULT_TOO_LARGE');
  });

  it('stops walking a huge array soon after passing the budget', () => {
    const length = 1_000_000;
    let reads = 0;
    const huge = new Proxy(new Array<JsonValue>(length).fill('abcdefghij'), {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const error = opError(() => serializeResult(huge, 1_000));
    expect(error.code).toBe('RESULT_TOO_LARGE');
    // Each item takes 13 bytes ("abcdefghij" plus a comma), so the budget runs out near item 77.
    expect(reads).toBeLessThan(100);
  });

  it('refuses a single giant string without escaping or copying it', () => {
    const giant = 'x'.repeat(5_000_000);
    const stringify = vi.spyOn(JSON, 'stringify');
    const error = opError(() => serializeResult({ id: 1, blob: giant }, 1_000_000));
    expect(error.code).toBe('RESULT_TOO_LARGE');
    expect(stringify.mock.calls.some(([value]) => value === giant)).toBe(false);
  });
});
