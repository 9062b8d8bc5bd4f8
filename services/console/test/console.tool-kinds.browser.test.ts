// The custom and HTTP tool forms in a real headless Chromium against a real control plane: a custom
// tool written in the form, run before it is saved with arguments typed in the form made from its
// input schema (its result and console shown), a syntax error shown with its line and column (and
// the caret taken there), then created and listed; an HTTP tool to a loopback URL created and
// listed (with a secret header), and the server's refusal of a bad URL template shown as it said it. Both forms fit 390 px.
// No uncaught error nor console error. The custom tool form after a run is docs/console/custom-tool.png.
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logIn, openPage, watchErrors } from './support/browser.ts';
import { ADMIN_TOKEN, startControlPlane, type ControlPlane } from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));

const GOOD_CODE = `export default async function (args, ctx) {
  console.log('greeting', args.name);
  console.warn('about to answer');
  return { greeting: \`Hello, \${args.name}!\`, letters: args.name.length };
}
`;
const BAD_CODE = `export default async function (args, ctx) {
  const total = ;
  return total;
}
`;

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let api: Server;
let apiPort: number;

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  // The API the HTTP tool points at (loopback: only saved here, the SSRF guard refuses it at call time).
  api = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'i1', name: 'widget' }));
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  apiPort = (api.address() as AddressInfo).port;
  cp = await startControlPlane();
  await cp.admin('POST', '/api/v2/secrets', { name: 'API_TOKEN', value: 'tok-for-the-console-test' });
  ({ browser, page, errors } = await openPage());
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
  await new Promise((resolve) => api?.close(resolve));
});

async function toolNames(): Promise<string[]> {
  return page.locator('table tbody tr td:first-child strong').allTextContents();
}

describe('the tool forms', () => {
  it('logs in and opens Tools', async () => {
    await logIn(page, cp.url, ADMIN_TOKEN);
    await page.getByRole('navigation').getByRole('link', { name: 'Tools' }).click();
    await page.getByRole('heading', { name: 'Tools (ADIs)' }).waitFor();
  });

  it('runs a custom tool before it is saved: result, console lines and duration', async () => {
    await page.getByRole('button', { name: 'New custom tool' }).click();
    const form = page.getByRole('form', { name: 'New custom tool' });
    await form.getByLabel('Tool name').fill('greet_people');
    await form.getByLabel('Description', { exact: true }).fill('Greets someone by name.');
    await form.getByLabel('Code').fill(GOOD_CODE);
    const trial = form.getByRole('region', { name: 'Try it' });
    // The template's input schema has one string property, `name`: the form shows it.
    await trial.getByLabel('name', { exact: true }).fill('Ada');
    await trial.getByRole('button', { name: 'Run with these arguments' }).click();
    const result = trial.getByTestId('trial-result');
    await result.waitFor();
    expect(await result.textContent()).toContain('"Hello, Ada!"');
    expect(await result.textContent()).toContain('ok');
    const lines = await trial.getByTestId('trial-console').locator('li').allTextContents();
    expect(lines).toEqual(['log greeting Ada', 'warn about to answer']);
    expect(await trial.getByTestId('trial-duration').textContent()).toMatch(/^\d+ ms$/);
    // Nothing was saved by the run.
    expect(await toolNames()).toEqual([]);
    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: `${SCREENSHOTS}custom-tool.png`, fullPage: true });
  });

  it('shows a syntax error’s line and column, and takes the caret there', async () => {
    const form = page.getByRole('form', { name: 'New custom tool' });
    const code = form.getByLabel('Code');
    await code.fill(BAD_CODE);
    const trial = form.getByRole('region', { name: 'Try it' });
    errors.expectFailedRequest(400);
    await trial.getByRole('button', { name: 'Run with these arguments' }).click();
    const alert = trial.getByTestId('trial-error').getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('syntax error (line 2, column 17)');
    expect(await trial.getByTestId('trial-result').count()).toBe(0);
    await trial.getByRole('button', { name: 'Go to line 2, column 17' }).click();
    const caret = await code.evaluate((area: HTMLTextAreaElement) => ({
      focused: document.activeElement === area,
      before: area.value.slice(0, area.selectionStart),
    }));
    expect(caret.focused).toBe(true);
    expect(caret.before.split('\n')).toHaveLength(2);
    expect(caret.before.split('\n')[1]).toBe('  const total = ');
  });

  it('creates the custom tool and lists it', async () => {
    const form = page.getByRole('form', { name: 'New custom tool' });
    await form.getByLabel('Code').fill(GOOD_CODE);
    await form.getByRole('button', { name: 'Create tool' }).click();
    await form.getByRole('status').filter({ hasText: 'Created greet_people' }).waitFor();
    await expect.poll(toolNames).toContain('greet_people');
    const saved = await cp.admin('GET', '/api/v2/adis?kind=custom');
    expect(saved.body.items).toHaveLength(1);
    expect(saved.body.items[0]).toMatchObject({
      name: 'greet_people',
      description: 'Greets someone by name.',
      config: { code: GOOD_CODE },
    });
    await form.getByRole('button', { name: 'Close' }).click();
  });

  it('creates an HTTP tool to a loopback URL with a path argument and a secret header, and lists it', async () => {
    await page.getByRole('button', { name: 'New HTTP tool' }).click();
    const form = page.getByRole('form', { name: 'New HTTP tool' });
    await form.getByLabel('Tool name').fill('get_item');
    await form.getByLabel('URL template').fill(`http://127.0.0.1:${apiPort}/items/{id}`);
    await form.getByRole('button', { name: 'Add path argument {id}' }).click();
    const argument = form.getByRole('group', { name: 'Argument 1' });
    expect(await argument.getByLabel('Goes in').inputValue()).toBe('path');
    await form.getByRole('button', { name: 'Add an argument' }).click();
    const second = form.getByRole('group', { name: 'Argument 2' });
    await second.getByLabel('Name', { exact: true }).fill('fields');
    await second.getByLabel('Goes in').selectOption('query');
    expect(JSON.parse((await form.getByTestId('derived-schema').textContent()) ?? '')).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, fields: { type: 'string' } },
      required: ['id'],
      additionalProperties: false,
    });
    await form.getByRole('button', { name: 'Add a secret header' }).click();
    const header = form.getByRole('group', { name: 'Secret header 1' });
    expect(await header.getByLabel('Secret', { exact: true }).inputValue()).toBe('API_TOKEN');
    await form.getByRole('button', { name: 'Add a header' }).click();
    const plain = form.getByRole('group', { name: 'Header 1', exact: true });
    await plain.getByLabel('Header name').fill('Accept');
    await plain.getByLabel('Value').fill('application/json');
    await form.getByLabel('Timeout (ms)').fill('5000');
    await form.getByLabel('JMESPath on the answer').fill('name');
    await form.getByRole('button', { name: 'Create tool' }).click();
    await form.getByRole('status').filter({ hasText: 'Created get_item' }).waitFor();
    await expect.poll(toolNames).toContain('get_item');
    const saved = await cp.admin('GET', '/api/v2/adis?kind=http');
    expect(saved.body.items[0]).toMatchObject({
      name: 'get_item',
      config: {
        method: 'GET',
        url: `http://127.0.0.1:${apiPort}/items/{id}`,
        params: [
          { name: 'id', in: 'path', type: 'string' },
          { name: 'fields', in: 'query', type: 'string' },
        ],
        headers: {
          Accept: 'application/json',
          Authorization: 'Bearer {{secret.API_TOKEN}}',
        },
        timeout_ms: 5000,
        result_path: 'name',
      },
    });
  });

  it('shows the server’s refusal of a bad URL template', async () => {
    const form = page.getByRole('form', { name: 'New HTTP tool' });
    const url = `http://127.0.0.1:${apiPort}/items/{id`;
    await form.getByLabel('Tool name').fill('get_item_again');
    await form.getByLabel('URL template').fill(url);
    const expected = await cp.admin(
      'POST',
      '/api/v2/adis',
      { kind: 'http', method: 'GET', url, name: 'get_item_again' },
      true,
    );
    expect(expected.status).toBe(400);
    errors.expectFailedRequest(400);
    await form.getByRole('button', { name: 'Create tool' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(expected.body.error.message);
    expect(await toolNames()).not.toContain('get_item_again');
  });

  it('fits both forms in 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('button', { name: 'New custom tool' }).click();
    await page.getByRole('form', { name: 'New custom tool' }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(overflow).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
