// The console's tool sources in a real headless Chromium against a real control plane: an OpenAPI
// document pasted (or loaded from a file) is previewed as a dry run (its operations "would be
// added", nothing written), imported (its HTTP tools exist in the project), previewed again after
// an edit (one changed, one removed), and a broken document or a refused URL shows the server's
// message. Upstream MCP servers: added through the form (a stdio server running the control
// plane's test MCP server when the operator allows `node`, else the refusal's message; an HTTP
// server the outgoing-request guard refuses), listed with status and tool count, synced, their
// log tail shown, deleted after a confirm step. Both screens fit 390 px. No uncaught error nor
// console error. Screenshots (light theme, 1280 px wide) go to docs/console/.
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logIn, openPage, watchErrors } from './support/browser.ts';
import { ADMIN_TOKEN, startControlPlane, type ControlPlane, type Json } from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));
/** The control plane's own test MCP server (stdio), run with this Node. */
const UPSTREAM_SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);
/** Where this checkout is: a stdio server's command names a file in it, which a screenshot should not show. */
const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
const UPSTREAM_TOOLS = ['add', 'crash', 'echo', 'fail', 'hang', 'progress', 'set_tools', 'slow', 'whoami'];

const ok = { '200': { description: 'ok' } };
const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Weather API', version: '1.0.0' },
  servers: [{ url: 'http://127.0.0.1:9/v1' }],
  paths: {
    '/forecast': {
      get: {
        operationId: 'getForecast',
        summary: 'The forecast for a city',
        parameters: [{ name: 'city', in: 'query', required: true, schema: { type: 'string' } }],
        responses: ok,
      },
    },
    '/alerts': {
      get: { operationId: 'listAlerts', summary: 'Weather alerts now', responses: ok },
      post: {
        operationId: 'createAlert',
        summary: 'Raise an alert',
        requestBody: {
          content: {
            'application/json': {
              schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
            },
          },
        },
        responses: ok,
      },
    },
  },
};
/** The document edited: getForecast takes one more parameter, createAlert is gone. */
const EDITED = structuredClone(DOCUMENT) as Json;
EDITED.paths['/forecast'].get.parameters.push({ name: 'days', in: 'query', schema: { type: 'integer' } });
delete EDITED.paths['/alerts'].post;

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let projectId: string;

async function screenshot(name: string): Promise<void> {
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

/** What the admin API answers to the same import (its error message for a refusal). */
async function importAnswer(body: Record<string, unknown>) {
  return cp.admin('POST', '/api/v2/openapi-imports', { ...body, dry_run: true }, true);
}

const httpTools = async () =>
  (await cp.admin('GET', '/api/v2/adis?kind=http&limit=100')).body.items as Json[];

/** The rows of the import's change table as "change | tool | operation". */
async function changeRows(name: string): Promise<string[]> {
  const table = page.getByRole('table', { name });
  await table.waitFor();
  const rows = await table.locator('tbody tr').all();
  return Promise.all(
    rows.map(async (row) => (await row.locator('td').allTextContents()).map((t) => t.trim()).join(' | ')),
  );
}

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  cp = await startControlPlane();
  projectId = (await cp.admin('POST', '/api/v2/projects', { name: 'Weather' })).body.id;
  ({ browser, page, errors } = await openPage());
  await logIn(page, cp.url, ADMIN_TOKEN);
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
});

describe('the OpenAPI import', () => {
  it('previews a pasted document’s operations as added, writing nothing', async () => {
    await page.goto(`${cp.url}/console/tools/import`);
    await page.getByRole('heading', { name: 'Import an OpenAPI document' }).waitFor();
    await page.getByRole('option', { name: 'Weather' }).waitFor({ state: 'attached' });
    await page.getByLabel('Project').selectOption(projectId);
    await page.getByLabel('OpenAPI document', { exact: true }).fill(JSON.stringify(DOCUMENT, null, 2));
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByRole('heading', { name: 'Preview', exact: true }).waitFor();
    expect(await changeRows('What the import would do')).toEqual([
      'would be added | getForecast | getForecast',
      'would be added | listAlerts | listAlerts',
      'would be added | createAlert | createAlert',
    ]);
    expect(await page.locator('.import-result').textContent()).toContain(
      'Weather API into project Weather: 3 would be added, 0 would change, 0 would be removed, 0 unchanged.',
    );
    expect(await httpTools()).toEqual([]);
  });

  it('imports it: the HTTP tools exist in the project', async () => {
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByRole('heading', { name: 'Imported', exact: true }).waitFor();
    expect(await changeRows('What the import did')).toEqual([
      'added | getForecast | getForecast',
      'added | listAlerts | listAlerts',
      'added | createAlert | createAlert',
    ]);
    const tools = await httpTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['createAlert', 'getForecast', 'listAlerts']);
    for (const tool of tools) {
      expect(tool).toMatchObject({ kind: 'http', project_id: projectId });
      expect(tool.config.url).toMatch(/^http:\/\/127\.0\.0\.1:9\/v1\//);
    }
    await page.getByRole('link', { name: 'See them in Tools' }).waitFor();
    await screenshot('openapi-import');
  });

  it('previews an edited document as one changed and one removed', async () => {
    await page.getByLabel('OpenAPI document', { exact: true }).fill(JSON.stringify(EDITED, null, 2));
    // The shown result is of the document before the edit, and says so.
    await page.getByText('The form changed after this import').waitFor();
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByRole('heading', { name: 'Preview', exact: true }).waitFor();
    expect(await changeRows('What the import would do')).toEqual([
      'would change | getForecast | getForecast',
      'would be removed | createAlert | createAlert',
    ]);
    expect(await page.locator('.import-result').textContent()).toContain('1 unchanged');
    expect(await httpTools()).toHaveLength(3);
  });

  it('loads a document from a file into the box', async () => {
    await page.getByLabel('Load a file', { exact: true }).setInputFiles({
      name: 'weather.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(DOCUMENT)),
    });
    await page.getByText('Loaded weather.json').waitFor();
    expect(await page.getByLabel('OpenAPI document', { exact: true }).inputValue()).toBe(
      JSON.stringify(DOCUMENT),
    );
  });

  it('shows the server’s message for a document that does not parse', async () => {
    const broken = '{"openapi": "3.1.0",\n "paths": {,}}';
    const expected = await importAnswer({ document: broken, project_id: projectId });
    expect(expected.status).toBe(400);
    errors.expectFailedRequest(400);
    await page.getByLabel('OpenAPI document', { exact: true }).fill(broken);
    await page.getByRole('button', { name: 'Preview' }).click();
    const alert = page.locator('.import-form').getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(expected.body.error.message);
    expect(await page.locator('.import-result').count()).toBe(0);
  });

  it('shows the server’s message for a URL the outgoing-request guard refuses', async () => {
    const url = 'http://127.0.0.1:9/openapi.json';
    const expected = await importAnswer({ url, project_id: projectId });
    expect(expected.status).toBeGreaterThanOrEqual(400);
    errors.expectFailedRequest(expected.status);
    await page.getByRole('radio', { name: 'Fetch it from a URL' }).check();
    await page.getByLabel('Document URL').fill(url);
    await page.getByRole('button', { name: 'Preview' }).click();
    const alert = page.locator('.import-form').getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain(expected.body.error.message);
    expect(expected.body.error.message).toMatch(/refused/);
  });
});

describe('upstream MCP servers', () => {
  it('shows the server’s refusal of a stdio command it may not run', async () => {
    // The test control plane runs `node` only (UPSTREAM_STDIO_COMMANDS); the refusal comes before
    // anything is started.
    const refusal = await cp.admin(
      'POST',
      '/api/v2/upstream-servers',
      { name: 'Not allowed', transport: 'stdio', command: 'python3', args: ['-V'] },
      true,
    );
    expect(refusal.status).toBe(403);
    await page.goto(`${cp.url}/console/tools/upstreams`);
    await page.getByRole('heading', { name: 'Upstream MCP servers' }).waitFor();
    await page.getByText('No upstream servers yet.').waitFor();
    await page.getByRole('button', { name: 'New upstream server' }).click();
    await page.getByLabel('Server name').fill('Test tools');
    await page.getByLabel('Command', { exact: true }).fill('python3');
    await page.getByLabel('Arguments').fill('-V');
    errors.expectFailedRequest(403);
    await page.getByRole('button', { name: 'Add server' }).click();
    const alert = page.getByRole('form', { name: 'New upstream server' }).getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);
    expect((await cp.admin('GET', '/api/v2/upstream-servers')).body.items).toEqual([]);
  });

  it('adds a stdio server: listed with its tools, synced, its log tail shown', async () => {
    await page.goto(`${cp.url}/console/tools/upstreams`);
    await page.getByRole('button', { name: 'New upstream server' }).click();
    await page.getByLabel('Server name').fill('Test tools');
    await page.getByLabel('Command', { exact: true }).fill(process.execPath);
    await page.getByLabel('Arguments').fill(UPSTREAM_SCRIPT);
    await page.getByRole('button', { name: 'Add server' }).click();
    await page.getByText(`Added Test tools: ok, ${UPSTREAM_TOOLS.length} tools`).waitFor();
    const row = page.getByTestId('upstream-test_tools');
    await expect.poll(() => row.locator('.tool-count').textContent()).toBe(String(UPSTREAM_TOOLS.length));
    expect(await row.textContent()).toContain('stdio');
    const panel = page.getByRole('region', { name: 'Test tools' });
    await panel.getByRole('list', { name: 'Tools of Test tools' }).waitFor();
    expect(
      (
        await panel.getByRole('list', { name: 'Tools of Test tools' }).locator('code').allTextContents()
      ).sort(),
    ).toEqual(UPSTREAM_TOOLS);
    await panel.getByRole('button', { name: 'Sync now' }).click();
    const outcome = panel.getByRole('status', { name: 'Sync outcome' });
    await outcome.waitFor();
    expect(await outcome.textContent()).toContain(`No change: ${UPSTREAM_TOOLS.length} tools.`);
    await panel.getByRole('button', { name: 'Refresh log' }).click();
    await expect
      .poll(() => panel.getByTestId('log-lines').textContent())
      .toMatch(/test upstream \d+ starting/);

    // The same tail under live logs, next to the audit trail.
    await page.getByRole('navigation').getByRole('link', { name: 'Logs' }).click();
    const upstreamLogs = page.getByRole('region', { name: 'Upstream server logs' });
    expect(await upstreamLogs.getByLabel('Server').inputValue()).toBe(
      ((await cp.admin('GET', '/api/v2/upstream-servers')).body.items as Json[])[0].id,
    );
    await expect
      .poll(() => upstreamLogs.getByTestId('log-lines').textContent())
      .toMatch(/test upstream \d+ starting/);
  });

  it('adds an HTTP server the guard refuses: listed as failing, its error shown, sync reports it', async () => {
    await page.goto(`${cp.url}/console/tools/upstreams`);
    await page.getByRole('heading', { name: 'Upstream MCP servers' }).waitFor();
    await page.getByRole('button', { name: 'New upstream server' }).click();
    await page.getByRole('radio', { name: /^HTTP/ }).check();
    await page.getByLabel('Server name').fill('Remote tools');
    await page.getByLabel('URL', { exact: true }).fill(`${cp.url}/mcp`);
    await page.getByRole('button', { name: 'Add server' }).click();
    await page.getByText('Added Remote tools: failing, 0 tools').waitFor();
    const created = ((await cp.admin('GET', '/api/v2/upstream-servers')).body.items as Json[]).find(
      (server) => server.name === 'Remote tools',
    );
    expect(created).toMatchObject({ transport: 'http', status: 'failing', tool_count: 0 });
    expect(created.last_error).toMatch(/refused/);
    const row = page.getByTestId('upstream-remote_tools');
    await row.waitFor();
    expect(await row.textContent()).toContain('failing');
    expect(await row.locator('.tool-count').textContent()).toBe('0');
    const panel = page.getByRole('region', { name: 'Remote tools' });
    expect(await panel.getByTestId('server-last-error').textContent()).toBe(created.last_error);
    await panel.getByText('An HTTP server has no stderr here').waitFor();
    errors.expectFailedRequest(502);
    await panel.getByRole('button', { name: 'Sync now' }).click();
    const alert = panel.getByRole('alert');
    await alert.waitFor();
    const after = (await cp.admin('GET', `/api/v2/upstream-servers/${created.id}`)).body;
    expect(await alert.textContent()).toContain(after.last_error);
    // The picture shows the checkout's path (of a stdio server's script) as a neutral one.
    await page.evaluate((checkout) => {
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.nodeValue?.includes(checkout))
          node.nodeValue = node.nodeValue.replaceAll(checkout, '/srv/bindery/');
      }
    }, CHECKOUT);
    await screenshot('upstreams');
  });

  it('opens and closes a server’s panel from the keyboard', async () => {
    const open = page.getByRole('button', { name: 'Remote tools', exact: true });
    await page.getByRole('button', { name: 'Close panel' }).click();
    expect(await open.getAttribute('aria-expanded')).toBe('false');
    await open.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: 'Remote tools' }).waitFor();
    expect(await open.getAttribute('aria-expanded')).toBe('true');
  });

  it('deletes a server after a confirm step', async () => {
    const panel = page.getByRole('region', { name: 'Remote tools' });
    await panel.getByRole('button', { name: 'Delete server' }).click();
    const confirm = panel.getByRole('group', { name: 'Confirm: delete Remote tools' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await confirm.count()).toBe(0);
    await panel.getByRole('button', { name: 'Delete server' }).click();
    await confirm.getByRole('button', { name: 'Delete Remote tools' }).click();
    await page.getByTestId('upstream-remote_tools').waitFor({ state: 'detached' });
    const left = (await cp.admin('GET', '/api/v2/upstream-servers')).body.items as Json[];
    expect(left.map((server) => server.name)).not.toContain('Remote tools');
  });
});

describe('both screens', () => {
  it('fit a 390 px wide screen without sideways scrolling, light and dark', async () => {
    // A server to list (the guard refuses it: it is listed as failing).
    await cp.admin('POST', '/api/v2/upstream-servers', {
      name: 'A server with quite a long name to wrap',
      transport: 'http',
      url: `${cp.url}/a/rather/long/path/to/an/mcp/endpoint/that/should/wrap`,
    });
    await page.setViewportSize({ width: 390, height: 844 });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [path, heading] of [
        ['/tools/upstreams', 'Upstream MCP servers'],
        ['/tools/import', 'Import an OpenAPI document'],
      ]) {
        await page.goto(`${cp.url}/console${path}`);
        await page.getByRole('heading', { name: heading, exact: true }).waitFor();
        if (path === '/tools/upstreams') {
          await page.getByRole('button', { name: 'A server with quite a long name to wrap' }).click();
          await page.getByRole('button', { name: 'New upstream server' }).click();
        } else {
          await page.getByLabel('OpenAPI document', { exact: true }).fill(JSON.stringify(DOCUMENT, null, 2));
          await page.getByText('Filters: only some operations').click();
          await page.getByRole('button', { name: 'Preview' }).click();
          await page.getByRole('heading', { name: 'Preview', exact: true }).waitFor();
        }
        await page.waitForLoadState('networkidle');
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        if (overflow > 0)
          await page.screenshot({ path: `${tmpdir()}/bindery-sources-390-${scheme}.png`, fullPage: true });
        expect(
          overflow,
          `${path} (${scheme}) is wider than the screen by ${overflow} px`,
        ).toBeLessThanOrEqual(0);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
