// The live logs screen in a real headless Chromium against a real control plane: a tool call made
// while the screen is open appears without a reload, newest first; a tool filter restarts the
// stream and hides another tool's calls; pause holds new events back and resume brings the ones
// written meanwhile (Last-Event-ID); a traced call links to its trace in the operator's tracing
// backend (the control plane exports spans to a receiver on 127.0.0.1 and has TRACE_URL_TEMPLATE);
// no uncaught error nor console error. Its screenshot (light theme, 1280 px wide) is
// docs/console/logs.png, which the README links.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logIn, openPage, watchErrors } from './support/browser.ts';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  startControlPlane,
  type ControlPlane,
} from './support/control-plane.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../../docs/console/', import.meta.url));

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let aeiId: string;
/** Takes the control plane's exported spans (OTLP/HTTP) and keeps nothing: traces are on. */
let spanSink: Server;
const tools: Record<string, { adiId: string; bindingId: string; args: Record<string, unknown> }> = {};

/** Calls `tool` the way a gateway does: the control plane's internal executor route. */
async function callTool(
  tool: 'list_customers' | 'count_customers',
  requestId: string,
  traceparent?: string,
): Promise<void> {
  const { adiId, bindingId, args } = tools[tool]!;
  const answer = await fetch(`${cp.url}/internal/adi/${adiId}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      aei_id: aeiId,
      binding_id: bindingId,
      arguments: args,
      request_id: requestId,
      ...(traceparent && { trace: { traceparent } }),
    }),
  });
  expect(answer.status, await answer.clone().text()).toBe(200);
}

function row(requestId: string) {
  return page.locator('[data-testid="log-rows"] tbody tr', { hasText: requestId });
}

async function streamState(): Promise<string | null> {
  return page.getByTestId('stream-state').getAttribute('data-state');
}

async function waitLive(): Promise<void> {
  await page.locator('[data-testid="stream-state"][data-state="live"]').waitFor({ timeout: 10_000 });
}

beforeAll(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  spanSink = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
  await new Promise<void>((resolve) => spanSink.listen(0, '127.0.0.1', resolve));
  cp = await startControlPlane({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(spanSink.address() as AddressInfo).port}`,
      TRACE_URL_TEMPLATE: 'http://127.0.0.1:16686/trace/{trace_id}',
    },
  });
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
  const specs = {
    list_customers: { operation_type: 'get_all', args: {} },
    count_customers: { operation_type: 'query', args: { query: 'length(@)' } },
  };
  for (const [name, spec] of Object.entries(specs)) {
    const adi = await cp.admin('POST', '/api/v2/adis', {
      table_id: table.body.id,
      json_path: '/customers',
      operation_type: spec.operation_type,
      name,
    });
    const binding = await cp.admin('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      adi_id: adi.body.id,
      tool_name: name,
    });
    tools[name] = { adiId: adi.body.id, bindingId: binding.body.id, args: spec.args };
  }
  ({ browser, page, errors } = await openPage());
  await logIn(page, cp.url, ADMIN_TOKEN);
});

afterEach(() => {
  expect(errors.problems, 'uncaught errors and console errors in the browser').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await cp?.close();
  await new Promise((resolve) => spanSink?.close(resolve));
});

describe('live logs', () => {
  it('shows a tool call made while it is open, without a reload, newest first', async () => {
    await callTool('list_customers', 'before-the-screen');
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('heading', { name: 'Live logs' }).waitFor();
    await waitLive();
    // A marker that a reload would lose.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));

    await callTool('list_customers', 'req-list-1');
    await row('req-list-1').waitFor({ timeout: 5_000 });
    await callTool('count_customers', 'req-count-1');
    await callTool('list_customers', 'req-list-2');
    await row('req-list-2').waitFor({ timeout: 5_000 });

    const requests = await page.locator('[data-testid="log-rows"] tbody tr td code').allTextContents();
    expect(requests).toEqual(['req-list-2', 'req-count-1', 'req-list-1']);
    expect(await row('req-count-1').getAttribute('data-tool')).toBe('count_customers');
    expect(await row('req-count-1').textContent()).toContain('Support agent');
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    expect(new URL(page.url()).pathname).toBe('/console/logs');
    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: `${SCREENSHOTS}logs.png`, fullPage: true });
  });

  it('links a traced call to its trace in the operator’s tracing backend', async () => {
    const traceId = randomBytes(16).toString('hex');
    await callTool('list_customers', 'req-traced', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    const link = row('req-traced').getByRole('link', { name: /^trace / });
    await link.waitFor({ timeout: 5_000 });
    expect(await link.getAttribute('href')).toBe(`http://127.0.0.1:16686/trace/${traceId}`);
    expect(await link.getAttribute('title')).toBe(traceId);
    // A call that carried no trace is traced all the same, in a trace of its own.
    const own = await row('req-list-2').locator('[data-trace-id]').getAttribute('data-trace-id');
    expect(own).toMatch(/^[0-9a-f]{32}$/);
    expect(own).not.toBe(traceId);
  });

  it('restarts the stream with a tool filter, which hides another tool’s calls', async () => {
    await page.getByLabel('Tool').fill('count_customers');
    await page.getByLabel('Tool').press('Enter');
    await waitLive();
    expect(await page.locator('[data-testid="log-rows"]').count()).toBe(0);

    await callTool('list_customers', 'req-list-hidden');
    await callTool('count_customers', 'req-count-2');
    await row('req-count-2').waitFor({ timeout: 5_000 });
    // The other tool's call was written first: had it passed the filter, it would be here now.
    await page.waitForTimeout(1_000);
    expect(await row('req-list-hidden').count()).toBe(0);
    const shown = await page
      .locator('[data-testid="log-rows"] tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tool')));
    expect(shown).toEqual(['count_customers']);
  });

  it('holds new events while paused, and brings those written meanwhile on resume', async () => {
    await page.getByRole('button', { name: 'Pause' }).click();
    expect(await streamState()).toBe('paused');
    await callTool('count_customers', 'req-while-paused');
    await page.waitForTimeout(1_500);
    expect(await row('req-while-paused').count()).toBe(0);

    await page.getByRole('button', { name: 'Resume' }).click();
    await row('req-while-paused').waitFor({ timeout: 5_000 });
    await waitLive();
    const requests = await page.locator('[data-testid="log-rows"] tbody tr td code').allTextContents();
    expect(requests).toEqual(['req-while-paused', 'req-count-2']);
  });

  it('shows the server’s message when the stream is refused, and comes back by itself', async () => {
    await page.getByRole('button', { name: 'Pause' }).click();
    // Five streams of this user open elsewhere (the console's paused one may take a moment to go).
    const others: AbortController[] = [];
    const deadline = Date.now() + 10_000;
    while (others.length < 5) {
      const controller = new AbortController();
      const answer = await fetch(`${cp.url}/api/v2/audit/stream`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        signal: controller.signal,
      });
      if (answer.status === 200) others.push(controller);
      else {
        expect(answer.status).toBe(429);
        await answer.text();
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    // Chromium logs each refused attempt as a console error: these are on purpose.
    for (let i = 0; i < 4; i++) errors.expectFailedRequest(429);
    try {
      await page.getByRole('button', { name: 'Resume' }).click();
      const state = page.locator('[data-testid="stream-state"][data-state="reconnecting"]');
      await state.waitFor({ timeout: 10_000 });
      expect(await state.textContent()).toContain('at most 5 audit streams');
    } finally {
      for (const controller of others) controller.abort();
    }
    // Once the others are gone, the backoff brings it back, resuming where it stopped.
    await waitLive();
    await callTool('count_customers', 'req-after-refusal');
    await row('req-after-refusal').waitFor({ timeout: 5_000 });
  });
});
