// Pins the one bearer-token check every configured secret goes through (INTERNAL_TOKEN, OPS_TOKEN,
// METRICS_TOKEN): only "Bearer <secret>" passes; other tokens, prefixes, extensions, other schemes
// and missing headers do not.
import { describe, expect, it } from 'vitest';
import { bearerToken } from '@bindery/contracts';
import { bearerTokenCheck } from '../src/index.ts';

const SECRET = 'a-configured-secret-0001';

describe('bearerTokenCheck', () => {
  const matches = bearerTokenCheck(SECRET);

  it('accepts the secret as a bearer token, whatever the scheme case', () => {
    expect(matches(`Bearer ${SECRET}`)).toBe(true);
    expect(matches(`bearer ${SECRET}`)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['another token', 'Bearer a-configured-secret-0002'],
    ['a prefix', `Bearer ${SECRET.slice(0, -1)}`],
    ['an extension', `Bearer ${SECRET}0`],
    ['another scheme', `Basic ${SECRET}`],
    ['the bare secret', SECRET],
    ['two tokens', `Bearer ${SECRET} ${SECRET}`],
  ])('refuses %s', (_what, header) => {
    expect(matches(header)).toBe(false);
  });
});

describe('bearerToken', () => {
  it('reads the token of a bearer header only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
