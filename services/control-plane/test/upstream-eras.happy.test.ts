// Upstream servers of either MCP era are tool sources: a server of the 2026-07-28 era only and one
// of the 2025 era only, each over HTTP and over stdio (real servers, the v2 and v1 SDKs), are
// synced, called through a binding, and show the era the control plane found in their answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import {
  httpUpstream,
  modernHttpUpstream,
  modernStdioServerBody,
  stdioServerBody,
  type HttpUpstream,
} from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };
let legacyHttp: HttpUpstream;
let modernHttp: Awaited<ReturnType<typeof modernHttpUpstream>>;

beforeAll(async () => {
  t = await startTestApp({ upstreamStdioCommands: ['node'], allowedNetworks: ['127.0.0.0/8'] });
  user = await t.newUser('era-owner');
  legacyHttp = await httpUpstream();
  modernHttp = await modernHttpUpstream();
});
afterAll(async () => {
  await t?.close();
  await legacyHttp?.close();
  await modernHttp?.close();
});

const as = () => ({ token: user.token });

/** Creates the server, binds `tool` in a new AEI and calls it through the executor. */
async function createAndCall(body: object, tool: string, args: Record<string, unknown>) {
  const created = await t.call('POST', '/api/v2/upstream-servers', { ...as(), body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body.status, created.body.last_error).toBe('ok');
  const adi = created.body.tools.find((x: { upstream_name: string }) => x.upstream_name === tool);
  expect(adi, JSON.stringify(created.body.tools)).toBeDefined();
  const aei = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: `calls ${tool}` } });
  const bound = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
    ...as(),
    body: [{ adi_id: adi.adi_id }],
  });
  expect(bound.status, JSON.stringify(bound.body)).toBe(201);
  const binding = bound.body.items[0] as { id: string; adi_id: string };
  const result = await t.call('POST', `/internal/adi/${binding.adi_id}/execute`, {
    token: INTERNAL_TOKEN,
    body: { aei_id: aei.body.id, binding_id: binding.id, arguments: args },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  const shown = await t.call('GET', `/api/v2/upstream-servers/${created.body.id}`, as());
  expect(shown.status).toBe(200);
  return { created: created.body, result: result.body, shown: shown.body };
}

describe('a server of the 2026-07-28 era only', () => {
  it('over HTTP: synced and called statelessly, without initialize; shown as modern', async () => {
    const { created, result, shown } = await createAndCall(
      { name: 'Modern remote', transport: 'http', url: modernHttp.url },
      'shout',
      { text: 'quiet words' },
    );
    expect(created.tools.map((x: { upstream_name: string }) => x.upstream_name).sort()).toEqual([
      'greet_reader',
      'log_steps',
      'shout',
      'touch_news',
      'whoami',
    ]);
    expect(result.content).toEqual([{ type: 'text', text: 'QUIET WORDS' }]);
    expect(result.isError).toBeFalsy();
    expect(shown).toMatchObject({ status: 'ok', protocol_era: 'modern', protocol_version: '2026-07-28' });
    const methods = modernHttp.methods();
    expect(methods[0]).toBe('server/discover');
    expect(methods).toContain('tools/list');
    expect(methods).toContain('tools/call');
    expect(methods).not.toContain('initialize');
  });

  it('over stdio: synced and called, one process, shown as modern', async () => {
    const { result, shown } = await createAndCall(modernStdioServerBody('Modern local'), 'whoami', {});
    const text = (result.content as { type: string; text: string }[])[0]!.text;
    expect(JSON.parse(text)).toMatchObject({ era: 'modern' });
    expect(shown).toMatchObject({
      status: 'ok',
      protocol_era: 'modern',
      protocol_version: '2026-07-28',
      pool: { instances: 1 },
    });
  });
});

describe('a server of the 2025 era only', () => {
  it('over HTTP: falls back to initialize after the probe; synced, called, shown as legacy', async () => {
    const { result, shown } = await createAndCall(
      { name: 'Legacy remote', transport: 'http', url: legacyHttp.url },
      'add',
      { a: 20, b: 22 },
    );
    expect(result.structuredContent).toEqual({ sum: 42 });
    expect(shown).toMatchObject({ status: 'ok', protocol_era: 'legacy' });
    expect(shown.protocol_version).toMatch(/^2025-/);
    expect(legacyHttp.sessions()).toBeGreaterThanOrEqual(1);
  });

  it('over stdio: synced, called, shown as legacy', async () => {
    const { result, shown } = await createAndCall(stdioServerBody('Legacy local'), 'echo', {
      text: 'as before',
    });
    expect(result.content).toEqual([{ type: 'text', text: 'as before' }]);
    expect(shown).toMatchObject({ status: 'ok', protocol_era: 'legacy', pool: { instances: 1 } });
  });
});
