// The admin console's serving: `/` redirects to it, its files and its single-page fallback under
// /console/, a clear 503 when it is not built, and the public OpenAPI document (/docs) without the
// gateways' internal API, which keeps working and keeps its whole document behind INTERNAL_TOKEN.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';

const INDEX =
  '<!doctype html><html><body><div id="root"></div><script src="/console/assets/app-1.js"></script></body></html>';
const SCRIPT = 'console.log("console");';

let build: string;
let t: TestApp;
let unbuilt: TestApp;

beforeAll(async () => {
  build = await mkdtemp(join(tmpdir(), 'bindery-console-'));
  await mkdir(join(build, 'assets'));
  await writeFile(join(build, 'index.html'), INDEX);
  await writeFile(join(build, 'assets', 'app-1.js'), SCRIPT);
  t = await startTestApp({ consoleDir: build });
  unbuilt = await startTestApp({ consoleDir: join(build, 'missing') });
});
afterAll(async () => {
  await t?.close();
  await unbuilt?.close();
  await rm(build, { recursive: true, force: true });
});

describe('the console', () => {
  it('is where / redirects (302)', async () => {
    for (const path of ['/', '/console']) {
      const answer = await fetch(`${t.baseUrl}${path}`, { redirect: 'manual' });
      expect(answer.status, path).toBe(302);
      expect(answer.headers.get('location'), path).toBe('/console/');
    }
  });

  it('serves its index, its assets and index.html for its own unknown paths', async () => {
    const index = await fetch(`${t.baseUrl}/console/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(await index.text()).toBe(INDEX);

    const script = await fetch(`${t.baseUrl}/console/assets/app-1.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(script.headers.get('cache-control')).toContain('immutable');
    expect(await script.text()).toBe(SCRIPT);

    for (const path of ['/console/exposures/aei_123', '/console/data/tables/tbl_1?x=1']) {
      const page = await fetch(`${t.baseUrl}${path}`);
      expect(page.status, path).toBe(200);
      expect(await page.text(), path).toBe(INDEX);
    }
    const missingAsset = await fetch(`${t.baseUrl}/console/assets/gone-2.js`);
    expect(missingAsset.status).toBe(404);
  });

  it('answers 503 with how to build it when there is no build, and the API still works', async () => {
    for (const path of ['/console/', '/console/exposures/x']) {
      const answer = await fetch(`${unbuilt.baseUrl}${path}`);
      expect(answer.status, path).toBe(503);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await answer.text()).toContain('pnpm --filter @bindery/console build');
    }
    expect((await unbuilt.call('GET', '/api/v2/me')).status).toBe(200);
    expect((await fetch(`${unbuilt.baseUrl}/`, { redirect: 'manual' })).status).toBe(302);
  });

  it('leaves the API and its 404s as they were', async () => {
    expect((await t.call('GET', '/api/v2/me')).status).toBe(200);
    const unknown = await t.call('GET', '/api/v2/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
  });
});

describe('the OpenAPI document', () => {
  it('lists no internal route in /openapi.json nor in /docs', async () => {
    for (const path of ['/openapi.json', '/docs/json']) {
      const doc = (await (await fetch(`${t.baseUrl}${path}`)).json()) as {
        paths: Record<string, unknown>;
        components: { securitySchemes: Record<string, unknown> };
      };
      const paths = Object.keys(doc.paths);
      expect(paths, path).toContain('/api/v2/aeis/{id}/tools');
      expect(
        paths.filter((p) => p.startsWith('/internal')),
        path,
      ).toEqual([]);
      // The sidebar's session tokens are public (its routes take them); the gateways' token is not.
      expect(Object.keys(doc.components.securitySchemes), path).toEqual(['adminToken', 'sidebarToken']);
    }
  });

  it('keeps the internal routes working, and their whole document behind INTERNAL_TOKEN', async () => {
    const auth = { authorization: `Bearer ${INTERNAL_TOKEN}` };
    const whole = await fetch(`${t.baseUrl}/internal/openapi.json`, { headers: auth });
    expect(whole.status).toBe(200);
    const paths = Object.keys(((await whole.json()) as { paths: Record<string, unknown> }).paths);
    expect(paths.some((p) => p.startsWith('/internal/'))).toBe(true);
    expect(paths).toContain('/api/v2/aeis/{id}/tools');
    expect((await fetch(`${t.baseUrl}/internal/openapi.json`)).status).toBe(401);
    // An internal route answers as before: an unknown api_key is a 404 to a gateway.
    const config = await fetch(`${t.baseUrl}/internal/aei/mcp/bnd_key_unknown/config`, { headers: auth });
    expect(config.status).toBe(404);
  });
});
