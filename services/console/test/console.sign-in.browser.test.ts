// Console sign-in with a name and a password (decision 072) in a real headless Chromium against a
// real control plane: a person who set a password signs in with their name (any case), changes the
// password on "Your account" (the current one asked for), logs out and signs in with the new one;
// a wrong password is shown the server's refusal and stays out; the sign-in and account screens fit
// a 390 px wide screen, light and dark. No uncaught error nor console error on any screen.
// Screenshots go to docs/console/.
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPage, watchErrors } from './support/browser.ts';
import { startControlPlane, type ControlPlane } from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));
const FIRST = 'a first password, long enough';
const SECOND = 'a second password, longer still';

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  cp = await startControlPlane();
  const ada = (await cp.admin('POST', '/api/v2/users', { name: 'Ada Lovelace' })).body as { token: string };
  const set = await fetch(`${cp.url}/api/v2/me/password`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ password: FIRST }),
  });
  expect(set.status).toBe(204);
  ({ browser, page, errors } = await openPage());
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await cp?.close();
});

async function signIn(name: string, password: string): Promise<void> {
  await page.goto(`${cp.url}/console/`);
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describe('signing in', () => {
  it('keeps out a wrong password, with the server’s reason', async () => {
    errors.expectFailedRequest(401);
    await signIn('Ada Lovelace', 'not the password at all');
    await page.getByText('wrong name or password').waitFor();
    expect(await page.getByRole('heading', { name: 'Overview' }).count()).toBe(0);
  });

  it('lets a person in by name and password, and change the password on their account', async () => {
    await signIn('ada lovelace', FIRST);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByRole('link', { name: 'Ada Lovelace' }).click();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByLabel('Current password', { exact: true }).fill(FIRST);
    await page.getByLabel('New password', { exact: true }).fill(SECOND);
    await page.getByLabel('New password, again', { exact: true }).fill(SECOND);
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.getByRole('status').filter({ hasText: 'Password saved' }).waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();

    errors.expectFailedRequest(401);
    await signIn('Ada Lovelace', FIRST);
    await page.getByText('wrong name or password').waitFor();
    await signIn('Ada Lovelace', SECOND);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(errors.problems).toEqual([]);
  });

  it('fits a 390 px wide screen, light and dark', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [path, heading] of [
        ['/account', 'Your account'],
        ['/', 'Overview'],
      ] as const) {
        await page.goto(`${cp.url}/console${path}`);
        await page.getByRole('heading', { name: heading, exact: true }).waitFor();
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(
          overflow,
          `${path} (${scheme}) is wider than the screen by ${overflow} px`,
        ).toBeLessThanOrEqual(0);
        if (path === '/account')
          await page.screenshot({ path: `${SCREENSHOTS}account-${scheme}.png`, fullPage: true });
      }
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `the sign-in screen (${scheme}) is wider than the screen`).toBeLessThanOrEqual(0);
      await page.screenshot({ path: `${SCREENSHOTS}sign-in-${scheme}.png`, fullPage: true });
      await signIn('Ada Lovelace', SECOND);
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(errors.problems).toEqual([]);
  });
});
