// Pins custom tools as MCP tools on the control plane: an answer shaped as an MCP result (text,
// image, audio, embedded resource, resource link, structuredContent, isError) is the call's result
// as the tool made it, while any other object (even one with a `content` key) is JSON text as
// before; `ctx.progress` and `ctx.log` reach a caller that asked for them as NDJSON lines before
// the result (log lines at its level and above, secrets taken out), and cost nothing otherwise.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { customTool, customToolUser, type CustomToolUser } from './support/custom-tools.ts';

// Tool answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=';
const TOKEN_VALUE = 'sk-live-4f9a8b7c6d5e';

let t: TestApp;
let u: CustomToolUser;

beforeAll(async () => {
  t = await startTestApp({ customTool: { customToolTimeoutMs: 5_000 } });
  u = await customToolUser(t, { notes: [] });
  const secret = await t.call('POST', '/api/v2/secrets', {
    token: u.token,
    body: { name: 'API_TOKEN', value: TOKEN_VALUE },
  });
  expect(secret.status).toBe(201);
});
afterAll(() => t.close());

/** Calls a bound tool as a gateway does when its client listens: the NDJSON lines, result last. */
async function callStreamed(
  adiId: string,
  bindingId: string,
  wants: { progress?: boolean; log_level?: string },
  args: Record<string, unknown> = {},
): Promise<{ notices: Json[]; result: Json; contentType: string | null }> {
  const res = await fetch(`${t.baseUrl}/internal/adi/${adiId}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ aei_id: u.aeiId, binding_id: bindingId, arguments: args, ...wants }),
  });
  const lines = (await res.text())
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Json);
  const last = lines.pop();
  return { notices: lines, result: last.result, contentType: res.headers.get('content-type') };
}

/** Calls a bound tool without listening: the plain JSON result. */
async function callPlain(
  adiId: string,
  bindingId: string,
  args: Record<string, unknown> = {},
): Promise<Json> {
  const res = await t.call('POST', `/internal/adi/${adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: { aei_id: u.aeiId, binding_id: bindingId, arguments: args },
  });
  expect(res.status).toBe(200);
  return res.body;
}

describe('an answer shaped as an MCP result', () => {
  it('is the result: text, image, audio, embedded resources and a resource link, with structuredContent', async () => {
    const { adiId, bindingId } = await u.add(
      'rich',
      customTool(`export default () => ({
        content: [
          { type: 'text', text: 'Two pictures and a note' },
          { type: 'image', data: '${PNG}', mimeType: 'image/png', annotations: { audience: ['user'], priority: 0.5 } },
          { type: 'audio', data: '${WAV}', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'notes://1', mimeType: 'text/markdown', text: '# Note' } },
          { type: 'resource', resource: { uri: 'file:///tmp/a.bin', blob: 'AAEC' } },
          { type: 'resource_link', uri: 'https://example.com/report.pdf', name: 'report', mimeType: 'application/pdf', size: 1024 },
        ],
        structuredContent: { pictures: 2 },
      })`),
    );
    const result = await callPlain(adiId, bindingId);
    expect(result).toEqual({
      content: [
        { type: 'text', text: 'Two pictures and a note' },
        {
          type: 'image',
          data: PNG,
          mimeType: 'image/png',
          annotations: { audience: ['user'], priority: 0.5 },
        },
        { type: 'audio', data: WAV, mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'notes://1', mimeType: 'text/markdown', text: '# Note' } },
        { type: 'resource', resource: { uri: 'file:///tmp/a.bin', blob: 'AAEC' } },
        {
          type: 'resource_link',
          uri: 'https://example.com/report.pdf',
          name: 'report',
          mimeType: 'application/pdf',
          size: 1024,
        },
      ],
      structuredContent: { pictures: 2 },
    });
  });

  it('with isError is the tool’s own error result, audited as an error', async () => {
    const { adiId, bindingId } = await u.add(
      'own-error',
      customTool(
        `export default () => ({ content: [{ type: 'text', text: 'no such city' }], isError: true })`,
      ),
    );
    expect(await callPlain(adiId, bindingId)).toEqual({
      content: [{ type: 'text', text: 'no such city' }],
      isError: true,
    });
    const audit = await t.call('GET', `/api/v2/audit?tool_name=own-error`, { token: u.token });
    expect(audit.body.items[0]).toMatchObject({ tool_name: 'own-error', status: 'error' });
  });

  it('keeps its console lines in _meta, and its structuredContent is held to the output schema', async () => {
    const { adiId, bindingId } = await u.add(
      'schema',
      customTool(
        `export default (args) => { console.log('made it');
           return { content: [{ type: 'text', text: 'n=' + args.n }], structuredContent: { n: args.n } }; }`,
        {
          output_schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
        },
      ),
    );
    expect(await callPlain(adiId, bindingId, { n: 3 })).toEqual({
      content: [{ type: 'text', text: 'n=3' }],
      structuredContent: { n: 3 },
      _meta: { 'bindery/console': [{ level: 'log', message: 'made it' }] },
    });
    const wrong = await callPlain(adiId, bindingId, { n: 1.5 });
    expect(wrong.isError).toBe(true);
    expect(JSON.parse(wrong.content[0].text).error.code).toBe('UPSTREAM_FAILED');
  });

  it('has secrets taken out of its text, as any answer', async () => {
    const { adiId, bindingId } = await u.add(
      'leaky',
      customTool(
        `export default (args, ctx) => ({ content: [{ type: 'text', text: 'key ' + ctx.secrets.API_TOKEN }] })`,
        {
          secrets: ['API_TOKEN'],
        },
      ),
    );
    const result = await callPlain(adiId, bindingId);
    expect(result.content[0].text).not.toContain(TOKEN_VALUE);
    expect(result.content[0].text).toMatch(/^key \[secret/);
  });

  it('is told from data exactly: other keys, or items of no MCP type, keep the JSON text answer', async () => {
    for (const [name, answer] of [
      ['data-extra-key', { content: [{ type: 'text', text: 'a' }], total: 1 }],
      ['data-odd-type', { content: [{ type: 'paragraph', text: 'a' }] }],
      ['data-not-array', { content: 'text' }],
    ] as const) {
      const { adiId, bindingId } = await u.add(
        name,
        customTool(`export default () => (${JSON.stringify(answer)})`),
      );
      const result = await callPlain(adiId, bindingId);
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(answer) }]);
      expect(result.isError).toBeUndefined();
    }
  });
});

describe('ctx.progress and ctx.log', () => {
  let ids: { adiId: string; bindingId: string };
  beforeAll(async () => {
    ids = await u.add(
      'chatty',
      customTool(
        `export default (args, ctx) => {
          ctx.log('debug', 'starting');
          for (let i = 1; i <= 3; i++) ctx.progress(i, 3, 'step ' + i);
          ctx.log('info', { rows: 3, token: ctx.secrets.API_TOKEN });
          ctx.log('error', 'something odd');
          return { content: [{ type: 'text', text: 'done' }] };
        }`,
        { secrets: ['API_TOKEN'] },
      ),
    );
  });

  it('reach a caller that listens as NDJSON lines before the result, at its level and above', async () => {
    const { notices, result, contentType } = await callStreamed(ids.adiId, ids.bindingId, {
      progress: true,
      log_level: 'info',
    });
    expect(contentType).toMatch(/^application\/x-ndjson/);
    expect(notices).toEqual([
      { progress: { progress: 1, total: 3, message: 'step 1' } },
      { progress: { progress: 2, total: 3, message: 'step 2' } },
      { progress: { progress: 3, total: 3, message: 'step 3' } },
      { log: { level: 'info', data: { rows: 3, token: '[secret]' } } },
      { log: { level: 'error', data: 'something odd' } },
    ]);
    expect(result).toEqual({ content: [{ type: 'text', text: 'done' }] });
  });

  it('send log lines only when asked, and progress only when asked', async () => {
    const logs = await callStreamed(ids.adiId, ids.bindingId, { log_level: 'debug' });
    expect(logs.notices.map((line) => Object.keys(line)[0])).toEqual(['log', 'log', 'log']);
    expect(logs.notices[0]).toEqual({ log: { level: 'debug', data: 'starting' } });
    const progress = await callStreamed(ids.adiId, ids.bindingId, { progress: true });
    expect(progress.notices.map((line) => Object.keys(line)[0])).toEqual([
      'progress',
      'progress',
      'progress',
    ]);
    // Not listening: the plain JSON answer, the tool unchanged.
    expect(await callPlain(ids.adiId, ids.bindingId)).toEqual({ content: [{ type: 'text', text: 'done' }] });
  });

  it('are bounded: 100 progress reports and the latest at the end; 100 log lines and a marker', async () => {
    const { adiId, bindingId } = await u.add(
      'flood',
      customTool(`export default (args, ctx) => {
        for (let i = 1; i <= 500; i++) { ctx.progress(i, 500); ctx.log('info', 'line ' + i + ' ' + 'x'.repeat(20000)); }
        return 'ok';
      }`),
    );
    const { notices, result } = await callStreamed(adiId, bindingId, { progress: true, log_level: 'info' });
    expect(result.content[0].text).toBe('"ok"');
    const reports = notices.filter((line) => line.progress).map((line) => line.progress.progress);
    expect(reports).toHaveLength(101);
    expect(reports.slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(reports.at(-1)).toBe(500);
    const logs = notices.filter((line) => line.log).map((line) => line.log);
    expect(logs).toHaveLength(101);
    // A line over 8 KiB of JSON goes as its JSON text, cut.
    expect(logs[0].data).toMatch(/^"line 1 x+…$/);
    expect(Buffer.byteLength(logs[0].data)).toBeLessThanOrEqual(8 * 1024);
    expect(logs[100]).toEqual({
      level: 'warning',
      data: 'ctx.log: this call sends at most 100 lines; later ones are dropped',
    });
  });
});
