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
