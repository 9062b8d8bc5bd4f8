// A new admin's first session, in the console alone, against a real control plane and a real
// gateway: log in, make a table, a context tool on it and an exposure (its key shown once and
// copied), bind the tool, see the server refuse an invalid input-schema override with its own
// message, rotate the key, then run the tool in the playground (the SDK's MCP client in the page,
// through the gateway, with a playground key) and watch its audit row arrive in live logs, open in
// another tab, without reloading. No uncaught error nor console error anywhere.
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logIn, openPage, watchErrors } from './support/browser.ts';
import { ADMIN_TOKEN, startControlPlane, type ControlPlane } from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));

let cp: ControlPlane;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let logs: Page;
let errors: ReturnType<typeof watchErrors>;
let logErrors: ReturnType<typeof watchErrors>;
const ids: { table?: string; aei?: string; binding?: string } = {};

const agentToolNames = () => page.locator('[data-testid="agent-tools"] .tool-name').allTextContents();

beforeAll(async () => {
  cp = await startControlPlane({ gateway: true });
  ({ browser, context, page, errors } = await openPage({ clipboardFor: cp.url }));
  logs = await context.newPage();
  logErrors = watchErrors(logs);
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
  expect(logErrors.problems, 'uncaught errors and console errors in the live logs tab').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
});

describe('a first session in the console', () => {
  it('logs in and makes a table from JSON typed in the page', async () => {
    await logIn(page, cp.url, ADMIN_TOKEN);
    await page.getByRole('navigation').getByRole('link', { name: 'Data' }).click();
    await page.getByRole('button', { name: 'New table' }).click();
    const form = page.getByRole('form', { name: 'New table' });
    await form.getByLabel('Table name').fill('inventory');
    const data = form.getByLabel('Data (JSON)');
    await data.fill('{"items": [{"sku": "a1", "name": "Anvil"},');
    await form.getByText(/^Not valid JSON/).waitFor();
    expect(await form.getByRole('button', { name: 'Create table' }).isDisabled()).toBe(true);
    await data.fill('{"items": [{"sku": "a1", "name": "Anvil"}, {"sku": "b2", "name": "Bell"}]}');
    await form.getByRole('button', { name: 'Create table' }).click();
    await page.getByRole('heading', { name: 'Table inventory' }).waitFor();
    ids.table = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() ?? '');
    const stored = await cp.admin('GET', `/api/v2/tables/${ids.table}`);
    expect(stored.body.data.items).toHaveLength(2);
  });

  it('makes a context tool on it, its path picked from the table’s data', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Tools' }).click();
    await page.getByRole('button', { name: 'New context tool' }).click();
    const form = page.getByRole('form', { name: 'New context tool' });
    await form.getByLabel('Operation').selectOption('get_all');
    // The path picked from the table's data, not typed.
    await form.getByText('Pick the path from the table’s data').click();
    await form.getByRole('button', { name: 'Use /items', exact: true }).click();
    expect(await form.getByLabel('JSON path').inputValue()).toBe('/items');
    await form.getByLabel('Tool name').fill('list_items');
    await form.getByRole('button', { name: 'Create tool' }).click();
    await form.getByText('Created').waitFor();
  });

  it('makes an exposure: its key shown once, copied with a button', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Exposures' }).click();
    await page.getByRole('button', { name: 'New exposure' }).click();
    const form = page.getByRole('form', { name: 'New exposure' });
    await form.getByLabel('Exposure name').fill('Warehouse');
    await form.getByLabel('Mode').selectOption('direct');
    await form.getByRole('button', { name: 'Create exposure' }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.locator('pre').first().textContent()) ?? '';
    expect(key).toMatch(/^bnd_key_/);
    await shown.getByRole('button', { name: 'Copy API key' }).click();
    await shown.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    // The list shows it (reloaded after the create).
    await page.getByRole('cell', { name: 'Warehouse' }).waitFor();
    await page.getByRole('link', { name: 'Warehouse' }).first().click();
    await page.getByRole('heading', { name: 'Warehouse' }).waitFor();
    ids.aei = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() ?? '');
    expect(await page.content()).not.toContain(key);
  });

  it('binds the tool: the agent sees it', async () => {
    await page.getByRole('button', { name: 'Bind a tool' }).click();
    const form = page.getByRole('form', { name: 'Bind a tool' });
    await form.getByRole('button', { name: 'Bind' }).click();
    await form.getByText('Bound as').waitFor();
    await expect.poll(agentToolNames).toEqual(['list_items']);
    const bindings = await cp.admin('GET', `/api/v2/aeis/${ids.aei}/bindings`);
    ids.binding = bindings.body.items[0].id;
  });

  it('shows the server’s message for an input-schema override that does not narrow the tool’s', async () => {
    const override = { type: 'object', properties: { colour: { type: 'string' } }, required: ['colour'] };
    const refusal = await cp.admin(
      'PATCH',
      `/api/v2/aeis/${ids.aei}/bindings/${ids.binding}`,
      { input_schema: override },
      true,
    );
    expect(refusal.status).toBe(400);
    const row = page.locator(`tr[data-binding="${ids.binding}"]`);
    await row.getByText('The tool’s own', { exact: true }).click();
    const form = row.getByRole('form', { name: `Input schema of binding ${ids.binding}` });
    await form.getByLabel('Override (JSON Schema)').fill('[1, 2]');
    await form.getByText('A schema is a JSON object.').waitFor();
    await form.getByLabel('Override (JSON Schema)').fill(JSON.stringify(override));
    errors.expectFailedRequest(400);
    await form.getByRole('button', { name: 'Save schema' }).click();
    const alert = row.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);
    const binding = await cp.admin('GET', `/api/v2/aeis/${ids.aei}/bindings/${ids.binding}`);
    expect(binding.body.input_schema).toBeNull();
  });

  it('rotates the key and copies the new one', async () => {
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.locator('pre').first().textContent()) ?? '';
    await shown.getByRole('button', { name: 'Copy API key' }).click();
    await shown.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await page.getByRole('button', { name: 'I stored it: hide the key' }).click();
  });

  it('makes a prompt with two arguments; a placeholder naming no argument shows the server’s message', async () => {
    await page.getByRole('button', { name: 'New prompt' }).click();
    const form = page.getByRole('form', { name: 'New prompt' });
    await form.getByLabel('Prompt name').fill('restock_note');
    await form.getByRole('button', { name: 'Add argument' }).click();
    await form.getByLabel('Argument 1 name').fill('sku');
    await form.getByLabel('Required').check();
    await form.getByRole('button', { name: 'Add argument' }).click();
    await form.getByLabel('Argument 2 name').fill('quantity');
    await form.getByLabel('Message 1 text').fill('Order {{quantity}} more of {{skew}}.');
    const refusal = await cp.admin(
      'POST',
      `/api/v2/aeis/${ids.aei}/prompts`,
      {
        name: 'restock_note',
        arguments: [{ name: 'sku', required: true }, { name: 'quantity' }],
        messages: [{ role: 'user', text: 'Order {{quantity}} more of {{skew}}.' }],
      },
      true,
    );
    expect(refusal.status).toBe(400);
    errors.expectFailedRequest(400);
    await form.getByRole('button', { name: 'Save prompt' }).click();
    await form.getByRole('alert').waitFor();
    expect(await form.getByRole('alert').textContent()).toContain(refusal.body.error.message);
    await form.getByLabel('Message 1 text').fill('Order {{quantity}} more of {{sku}}.');
    await form.getByRole('button', { name: 'Save prompt' }).click();
    await page.getByText('Saved restock_note.').waitFor();
    const prompts = await cp.admin('GET', `/api/v2/aeis/${ids.aei}/prompts`);
    expect(prompts.body.items.map((item: { name: string }) => item.name)).toEqual(['restock_note']);
  });

  it('runs the tool in the playground through the gateway; live logs in another tab show its row', async () => {
    await logIn(logs, cp.url, ADMIN_TOKEN);
    await logs.getByRole('navigation').getByRole('link', { name: 'Logs' }).click();
    await logs.locator('[data-testid="stream-state"][data-state="live"]').waitFor({ timeout: 10_000 });
    const rows = logs.locator('[data-testid="log-rows"] tbody tr', { hasText: 'list_items' });
    expect(await rows.count()).toBe(0);

    await page.getByRole('link', { name: 'Try its tools in the playground' }).click();
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    await page.getByTestId('playground-session').waitFor();
    expect(await page.getByLabel('Exposure').inputValue()).toBe(ids.aei);
    expect(await page.getByLabel('Tool', { exact: true }).inputValue()).toBe('list_items');
    await page.getByRole('button', { name: 'Run' }).click();
    const result = page.getByTestId('run-result');
    await result.waitFor();
    expect(await result.textContent()).toContain('Anvil');
    expect(await result.getByTestId('run-duration').textContent()).toMatch(/^\d+ ms$/);
    const audit = page.getByTestId('run-audit');
    await audit.getByTestId('audit-status').waitFor();
    expect(await audit.getByTestId('audit-status').textContent()).toBe('ok');
    expect(await audit.textContent()).toContain('@console');
    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: `${SCREENSHOTS}playground.png`, fullPage: true });

    // The other tab never reloaded: its stream brought the row.
    await rows.first().waitFor({ timeout: 10_000 });
    expect(await rows.first().textContent()).toContain('@console');
    const trail = await cp.admin('GET', `/api/v2/audit?aei_id=${ids.aei}&caller=%40console`);
    expect(trail.body.items.map((item: { tool_name: string }) => item.tool_name)).toEqual(['list_items']);
  });

  it('sends arguments from the JSON editor, and shows a tool error as such', async () => {
    await page.getByRole('button', { name: 'JSON', exact: true }).click();
    await page.getByLabel('Arguments (JSON)').fill('{"unexpected": 1}');
    await page.getByRole('button', { name: 'Run' }).click();
    const result = page.getByTestId('run-result');
    await result.getByText('tool error').waitFor();
    const audit = page.getByTestId('run-audit');
    await expect.poll(() => audit.getByTestId('audit-status').textContent()).not.toBe('ok');
  });

  it('reads a resource and gets a prompt with its arguments in the playground', async () => {
    const resources = page.getByRole('region', { name: 'Resources' });
    await resources.getByRole('button', { name: 'Read' }).first().click();
    const contents = page.getByTestId('resource-contents');
    await contents.waitFor();
    expect(await contents.textContent()).toContain('Anvil');

    const prompts = page.getByRole('region', { name: 'Prompts' });
    await prompts.getByLabel('sku').fill('a1');
    await prompts.getByLabel('quantity').fill('12');
    await prompts.getByRole('button', { name: 'Get prompt' }).click();
    const messages = page.getByTestId('prompt-messages');
    await messages.waitFor();
    expect(await messages.textContent()).toContain('Order 12 more of a1.');
  });

  it('fits a 390 px wide screen in the dark theme: playground, exposure, data, logs', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: 'dark' });
    const screens: [string, string][] = [
      [`/playground?exposure=${ids.aei}`, 'Playground'],
      [`/exposures/${ids.aei}`, 'Warehouse'],
      ['/data', 'Data'],
      ['/logs', 'Live logs'],
    ];
    for (const [path, heading] of screens) {
      await page.goto(`${cp.url}/console${path}`);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      if (path.startsWith('/playground')) await page.getByTestId('playground-session').waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${path} is wider than the screen by ${overflow} px`).toBeLessThanOrEqual(0);
      const background = await page.evaluate(
        () => getComputedStyle(document.documentElement).backgroundColor,
      );
      // The dark theme's --bg (#121418), not the light one's.
      expect(background, `${path} is not dark`).toBe('rgb(18, 20, 24)');
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
