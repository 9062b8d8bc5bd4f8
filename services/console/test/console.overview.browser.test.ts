// The overview's traffic and gateways cards in a real headless Chromium, against a real control
// plane and a real gateway (GATEWAY_URLS pointing at it): after tool calls (one through the
// gateway's REST entry, the others through the control plane's internal executor route, as a
// gateway sends them), the card's call count and error rate are those of GET /api/v2/audit/summary,
// the chart says them to screen readers, and the gateway shows as ready; the card reads the summary
// again every 30 s without a reload, and stops once the screen is left; at 390 px in the dark theme
// nothing scrolls sideways; no uncaught error nor console error. Its screenshot (light theme, 1280
// px wide) is docs/console/overview-traffic.png.
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { REST_PATH } from '@bindery/contracts';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logIn, openPage, watchErrors } from './support/browser.ts';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  startControlPlane,
  type ControlPlane,
  type Json,
} from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));

let cp: ControlPlane;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let aeiId: string;
let apiKey: string;
let tool: { adiId: string; bindingId: string };
/** The summary requests the page sent. */
let summaryRequests = 0;

/** Calls the `count_customers` tool with `query` the way a gateway does: the internal executor route. */
async function callTool(query: string, requestId: string): Promise<void> {
  const answer = await fetch(`${cp.url}/internal/adi/${tool.adiId}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      aei_id: aeiId,
      binding_id: tool.bindingId,
      arguments: { query },
      request_id: requestId,
    }),
  });
  expect(answer.status, await answer.clone().text()).toBe(200);
}

async function summary(): Promise<Json> {
  return (await cp.admin('GET', '/api/v2/audit/summary?minutes=60')).body;
}

/** The percentage the console shows for an error rate. */
function percent(rate: number): string {
  return `${Number((rate * 100).toFixed(1))} %`;
}

async function shownCalls(p: Page): Promise<number> {
  return Number(await p.getByTestId('traffic-calls').getAttribute('data-value'));
}

async function waitForCalls(p: Page, calls: number): Promise<void> {
  await p.locator(`[data-testid="traffic-calls"][data-value="${calls}"]`).waitFor({ timeout: 10_000 });
}

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  cp = await startControlPlane({ gateway: true });
  const table = await cp.admin('POST', '/api/v2/tables', {
    name: 'crm',
    data: {
      customers: [
        { id: 'c1', name: 'Ada Lovelace' },
        { id: 'c2', name: 'Alan Turing' },
      ],
    },
  });
  const aei = await cp.admin('POST', '/api/v2/aeis', { name: 'Support agent' });
  aeiId = aei.body.id;
  apiKey = aei.body.api_key;
  const adi = await cp.admin('POST', '/api/v2/adis', {
    table_id: table.body.id,
    json_path: '/customers',
    operation_type: 'query',
    name: 'count_customers',
  });
  const binding = await cp.admin('POST', `/api/v2/aeis/${aeiId}/bindings`, {
    adi_id: adi.body.id,
    tool_name: 'count_customers',
  });
  tool = { adiId: adi.body.id, bindingId: binding.body.id };
  ({ browser, context, page, errors } = await openPage());
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/v2/audit/summary') summaryRequests += 1;
  });
  // Fake timers that flow like real ones until the test moves them on (the 30 s refresh).
  await page.clock.install();
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
});

describe('the overview’s traffic and gateways', () => {
  it('shows the calls and the error rate of the summary, and the gateway as ready', async () => {
    // One call through the gateway's REST entry, as an agent makes it.
    const viaGateway = await fetch(`${cp.gatewayUrl}${REST_PATH}/tools/count_customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'length(@)' }),
    });
    expect(viaGateway.status, await viaGateway.clone().text()).toBe(200);
    await callTool('length(@)', 'req-ok-1');
    await callTool('[0].name', 'req-ok-2');
    await callTool('[[[', 'req-broken');
    const expected = await summary();
    expect(expected.totals.calls).toBe(4);
    expect(expected.totals.errors).toBe(1);

    await logIn(page, cp.url, ADMIN_TOKEN);
    await waitForCalls(page, expected.totals.calls);
    expect(await page.getByTestId('traffic-error-rate').textContent()).toBe(
      percent(expected.totals.error_rate),
    );
    expect(percent(expected.totals.error_rate)).toBe('25 %');
    expect(await page.getByTestId('traffic-errors').textContent()).toBe(String(expected.totals.errors));
    const chart = page.getByRole('img', { name: /Calls per minute over the last 60 minutes/ });
    expect(await chart.getAttribute('aria-label')).toContain(`${expected.totals.calls} in total, at most`);
    expect(await chart.getAttribute('aria-label')).toContain('1 error (25 %)');
    // The numbers behind the bars, for screen readers: the busy minutes' rows add up.
    await page.getByText('Calls per minute as a table').click();
    const cells = await page
      .locator('.traffic-table tbody tr')
      .evaluateAll((rows) => rows.map((row) => Number(row.children[1]?.textContent)));
    expect(cells.reduce((sum, calls) => sum + calls, 0)).toBe(expected.totals.calls);

    const gateway = page.getByTestId('gateway');
    await gateway.first().waitFor();
    expect(await gateway.count()).toBe(1);
    expect(await gateway.getAttribute('data-status')).toBe('ready');
    expect(await gateway.textContent()).toContain(cp.gatewayUrl);
    expect(await gateway.textContent()).toContain('ready (HTTP 200)');
    // The existing control-plane card is still there.
    expect(await page.locator('.facts').first().textContent()).toContain('ready (HTTP 200)');

    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: `${SCREENSHOTS}overview-traffic.png`, fullPage: true });
  });

  it('reads the summary again every 30 s without a reload, and stops once the screen is left', async () => {
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    const before = await shownCalls(page);
    await callTool('length(@)', 'req-later');
    await page.clock.fastForward(31_000);
    await waitForCalls(page, before + 1);
    const expected = await summary();
    expect(await shownCalls(page)).toBe(expected.totals.calls);
    expect(await page.getByTestId('traffic-error-rate').textContent()).toBe(
      percent(expected.totals.error_rate),
    );
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Data' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor({ state: 'detached' });
    const requests = summaryRequests;
    await page.clock.fastForward(31_000);
    await page.clock.fastForward(31_000);
    await page.waitForTimeout(500);
    expect(summaryRequests).toBe(requests);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await waitForCalls(page, expected.totals.calls);
  });

  it('fits 390 px in the dark theme without scrolling sideways', async () => {
    const narrow = await context.browser()!.newContext({
      viewport: { width: 390, height: 844 },
      colorScheme: 'dark',
    });
    try {
      const small = await narrow.newPage();
      const smallErrors = watchErrors(small);
      await logIn(small, cp.url, ADMIN_TOKEN);
      await small.getByTestId('gateway').first().waitFor();
      await small.getByTestId('traffic-chart').waitFor();
      await small.getByText('Calls per minute as a table').click();
      const widths = await small.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        client: document.documentElement.clientWidth,
      }));
      expect(widths.scroll).toBeLessThanOrEqual(widths.client);
      // The dark theme's colours, not the light ones.
      const background = await small.evaluate(
        () => getComputedStyle(document.documentElement).backgroundColor,
      );
      expect(background).toBe('rgb(18, 20, 24)');
      expect(smallErrors.problems).toEqual([]);
    } finally {
      await narrow.close();
    }
  });
});
