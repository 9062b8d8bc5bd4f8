/**
 * Headless Chromium from @sparticuz/chromium, driven with playwright-core. Its own `args` include
 * --single-process, which kills Chromium on these machines: only the two flags needed here.
 */
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';

export async function launchBrowser(): Promise<Browser> {
  return playwright.launch({
    executablePath: await chromium.executablePath(),
    args: ['--no-sandbox', '--disable-gpu'],
    headless: true,
  });
}

/**
 * Everything that went wrong in a page: uncaught errors and console errors. A failed request the
 * test provoked on purpose is logged by Chromium as a console error too; `expectFailedRequest`
 * allows the next one with that status.
 */
export function watchErrors(page: Page) {
  const problems: string[] = [];
  const allowed: number[] = [];
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    const status = /the server responded with a status of (\d+)/.exec(text)?.[1];
    const index = status === undefined ? -1 : allowed.indexOf(Number(status));
    if (index >= 0) {
      allowed.splice(index, 1);
      return;
    }
    problems.push(`console: ${text}`);
  });
  return {
    problems,
    expectFailedRequest(status: number) {
      allowed.push(status);
    },
  };
}

/** A browser with one page, 1280 px wide in the light theme, watched for errors. */
export async function openPage(options: { clipboardFor?: string } = {}) {
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  // Copy buttons are checked by reading the clipboard back.
  if (options.clipboardFor !== undefined) {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: options.clipboardFor });
  }
  const page = await context.newPage();
  return { browser, context, page, errors: watchErrors(page) };
}

/** Logs in through the console's form with `token`, and waits for the overview. */
export async function logIn(page: Page, consoleUrl: string, token: string): Promise<void> {
  await page.goto(`${consoleUrl}/console/`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}
