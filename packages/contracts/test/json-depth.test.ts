// Pins the raw-text depth check both services run before parsing a body: containers are counted
// outside strings only (quotes, escapes and brackets inside strings do not count), the limit is
// inclusive, and hostile input (100,000 levels, endless backslashes) costs one pass and no stack.
import { describe, expect, it } from 'vitest';
import { JSON_ENVELOPE_DEPTH, MAX_BODY_DEPTH, MAX_JSON_DEPTH, jsonNestsDeeperThan } from '../src/index.ts';

const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);

describe('jsonNestsDeeperThan', () => {
  it('counts containers: a scalar is 0 deep, [] is 1, {"a":[1]} is 2', () => {
    expect(jsonNestsDeeperThan('1', 0)).toBe(false);
    expect(jsonNestsDeeperThan('[]', 0)).toBe(true);
    expect(jsonNestsDeeperThan('[]', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":[1]}', 1)).toBe(true);
    expect(jsonNestsDeeperThan('{"a":[1]}', 2)).toBe(false);
  });

  it('the limit is inclusive and siblings do not add up', () => {
    expect(jsonNestsDeeperThan(nested(64), 64)).toBe(false);
    expect(jsonNestsDeeperThan(nested(65), 64)).toBe(true);
    const siblings = `[${Array.from({ length: 100 }, () => nested(10)).join(',')}]`;
    expect(jsonNestsDeeperThan(siblings, 11)).toBe(false);
    expect(jsonNestsDeeperThan(siblings, 10)).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonNestsDeeperThan('["[[[[{{{{"]', 1)).toBe(false);
    expect(jsonNestsDeeperThan('["a\\"[[[[", "]]]"]', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"k\\\\":[[1]]}', 2)).toBe(true); // `\\` ends before the quote
    expect(jsonNestsDeeperThan('{"k\\\\\\"[[":[1]}', 2)).toBe(false); // `\\\"` is an escaped quote
    expect(jsonNestsDeeperThan('["\\u005b\\u005b"]', 1)).toBe(false);
  });

  it('an unterminated string ends the scan (the parser refuses the text)', () => {
    expect(jsonNestsDeeperThan('[["abc', 1)).toBe(true);
    expect(jsonNestsDeeperThan('["abc [[[[', 1)).toBe(false);
  });

  it('hostile input costs one pass', () => {
    const started = performance.now();
    expect(jsonNestsDeeperThan(nested(100_000), MAX_BODY_DEPTH)).toBe(true);
    expect(jsonNestsDeeperThan(`["${'\\\\'.repeat(500_000)}"]`, 1)).toBe(false);
    expect(jsonNestsDeeperThan(`["${'\\"'.repeat(500_000)}"]`, 1)).toBe(false);
    expect(jsonNestsDeeperThan(`[${'"x",'.repeat(200_000)}1]`, 1)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('the body limit leaves room for the deepest envelope around a value at the data limit', () => {
    expect(MAX_BODY_DEPTH).toBe(MAX_JSON_DEPTH + JSON_ENVELOPE_DEPTH);
    // A batched progressive execute_apis call whose parameter value is as deep as allowed.
    const value = JSON.parse(nested(MAX_JSON_DEPTH)) as unknown;
    const body = JSON.stringify([
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'execute_apis',
          arguments: { executions: [{ api_name: 'x', parameters: { value } }] },
        },
      },
    ]);
    expect(jsonNestsDeeperThan(body, MAX_BODY_DEPTH)).toBe(false);
    expect(jsonNestsDeeperThan(body, MAX_BODY_DEPTH - 2)).toBe(true);
  });
});
