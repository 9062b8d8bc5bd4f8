// Pins how a custom tool that answers an MCP result fails when an item is not what MCP says it is
// (UPSTREAM_FAILED naming the item and the field, never a result a client would refuse), past the
// bounds (100 items; RESULT_LIMIT_BYTES for the whole result), and that wrong arguments to
// ctx.progress and ctx.log are a clear error inside the tool, which it may catch and go on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { customTool, customToolUser, type CustomToolUser } from './support/custom-tools.ts';

// Tool answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let t: TestApp;
let u: CustomToolUser;
let tools = 0;

beforeAll(async () => {
  t = await startTestApp({ customTool: { customToolTimeoutMs: 5_000 }, maxResultBytes: 64 * 1024 });
  u = await customToolUser(t, {});
});
afterAll(() => t.close());

/** Saves a tool answering `code`'s default export, calls it (listening to `wants`), answers the result. */
async function run(code: string, wants: Record<string, unknown> = {}): Promise<Json> {
  const { adiId, bindingId } = await u.add(`tool-${++tools}`, customTool(code));
  const res = await fetch(`${t.baseUrl}/internal/adi/${adiId}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ aei_id: u.aeiId, binding_id: bindingId, arguments: {}, ...wants }),
  });
  const text = await res.text();
  const lines = text.split('\n').filter((line) => line !== '');
  const last = JSON.parse(lines.at(-1) ?? 'null') as Json;
  return 'result' in last ? last.result : last;
}

function errorOf(result: Json): { code: string; message: string; details?: Json } {
  expect(result.isError).toBe(true);
  return JSON.parse(result.content[0].text).error;
}

describe('a bad item', () => {
  const cases: [string, string, RegExp][] = [
    ['text without text', `{ type: 'text' }`, /content\/0\/text is not a string/],
    [
      'image data not base64',
      `{ type: 'image', data: 'not base64!', mimeType: 'image/png' }`,
      /content\/0\/data is not base64/,
    ],
    [
      'image data badly padded',
      `{ type: 'image', data: 'AAE', mimeType: 'image/png' }`,
      /content\/0\/data is not base64/,
    ],
    [
      'image without a mimeType',
      `{ type: 'image', data: 'AAEC' }`,
      /content\/0\/mimeType is not a MIME type/,
    ],
    [
      'image of an audio type',
      `{ type: 'image', data: 'AAEC', mimeType: 'audio/wav' }`,
      /not an image\/\* type/,
    ],
    [
      'audio of an image type',
      `{ type: 'audio', data: 'AAEC', mimeType: 'image/png' }`,
      /not an audio\/\* type/,
    ],
    [
      'a misspelt field',
      `{ type: 'image', data: 'AAEC', mimetype: 'image/png' }`,
      /content\/0\/mimetype is not a field of an image item/,
    ],
    [
      'resource without uri',
      `{ type: 'resource', resource: { text: 'a' } }`,
      /content\/0\/resource\/uri is not a URI/,
    ],
    [
      'resource with both text and blob',
      `{ type: 'resource', resource: { uri: 'a:b', text: 'a', blob: 'AAEC' } }`,
      /neither or both of text and blob/,
    ],
    [
      'resource blob not base64',
      `{ type: 'resource', resource: { uri: 'a:b', blob: '***' } }`,
      /resource\/blob is not base64/,
    ],
    [
      'resource link without name',
      `{ type: 'resource_link', uri: 'https://example.com' }`,
      /content\/0\/name is not a non-empty string/,
    ],
    [
      'resource link with a relative uri',
      `{ type: 'resource_link', uri: '/report.pdf', name: 'r' }`,
      /content\/0\/uri is not a URI/,
    ],
    [
      'annotations out of range',
      `{ type: 'text', text: 'a', annotations: { priority: 2 } }`,
      /annotations\/priority is not a number from 0 to 1/,
    ],
  ];
  for (const [what, item, message] of cases) {
    it(`fails the call UPSTREAM_FAILED naming it: ${what}`, async () => {
      const error = errorOf(await run(`export default () => ({ content: [${item}] })`));
      expect(error.code).toBe('UPSTREAM_FAILED');
      expect(error.message).toMatch(message);
      expect(error.details.field).toMatch(/^content\/0/);
    });
  }

  it('names the item by its index, and checks structuredContent and isError', async () => {
    const second = errorOf(
      await run(
        `export default () => ({ content: [{ type: 'text', text: 'ok' }, { type: 'text', text: 1 }] })`,
      ),
    );
    expect(second.message).toMatch(/content\/1\/text is not a string/);
    const structured = errorOf(
      await run(`export default () => ({ content: [], structuredContent: [1, 2] })`),
    );
    expect(structured.message).toMatch(/structuredContent is not an object/);
    const flag = errorOf(await run(`export default () => ({ content: [], isError: 'yes' })`));
    expect(flag.message).toMatch(/isError is not a boolean/);
  });
});

describe('bounds of a result', () => {
  it('carries at most 100 items', async () => {
    const hundred = await run(
      `export default () => ({ content: Array.from({ length: 100 }, (_, i) => ({ type: 'text', text: String(i) })) })`,
    );
    expect(hundred.content).toHaveLength(100);
    const error = errorOf(
      await run(
        `export default () => ({ content: Array.from({ length: 101 }, (_, i) => ({ type: 'text', text: String(i) })) })`,
      ),
    );
    expect(error.message).toMatch(/has 101 items, more than the 100/);
    expect(error.details).toMatchObject({ limit: 100 });
  });

  it('is RESULT_TOO_LARGE past RESULT_LIMIT_BYTES as a whole, an image as any answer', async () => {
    const error = errorOf(
      await run(
        `export default () => ({ content: [{ type: 'image', data: 'AAAA'.repeat(20000), mimeType: 'image/png' }] })`,
      ),
    );
    expect(error.code).toBe('RESULT_TOO_LARGE');
    expect(error.details).toMatchObject({ limit_bytes: 64 * 1024 });
  });
});

describe('wrong arguments to ctx.progress and ctx.log', () => {
  const cases: [string, RegExp][] = [
    [
      `ctx.progress('half')`,
      /TypeError: ctx\.progress\(progress, total, message\): progress is a finite number/,
    ],
    [`ctx.progress(NaN)`, /progress is a finite number/],
    [`ctx.progress(1, 'ten')`, /total is a finite number/],
    [`ctx.progress(1, 10, 42)`, /message is a string/],
    [
      `ctx.progress(2); ctx.progress(2)`,
      /RangeError: .*progress must grow with each report \(it was 2, now 2\)/,
    ],
    [
      `ctx.log('verbose', 'x')`,
      /ctx\.log\(level, data\): level is one of debug, info, notice, warning, error, critical, alert, emergency/,
    ],
    [`ctx.log('info')`, /data is JSON/],
    [`ctx.log('info', () => 1)`, /data is JSON/],
  ];
  for (const [call, message] of cases) {
    it(`throws in the tool whether or not anyone listens: ${call}`, async () => {
      for (const wants of [{}, { progress: true, log_level: 'debug' }]) {
        const error = errorOf(await run(`export default (args, ctx) => { ${call}; return 1; }`, wants));
        expect(error.code).toBe('UPSTREAM_FAILED');
        expect(error.message).toMatch(message);
      }
    });
  }

  it('data that is not JSON throws when the line is heard', async () => {
    const error = errorOf(
      await run(`export default (args, ctx) => { const a = {}; a.a = a; ctx.log('info', a); }`, {
        log_level: 'info',
      }),
    );
    expect(error.message).toMatch(/ctx\.log\(level, data\): data is not JSON/);
  });

  it('a tool may catch the error and go on; what it sent before stands', async () => {
    const result = await run(
      `export default (args, ctx) => {
        ctx.progress(5);
        try { ctx.progress(1); } catch (e) { return { content: [{ type: 'text', text: e.name }] }; }
      }`,
      { progress: true },
    );
    expect(result).toEqual({ content: [{ type: 'text', text: 'RangeError' }] });
  });
});
