// Pins tool parameters mirrored into headers (MCP 2026-07-28, SEP-2243): which marks a tool may
// carry (the spec's constraints, each refused with its reason), how a value is written into a
// header (the spec's own encoding table), how a header is read back (canonical Base64 of UTF-8
// only, no character a header may not carry), and when a call's headers match its arguments.
import { describe, expect, it } from 'vitest';
import {
  decodeHeaderValue,
  encodeHeaderValue,
  headerParamsOf,
  paramHeaderMismatch,
  paramHeaders,
  type HeaderParam,
} from '../src/param-headers.ts';

function params(schema: unknown): readonly HeaderParam[] {
  const scan = headerParamsOf(schema);
  if (!scan.ok) throw new Error(scan.reason);
  return scan.params;
}

function refusal(schema: unknown): string {
  const scan = headerParamsOf(schema);
  if (scan.ok) throw new Error('accepted');
  return scan.reason;
}

const REGION = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    query: { type: 'string' },
    limits: {
      type: 'object',
      properties: {
        rows: { type: 'integer', 'x-mcp-header': 'Rows' },
        dry: { type: 'boolean', 'x-mcp-header': 'Dry' },
      },
    },
  },
  required: ['region', 'query'],
};

describe('the marks of a tool', () => {
  it('finds each marked property through properties at any depth', () => {
    expect(params(REGION)).toEqual([
      { path: ['region'], header: 'Mcp-Param-Region', type: 'string' },
      { path: ['limits', 'rows'], header: 'Mcp-Param-Rows', type: 'integer' },
      { path: ['limits', 'dry'], header: 'Mcp-Param-Dry', type: 'boolean' },
    ]);
    expect(params({ type: 'object', properties: { q: { type: 'string' } } })).toEqual([]);
    expect(params(undefined)).toEqual([]);
  });

  it('refuses every mark the spec forbids, saying which rule', () => {
    const one = (property: Record<string, unknown>) => ({ type: 'object', properties: { p: property } });
    expect(refusal(one({ type: 'string', 'x-mcp-header': '' }))).toMatch(/non-empty string/);
    expect(refusal(one({ type: 'string', 'x-mcp-header': 7 }))).toMatch(/non-empty string/);
    expect(refusal(one({ type: 'string', 'x-mcp-header': 'Has Space' }))).toMatch(/token/);
    expect(refusal(one({ type: 'string', 'x-mcp-header': 'Line\r\nBreak' }))).toMatch(/token/);
    expect(refusal(one({ type: 'number', 'x-mcp-header': 'N' }))).toMatch(/not one of type number/);
    expect(refusal(one({ type: 'object', 'x-mcp-header': 'O' }))).toMatch(/not one of type object/);
    expect(refusal(one({ type: ['string', 'null'], 'x-mcp-header': 'T' }))).toMatch(/single type/);
    expect(
      refusal({
        type: 'object',
        properties: {
          a: { type: 'string', 'x-mcp-header': 'Same' },
          b: { type: 'string', 'x-mcp-header': 'sAME' },
        },
      }),
    ).toMatch(/used twice/);
    expect(refusal({ type: 'object', 'x-mcp-header': 'Root' })).toMatch(/root/);
    for (const [keyword, value] of [
      ['items', { type: 'string', 'x-mcp-header': 'I' }],
      ['anyOf', [{ type: 'string', 'x-mcp-header': 'A' }]],
      ['additionalProperties', { type: 'string', 'x-mcp-header': 'X' }],
      ['$defs', { d: { type: 'string', 'x-mcp-header': 'D' } }],
      ['if', { properties: { p: { type: 'string', 'x-mcp-header': 'F' } } }],
    ] as const) {
      expect(refusal({ type: 'object', [keyword]: value }), keyword).toMatch(/reached from the root/);
    }
  });

  it('stops on a schema nested past any sensible depth', () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100; i += 1) schema = { type: 'object', properties: { p: schema } };
    expect(refusal(schema)).toMatch(/deeper than/);
  });
});

describe('a value in a header', () => {
  it('is written as the spec table says', () => {
    expect(encodeHeaderValue('us-west1')).toBe('us-west1');
    expect(encodeHeaderValue('Hello, 世界')).toBe('=?base64?SGVsbG8sIOS4lueVjA==?=');
    expect(encodeHeaderValue(' padded ')).toBe('=?base64?IHBhZGRlZCA=?=');
    expect(encodeHeaderValue('line1\nline2')).toBe('=?base64?bGluZTEKbGluZTI=?=');
    expect(encodeHeaderValue('=?base64?literal?=')).toBe('=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=');
    expect(encodeHeaderValue('')).toBe('=?base64??=');
  });

  it('reads back what it wrote, and refuses what no client may send', () => {
    for (const value of ['us-west1', 'Hello, 世界', ' padded ', 'line1\nline2', '=?base64?literal?=', '']) {
      expect(decodeHeaderValue(encodeHeaderValue(value))).toBe(value);
    }
    // Not wrapped: taken as it is.
    expect(decodeHeaderValue('SGVsbG8=')).toBe('SGVsbG8=');
    expect(decodeHeaderValue('=?base64?SGVsbG8=')).toBe('=?base64?SGVsbG8=');
    // Wrapped, but not canonical Base64 (padding, alphabet) or not UTF-8.
    expect(decodeHeaderValue('=?base64?SGVsbG8?=')).toBeUndefined();
    // Padded, but the last character's unused bits are not zero ("Hello" is SGVsbG8=).
    expect(decodeHeaderValue('=?base64?SGVsbG9=?=')).toBeUndefined();
    expect(decodeHeaderValue('=?base64?SGVsbG8=?=')).toBe('Hello');
    expect(decodeHeaderValue('=?base64?SGVs!!!bG8=?=')).toBeUndefined();
    expect(decodeHeaderValue('=?base64?/w==?=')).toBeUndefined();
    // A plain value with a character a header may not carry (as Node hands over a raw byte).
    expect(decodeHeaderValue('caf\u00e9')).toBeUndefined();
  });
});

describe('the headers of a call', () => {
  const marked = params(REGION);

  it('carry each marked argument that is there and not null', () => {
    expect(paramHeaders(marked, { region: 'eu 1 ', query: 'q', limits: { rows: 42, dry: false } })).toEqual({
      'Mcp-Param-Region': '=?base64?ZXUgMSA=?=',
      'Mcp-Param-Rows': '42',
      'Mcp-Param-Dry': 'false',
    });
    expect(paramHeaders(marked, { region: null, query: 'q' })).toEqual({});
    // A value of another kind is left out rather than sent malformed.
    expect(paramHeaders(marked, { region: { not: 'a string' }, limits: { rows: 2 ** 60 } })).toEqual({});
  });

  it('match their arguments, or say what is wrong without repeating the values', () => {
    const from = (headers: Record<string, string>) => (name: string) => headers[name];
    const args = { region: 'us-west1', query: 'q', limits: { rows: 42 } };
    expect(
      paramHeaderMismatch(marked, args, from({ 'mcp-param-region': 'us-west1', 'mcp-param-rows': '42' })),
    ).toBe(undefined);
    // Integers compare as numbers.
    expect(
      paramHeaderMismatch(marked, args, from({ 'mcp-param-region': 'us-west1', 'mcp-param-rows': '42.0' })),
    ).toBeUndefined();
    expect(
      paramHeaderMismatch(
        marked,
        args,
        from({ 'mcp-param-region': 'us-west1', 'mcp-param-rows': '42.000000000000001' }),
      ),
    ).toMatch(/Mcp-Param-Rows header does not match/);
    // A header for an argument the call does not carry is not looked at.
    expect(
      paramHeaderMismatch(marked, { query: 'q' }, from({ 'mcp-param-region': 'anything' })),
    ).toBeUndefined();
    expect(paramHeaderMismatch(marked, args, from({ 'mcp-param-rows': '42' }))).toBe(
      'the Mcp-Param-Region header is missing (the arguments carry region)',
    );
    const wrong = paramHeaderMismatch(
      marked,
      args,
      from({ 'mcp-param-region': 'eu-1', 'mcp-param-rows': '42' }),
    );
    expect(wrong).toBe('the Mcp-Param-Region header does not match the value of region in the arguments');
    expect(wrong).not.toContain('eu-1');
    expect(
      paramHeaderMismatch(
        marked,
        args,
        from({ 'mcp-param-region': '=?base64?dXMtd2VzdDE?=', 'mcp-param-rows': '42' }),
      ),
    ).toMatch(/not canonical Base64/);
    expect(
      paramHeaderMismatch(
        marked,
        args,
        from({ 'mcp-param-region': '=?base64?dXMtd2VzdDE=?=', 'mcp-param-rows': '42' }),
      ),
    ).toBeUndefined();
  });
});
