// The console in a real headless Chromium against a real control plane: logging in (and a wrong
// token's error), every screen of this slice, renaming a binding and seeing what the agent sees
// change, the server's refusal of a bad name, key rotation shown once, logging out; no uncaught
// error nor console error on any screen. Each screen's screenshot (light theme, 1280 px wide) is
// written to docs/console/, which the README links.
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPage, watchErrors } from './support/browser.ts';
import { ADMIN_TOKEN, startControlPlane, type ControlPlane, type Json } from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
const ids: { table?: string; adi?: string; aei?: string; binding?: string } = {};

async function screenshot(name: string): Promise<void> {
  // Fonts and layout settle before the picture.
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

async function agentToolNames(): Promise<string[]> {
  return page.locator('[data-testid="agent-tools"] .tool-name').allTextContents();
}

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  cp = await startControlPlane();
  // Set-up through the admin API: a table, a context tool on it, an exposure and a binding.
  const table = await cp.admin('POST', '/api/v2/tables', {
    name: 'crm',
    data: {
      customers: [
        { id: 'c1', name: 'Ada Lovelace', tier: 'gold', active: true },
        { id: 'c2', name: 'Alan Turing', tier: 'silver', active: false },
      ],
      settings: { currency: 'EUR', region: null },
    },
  });
  ids.table = table.body.id;
  const adi = await cp.admin('POST', '/api/v2/adis', {
    table_id: ids.table,
    json_path: '/customers',
    operation_type: 'get_all',
    name: 'list_customers',
    description: 'Every customer of the CRM',
  });
  ids.adi = adi.body.id;
  const aei = await cp.admin('POST', '/api/v2/aeis', { name: 'Support agent' });
  ids.aei = aei.body.id;
  const binding = await cp.admin('POST', `/api/v2/aeis/${ids.aei}/bindings`, { adi_id: ids.adi });
  ids.binding = binding.body.id;

  ({ browser, page, errors } = await openPage({ clipboardFor: cp.url }));
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
});

describe('the console', () => {
  it('is where the control plane redirects /', async () => {
    await page.goto(`${cp.url}/`);
    expect(new URL(page.url()).pathname).toBe('/console/');
    await expect(page.getByLabel('Admin token').isVisible()).resolves.toBe(true);
  });

  it('shows the server’s error for a wrong token, and stays on the login form', async () => {
    errors.expectFailedRequest(401);
    await page.getByLabel('Admin token').fill('bnd_admin_not-a-real-token-000');
    await page.getByRole('button', { name: 'Log in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const expected = await cp.admin('GET', '/api/v2/me', undefined, true).then(async () => {
      const answer = await fetch(`${cp.url}/api/v2/me`, {
        headers: { authorization: 'Bearer bnd_admin_not-a-real-token-000' },
      });
      return ((await answer.json()) as Json).error.message as string;
    });
    expect(await alert.textContent()).toContain(expected);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await screenshot('login');
  });

  it('logs in with the admin token, kept in sessionStorage and never in the URL', async () => {
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(page.url()).not.toContain(ADMIN_TOKEN);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([ADMIN_TOKEN]);
    expect(await page.evaluate(() => Object.values(localStorage))).toEqual([]);
  });

  it('shows health, readiness, counts and first steps on the overview', async () => {
    await page.getByText('ready (HTTP 200)').waitFor();
    await page.getByText('ok (HTTP 200)').waitFor();
    for (const name of ['data', 'tools', 'exposures']) {
      const count = page.getByTestId(`count-${name}`);
      await expect.poll(() => count.textContent()).toBe('1');
    }
    await page.getByRole('heading', { name: 'First steps' }).waitFor();
    await screenshot('overview');
  });

  it('lists tables and shows a table’s data as a read-only tree', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Data' }).click();
    await page.getByRole('link', { name: 'crm' }).waitFor();
    await screenshot('data');
    await page.getByRole('link', { name: 'crm' }).click();
    await page.getByRole('heading', { name: 'Table crm' }).waitFor();
    const tree = page.getByLabel('Table data');
    await tree.getByText('"Ada Lovelace"').waitFor();
    expect(await tree.textContent()).toContain('currency: "EUR"');
    expect(new URL(page.url()).pathname).toBe(`/console/data/tables/${ids.table}`);
    await screenshot('table');
    // The console's own URL survives a reload (the control plane answers index.html for it).
    await page.reload();
    await page.getByLabel('Table data').getByText('"Alan Turing"').waitFor();
  });

  it('lists the tools, filtered by kind', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Tools' }).click();
    await page.getByRole('cell', { name: /list_customers/ }).waitFor();
    await page.getByLabel('Kind').selectOption('custom');
    await page.getByText('No tools of this kind.').waitFor();
    await page.getByLabel('Kind').selectOption('context');
    await page.getByRole('cell', { name: /list_customers/ }).waitFor();
    await screenshot('tools');
  });

  it('lists the exposures and opens one with its bindings and what the agent sees', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Exposures' }).click();
    await page.getByRole('link', { name: 'Support agent' }).waitFor();
    await screenshot('exposures');
    await page.getByRole('link', { name: 'Support agent' }).click();
    await page.getByRole('heading', { name: 'Support agent' }).waitFor();
    await expect.poll(agentToolNames).toEqual(['list_customers']);
    expect(await page.getByLabel(`Tool name of binding ${ids.binding}`).inputValue()).toBe('list_customers');
  });

  it('renames a binding inline, and what the agent sees changes', async () => {
    const name = page.getByLabel(`Tool name of binding ${ids.binding}`);
    await name.fill('find_customers');
    await page.getByRole('button', { name: 'Save name' }).click();
    await expect.poll(agentToolNames).toEqual(['find_customers']);
    const stored = await cp.admin('GET', `/api/v2/aeis/${ids.aei}/bindings/${ids.binding}`);
    expect(stored.body.tool_name).toBe('find_customers');

    const description = page.getByLabel(`Description of binding ${ids.binding}`);
    await description.fill('Customers, for the support agent');
    await page.getByRole('button', { name: 'Save description' }).click();
    await page
      .locator('.agent-tool')
      .filter({ hasText: 'find_customers' })
      .getByText('Customers, for the support agent')
      .waitFor();
  });

  it('renames with the keyboard alone: Tab to the field, type, Enter', async () => {
    const name = page.getByLabel(`Tool name of binding ${ids.binding}`);
    await name.focus();
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Tab');
    expect(await name.evaluate((element) => element === document.activeElement)).toBe(true);
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('customers_find');
    await page.keyboard.press('Enter');
    await expect.poll(agentToolNames).toEqual(['customers_find']);
    await name.fill('find_customers');
    await name.press('Enter');
    await expect.poll(agentToolNames).toEqual(['find_customers']);
  });

  it('shows the server’s message for an invalid name, and changes nothing', async () => {
    const refusal = await cp.admin(
      'PATCH',
      `/api/v2/aeis/${ids.aei}/bindings/${ids.binding}`,
      { tool_name: 'find customers' },
      true,
    );
    expect(refusal.status).toBe(400);
    errors.expectFailedRequest(400);
    await page.getByLabel(`Tool name of binding ${ids.binding}`).fill('find customers');
    await page.getByRole('button', { name: 'Save name' }).click();
    const alert = page.locator(`tr[data-binding="${ids.binding}"]`).getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.body.error.message);
    expect(await agentToolNames()).toEqual(['find_customers']);
  });

  it('switches a binding off and on: the agent loses and regains the tool', async () => {
    const toggle = page.getByRole('switch');
    await toggle.click();
    await expect.poll(agentToolNames).toEqual([]);
    await toggle.click();
    await expect.poll(agentToolNames).toEqual(['find_customers']);
  });

  it('rotates the key and shows it once, with copy buttons and the client configs', async () => {
    const before = (await cp.admin('GET', `/api/v2/aeis/${ids.aei}`)).body.api_key_prefix as string;
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.locator('pre').first().textContent()) ?? '';
    expect(key).toMatch(/^bnd_key_/);
    const after = (await cp.admin('GET', `/api/v2/aeis/${ids.aei}`)).body.api_key_prefix as string;
    expect(after).not.toBe(before);
    expect(key.startsWith(after)).toBe(true);
    expect(await shown.textContent()).toContain('claude_desktop_config.json');
    expect(await shown.textContent()).toContain(`/api/v2/mcp/server/${key}`);
    await shown.getByRole('button', { name: 'Copy API key' }).click();
    await shown.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await screenshot('exposure');

    // Shown once: hidden on request, and not there after a reload.
    await page.getByRole('button', { name: 'I stored it: hide the key' }).click();
    expect(await page.getByTestId('new-key').count()).toBe(0);
    await page.reload();
    await page.getByRole('heading', { name: 'Support agent' }).waitFor();
    expect(await page.content()).not.toContain(key);
  });

  it('fits a 390 px wide screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const screens: [string, string][] = [
      [`/exposures/${ids.aei}`, 'Support agent'],
      ['/', 'Overview'],
      ['/data', 'Data'],
      [`/data/tables/${ids.table}`, 'Table crm'],
      ['/tools', 'Tools (ADIs)'],
      ['/exposures', 'Exposures (AEIs)'],
    ];
    for (const [path, heading] of screens) {
      await page.goto(`${cp.url}/console${path}`);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (overflow > 0)
        await page.screenshot({ path: `${tmpdir()}/bindery-console-390.png`, fullPage: true });
      expect(overflow, `${path} is wider than the screen by ${overflow} px`).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('pages through a long list with "Load more"', async () => {
    for (let index = 1; index <= 51; index += 1) {
      await cp.admin('POST', '/api/v2/projects', { name: `Project ${String(index).padStart(2, '0')}` });
    }
    await page.goto(`${cp.url}/console/data`);
    const projects = page.locator('.chips li');
    await expect.poll(() => projects.count()).toBe(50);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => projects.count()).toBe(51);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
  });

  it('logs out: the token is forgotten and the login form is back', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await page.getByLabel('Admin token').waitFor();
  });

  it('logs out with the server’s message when the token is revoked meanwhile', async () => {
    const created = await cp.admin('POST', '/api/v2/tokens', { name: 'console-test' });
    await page.getByLabel('Admin token').fill(created.body.token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.waitForLoadState('networkidle');
    await cp.admin('DELETE', `/api/v2/tokens/${created.body.id}`);
    errors.expectFailedRequest(401);
    await page.getByRole('navigation').getByRole('link', { name: 'Tools' }).click();
    await page.getByLabel('Admin token').waitFor();
    const notice = page.locator('.notice');
    expect(await notice.textContent()).toMatch(/^Logged out: .*revoked/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});
