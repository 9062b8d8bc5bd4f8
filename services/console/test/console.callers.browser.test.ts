// The console's callers, data-editing and tool-making screens in a real headless Chromium against a
// real control plane: personal MCP keys (created and rotated, each shown once with a copy button;
// revoked after a confirm step), the caller map (mapped, unmapped, an invalid name refused with the
// server's message), the connect page's stdio configs, a table's data edited and saved with its
// ETag (a change made meanwhile is shown as a conflict and overwrites nothing), a context tool made
// through the form and bound to an exposure from its page. No uncaught error nor console error on
// any screen. Screenshots of the callers and connect pages go to docs/console/.
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logIn, openPage, watchErrors } from './support/browser.ts';
import { ADMIN_TOKEN, startControlPlane, type ControlPlane, type Json } from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));
/** Where this checkout is: the stdio configs name a file in it, which a screenshot should not show. */
const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
const ids: { table?: string; support?: string; coding?: string; adi?: string } = {};

const CRM = {
  customers: [
    { id: 'c1', name: 'Ada Lovelace', tier: 'gold' },
    { id: 'c2', name: 'Alan Turing', tier: 'silver' },
  ],
  settings: { currency: 'EUR' },
};

async function screenshot(name: string): Promise<void> {
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

async function agentToolNames(): Promise<string[]> {
  return page.locator('[data-testid="agent-tools"] .tool-name').allTextContents();
}

async function clipboard(): Promise<string> {
  return page.evaluate(() => navigator.clipboard.readText());
}

async function tableNow(): Promise<{ version: number; data: Json }> {
  return (await cp.admin('GET', `/api/v2/tables/${ids.table}`)).body;
}

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  cp = await startControlPlane();
  ids.table = (await cp.admin('POST', '/api/v2/tables', { name: 'crm', data: CRM })).body.id;
  ids.support = (await cp.admin('POST', '/api/v2/aeis', { name: 'Support agent' })).body.id;
  ids.coding = (await cp.admin('POST', '/api/v2/aeis', { name: 'Coding agent' })).body.id;

  ({ browser, page, errors } = await openPage({ clipboardFor: cp.url }));
  await logIn(page, cp.url, ADMIN_TOKEN);
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
});

describe('personal MCP keys', () => {
  it('creates a key and shows it once, with a copy button', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Callers' }).click();
    await page.getByRole('heading', { name: 'Callers', exact: true }).waitFor();
    await page.getByText('No personal keys yet.').waitFor();
    await page.getByLabel('Key name').fill('laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('new-personal-key');
    await shown.waitFor();
    const key = (await shown.locator('pre').textContent()) ?? '';
    expect(key).toMatch(/^bnd_pk_\S+$/);
    await shown.getByRole('button', { name: 'Copy personal key' }).click();
    await shown.getByText('Copied').waitFor();
    expect(await clipboard()).toBe(key);

    const [listed] = (await cp.admin('GET', '/api/v2/mcp-keys')).body.items;
    expect(listed.name).toBe('laptop');
    expect(key.startsWith(listed.key_prefix)).toBe(true);
    const row = page.locator(`tr[data-key="${listed.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain(`${listed.key_prefix}…`);
    expect(await row.locator('td[data-label="Last used"]').textContent()).toBe('never');

    // Shown once: hidden on request, and not there after a reload.
    await page.getByRole('button', { name: 'I stored it: hide the key' }).click();
    expect(await page.getByTestId('new-personal-key').count()).toBe(0);
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
  });

  it('rotates a key (the new one shown once) and revokes one after a confirm step', async () => {
    const [before] = (await cp.admin('GET', '/api/v2/mcp-keys')).body.items;
    await page.getByRole('button', { name: 'Rotate laptop' }).click();
    await page
      .getByRole('group', { name: 'Confirm: rotate laptop' })
      .getByRole('button', { name: 'Rotate now' })
      .click();
    const shown = page.getByTestId('new-personal-key');
    await shown.getByText('rotated: the old one no longer works').waitFor();
    const key = (await shown.locator('pre').textContent()) ?? '';
    const [after] = (await cp.admin('GET', '/api/v2/mcp-keys')).body.items;
    expect(after.id).toBe(before.id);
    expect(after.key_prefix).not.toBe(before.key_prefix);
    expect(key.startsWith(after.key_prefix)).toBe(true);
    await shown.getByRole('button', { name: 'Copy personal key' }).click();
    await shown.getByText('Copied').waitFor();
    expect(await clipboard()).toBe(key);

    await page.getByLabel('Key name').fill('old desktop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const desktopRow = page.locator('tr').filter({ hasText: 'old desktop' });
    await desktopRow.waitFor();
    await page.getByRole('button', { name: 'Revoke old desktop' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm: revoke old desktop' });
    await confirm.getByText('stops working at once').waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect((await cp.admin('GET', '/api/v2/mcp-keys')).body.items).toHaveLength(2);

    await page.getByRole('button', { name: 'Revoke old desktop' }).click();
    await confirm.getByRole('button', { name: 'Revoke now' }).click();
    await expect.poll(() => desktopRow.count()).toBe(0);
    const left = (await cp.admin('GET', '/api/v2/mcp-keys')).body.items;
    expect(left.map((item: Json) => item.name)).toEqual(['laptop']);
    // The revoked key's secret went with it.
    expect(await page.getByTestId('new-personal-key').count()).toBe(0);
  });
});

describe('the caller map', () => {
  it('maps a caller to an exposure and shows the mapping', async () => {
    const form = page.getByRole('form', { name: 'Map a caller' });
    await form.getByLabel('Caller name').fill('vscode');
    await form.getByLabel('Exposure').selectOption({ label: 'Coding agent' });
    await form.getByRole('button', { name: 'Map caller' }).click();
    const row = page.locator('tr[data-caller="vscode"]');
    await row.waitFor();
    expect(await row.locator('td[data-label="Profile"]').textContent()).toBe('Coding agent');
    await form.getByText('now gets Coding agent').waitFor();

    const stored = (await cp.admin('GET', '/api/v2/callers')).body;
    expect(stored.callers).toEqual([expect.objectContaining({ caller: 'vscode', aei_id: ids.coding })]);
    const defaultProfile = page.locator('p').filter({ hasText: 'Default profile:' }).getByRole('link');
    expect(await defaultProfile.textContent()).toBe(stored.default_profile.aei_name);
    await screenshot('callers');
  });

  it('shows the server’s message for an invalid caller name, and maps nothing', async () => {
    const refusal = await cp.admin(
      'PUT',
      `/api/v2/callers/${encodeURIComponent('VS Code')}`,
      { aei_id: ids.coding },
      true,
    );
    expect(refusal.status).toBe(400);
    errors.expectFailedRequest(400);
    const form = page.getByRole('form', { name: 'Map a caller' });
    await form.getByLabel('Caller name').fill('VS Code');
    await form.getByRole('button', { name: 'Map caller' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);
    const callers = (await cp.admin('GET', '/api/v2/callers')).body.callers;
    expect(callers.map((item: Json) => item.caller)).toEqual(['vscode']);
  });

  it('unmaps a caller: it gets the default profile again', async () => {
    const form = page.getByRole('form', { name: 'Map a caller' });
    await form.getByLabel('Caller name').fill('claude');
    await form.getByLabel('Exposure').selectOption({ label: 'Support agent' });
    await form.getByRole('button', { name: 'Map caller' }).click();
    const row = page.locator('tr[data-caller="claude"]');
    await row.waitFor();
    expect((await cp.admin('GET', '/api/v2/callers/claude')).body.via).toBe('map');
    await page.getByRole('button', { name: 'Unmap claude' }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await cp.admin('GET', '/api/v2/callers/claude')).body.via).toBe('default');
  });
});

describe('the connect page', () => {
  it('shows how a caller resolves, with its stdio configs and copy buttons', async () => {
    const expected = (await cp.admin('GET', '/api/v2/callers/vscode')).body;
    await page.goto(`${cp.url}/console/connect?caller=vscode`);
    await page.getByRole('heading', { name: 'Connect vscode' }).waitFor();
    const resolution = page.getByTestId('resolution');
    await resolution.waitFor();
    expect(await resolution.textContent()).toContain('gets Coding agent (mapped to it)');
    const configs = page.getByTestId('stdio-configs');
    expect(await configs.textContent()).toContain(expected.stdio_configs.note);
    const clients: [string, string][] = [
      ['Claude Desktop', 'claude_desktop'],
      ['VS Code', 'vscode'],
      ['Cursor', 'cursor'],
    ];
    for (const [label, client] of clients) {
      const snippet = expected.stdio_configs[client];
      const text = JSON.stringify(snippet.config, null, 2);
      expect(text).toContain('bindery-vscode');
      expect(text).toContain('BINDERY_KEY');
      const block = configs.locator('.copy-block').filter({ hasText: `${label} (${snippet.file})` });
      expect(await block.locator('pre').textContent()).toBe(text);
      await block.getByRole('button', { name: `Copy ${label}` }).click();
      await block.getByText('Copied').waitFor();
      expect(await clipboard()).toBe(text);
    }
    // The picture shows the checkout's path as a neutral one.
    await page.evaluate((checkout) => {
      for (const pre of document.querySelectorAll('[data-testid="stdio-configs"] pre')) {
        const text = pre.firstChild;
        if (text?.nodeValue) text.nodeValue = text.nodeValue.replaceAll(checkout, '/srv/bindery/');
      }
    }, CHECKOUT);
    await screenshot('connect');
  });

  it('shows the default profile for an unmapped caller, and the server’s message for a bad name', async () => {
    await page.getByLabel('Caller name').fill('cursor');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('heading', { name: 'Connect cursor' }).waitFor();
    expect(new URL(page.url()).search).toBe('?caller=cursor');
    await expect
      .poll(() => page.getByTestId('resolution').textContent())
      .toContain('(mapped to no profile: your default profile)');
    expect(await page.getByTestId('stdio-configs').textContent()).toContain('bindery-cursor');

    const refusal = await cp.admin(
      'GET',
      `/api/v2/callers/${encodeURIComponent('VS Code')}`,
      undefined,
      true,
    );
    expect(refusal.status).toBe(400);
    errors.expectFailedRequest(400);
    await page.getByLabel('Caller name').fill('VS Code');
    await page.getByRole('button', { name: 'Show' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);
    expect(await page.getByTestId('stdio-configs').count()).toBe(0);
  });
});

describe('editing a table’s data', () => {
  it('checks the JSON before sending, and saves with the table’s ETag', async () => {
    const before = await tableNow();
    await page.goto(`${cp.url}/console/data/tables/${ids.table}`);
    await page.getByRole('heading', { name: 'Table crm' }).waitFor();
    await page.getByRole('button', { name: 'Edit data' }).click();
    const editor = page.getByLabel('Data as JSON');
    expect(JSON.parse(await editor.inputValue())).toEqual(CRM);
    const save = page.getByRole('button', { name: 'Save data' });

    await editor.fill('{"customers": [');
    await expect.poll(() => page.getByTestId('json-check').textContent()).toMatch(/^Not valid JSON: /);
    expect(await save.isDisabled()).toBe(true);
    await editor.fill('{"big": 1e999}');
    await expect.poll(() => page.getByTestId('json-check').textContent()).toContain('too large');
    expect(await save.isDisabled()).toBe(true);

    const next = { ...CRM, customers: [...CRM.customers, { id: 'c3', name: 'Grace Hopper', tier: 'gold' }] };
    await editor.fill(JSON.stringify(next));
    await expect.poll(() => page.getByTestId('json-check').textContent()).toBe('Valid JSON.');
    await save.click();
    await page.getByText(`Saved: the table is at version ${before.version + 1}.`).waitFor();
    const after = await tableNow();
    expect(after).toMatchObject({ version: before.version + 1, data: next });
    await page.getByLabel('Table data').getByText('"Grace Hopper"').waitFor();
  });

  it('shows a change made meanwhile as a conflict, overwrites nothing, and reloads on request', async () => {
    await page.getByRole('button', { name: 'Edit data' }).click();
    const editor = page.getByLabel('Data as JSON');
    const loaded = await tableNow();
    expect(JSON.parse(await editor.inputValue())).toEqual(loaded.data);
    await editor.fill(JSON.stringify({ mine: true }));

    // Someone else writes between the load and the save.
    const theirs = { ...loaded.data, note: 'changed meanwhile' };
    await cp.admin('PUT', `/api/v2/tables/${ids.table}/data`, theirs);
    errors.expectFailedRequest(412);
    await page.getByRole('button', { name: 'Save data' }).click();
    const conflict = page.getByTestId('conflict');
    const alert = conflict.getByRole('alert');
    await alert.waitFor();
    // The server's own message: the same stale write, refused the same way.
    const refusal = await fetch(`${cp.url}/api/v2/tables/${ids.table}/data`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        'if-match': `"${loaded.version}"`,
      },
      body: JSON.stringify({ mine: true }),
    });
    expect(refusal.status).toBe(412);
    expect(await alert.textContent()).toContain(((await refusal.json()) as Json).error.message);
    expect(await page.getByRole('button', { name: 'Save data' }).isDisabled()).toBe(true);
    expect(await tableNow()).toMatchObject({ version: loaded.version + 1, data: theirs });

    await conflict.getByRole('button', { name: 'Reload the table' }).click();
    await expect.poll(async () => JSON.parse(await editor.inputValue())).toEqual(theirs);
    expect(await page.getByTestId('conflict').count()).toBe(0);
    await page.getByLabel('Table data').getByText('"changed meanwhile"').waitFor();
    const unsaved = page.getByTestId('unsaved');
    await unsaved.locator('summary').click();
    expect(JSON.parse((await unsaved.locator('pre').textContent()) ?? '')).toEqual({ mine: true });

    // Edited again from the current version, the save goes through.
    await editor.fill(JSON.stringify({ ...theirs, note: 'merged' }));
    await page.getByRole('button', { name: 'Save data' }).click();
    await page.getByText(`Saved: the table is at version ${loaded.version + 2}.`).waitFor();
    expect(await tableNow()).toMatchObject({
      version: loaded.version + 2,
      data: { ...theirs, note: 'merged' },
    });
  });
});

describe('making and binding tools', () => {
  it('creates a context tool through the form, showing the server’s validation messages', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Tools' }).click();
    await page.getByText('No tools of this kind.').waitFor();
    await page.getByRole('button', { name: 'New context tool' }).click();
    const form = page.getByRole('form', { name: 'New context tool' });
    await form.getByLabel('Table', { exact: true }).selectOption({ label: 'crm' });
    await form.getByLabel('Operation').selectOption('preview');
    await form.getByLabel('JSON path').fill('/customerz');
    await form.getByLabel('Preview keys').fill('id, name');
    await form.getByLabel('Tool name').fill('preview_customers');

    const body = {
      kind: 'context',
      table_id: ids.table,
      json_path: '/customerz',
      operation_type: 'preview',
      name: 'preview_customers',
      config: { preview_keys: ['id', 'name'] },
    };
    const refusal = await cp.admin('POST', '/api/v2/adis', body, true);
    expect(refusal.status).toBe(400);
    errors.expectFailedRequest(400);
    await form.getByRole('button', { name: 'Create tool' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);

    await form.getByLabel('JSON path').fill('/customers');
    await form.getByRole('button', { name: 'Create tool' }).click();
    await form.getByText('Created preview_customers').waitFor();
    await page.getByRole('cell', { name: /preview_customers/ }).waitFor();
    const adis = (await cp.admin('GET', '/api/v2/adis')).body.items;
    expect(adis).toEqual([
      expect.objectContaining({
        name: 'preview_customers',
        operation_type: 'preview',
        json_path: '/customers',
        table_id: ids.table,
        config: { preview_keys: ['id', 'name'] },
      }),
    ]);
    ids.adi = adis[0].id;
  });

  it('binds the tool to an exposure from its page, and the agent sees it', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Exposures' }).click();
    await page.getByRole('link', { name: 'Support agent' }).click();
    await page.getByRole('heading', { name: 'Support agent' }).waitFor();
    await page.getByText('No tools: bind and enable one.').waitFor();
    await page.getByRole('button', { name: 'Bind a tool' }).click();
    const form = page.getByRole('form', { name: 'Bind a tool' });
    await form.getByLabel('Tool', { exact: true }).selectOption(ids.adi ?? '');
    await form.getByLabel('Tool name in this exposure').fill('customer_preview');
    await form.getByRole('button', { name: 'Bind', exact: true }).click();
    await expect.poll(agentToolNames).toEqual(['customer_preview']);
    await form.getByText('Bound as customer_preview').waitFor();

    const bindings = (await cp.admin('GET', `/api/v2/aeis/${ids.support}/bindings`)).body.items;
    expect(bindings).toEqual([expect.objectContaining({ adi_id: ids.adi, tool_name: 'customer_preview' })]);
    const name = page.getByLabel(`Tool name of binding ${bindings[0].id}`);
    expect(await name.inputValue()).toBe('customer_preview');
    const tool = page.locator('.agent-tool').filter({ hasText: 'customer_preview' });
    expect(await tool.textContent()).toContain('"offset"');
  });

  it('shows the server’s message when the name is taken in the exposure', async () => {
    const refusal = await cp.admin(
      'POST',
      `/api/v2/aeis/${ids.support}/bindings`,
      { adi_id: ids.adi, tool_name: 'customer_preview' },
      true,
    );
    expect(refusal.status).toBe(409);
    errors.expectFailedRequest(409);
    const form = page.getByRole('form', { name: 'Bind a tool' });
    await form.getByLabel('Tool', { exact: true }).selectOption(ids.adi ?? '');
    await form.getByLabel('Tool name in this exposure').fill('customer_preview');
    await form.getByRole('button', { name: 'Bind', exact: true }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);
    expect(await agentToolNames()).toEqual(['customer_preview']);
  });
});

describe('small screens', () => {
  it('fits a 390 px wide screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const screens: [string, string][] = [
      ['/callers', 'Callers'],
      ['/connect?caller=vscode', 'Connect vscode'],
      [`/data/tables/${ids.table}`, 'Table crm'],
    ];
    for (const [path, heading] of screens) {
      await page.goto(`${cp.url}/console${path}`);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${path} is wider than the screen by ${overflow} px`).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
