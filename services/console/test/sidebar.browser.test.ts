// The sidebar in a real headless Chromium against a real control plane seeded with the demo: the
// person opens it beside the demo table, runs a query, proposes a `set`, sees the change before and
// after, approves it and finds the data changed and the audit row in the logs; rejects another; a
// proposal made stale by a tool write meanwhile is refused and offered again, and the fresh one
// applies. An agent (this test, over the API, with the token the sidebar shows) proposes a write the
// person approves in the browser while the agent's call waits for the verdict; its proposal to
// delete a protected customer is blocked with the rule named and never applied. The sidebar's
// screenshot is written to docs/console/.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Browser, Page } from 'playwright-core';
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
const BINDERY_MCP = fileURLToPath(
  new URL('../../../packages/bindery-mcp/bin/bindery-mcp.js', import.meta.url),
);
/** The session the sidebar shows, and its token, as the person hands them to an agent. */
const handed: { session?: string; token?: string } = {};

let cp: ControlPlane;
let browser: Browser;
let page: Page;
let errors: ReturnType<typeof watchErrors>;
let tableId: string;

async function table(): Promise<{ version: number; data: { customers: Json[] } }> {
  return (await cp.admin('GET', `/api/v2/tables/${tableId}`)).body;
}

/** Types a command in the sidebar's terminal and waits until the terminal prints `expected`. */
async function type(command: string, expected: string | RegExp): Promise<void> {
  const input = page.getByLabel('Command');
  await input.fill(command);
  await input.press('Enter');
  await page.getByRole('log', { name: 'Terminal output' }).getByText(expected).last().waitFor();
}

function card(command: string) {
  return page.getByRole('article', { name: `Proposal ${command}` });
}

/** A tool write the way a gateway sends one: the demo's update_customer through the executor route. */
async function toolWrite(path: string, value: unknown): Promise<void> {
  const aeis = (await cp.admin('GET', '/api/v2/aeis')).body.items as Json[];
  const demo = aeis.find((a) => a.name === 'Demo agent')!;
  const bindings = (await cp.admin('GET', `/api/v2/aeis/${demo.id}/bindings`)).body.items as Json[];
  const update = bindings.find((b) => b.tool_name === 'update_customer')!;
  const answer = await fetch(`${cp.url}/internal/adi/${update.adi_id}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ aei_id: demo.id, binding_id: update.id, arguments: { path, value } }),
  });
  expect(answer.status, await answer.clone().text()).toBe(200);
  expect(((await answer.json()) as Json).isError).toBeFalsy();
}

beforeAll(async () => {
  cp = await startControlPlane({ env: { BINDERY_SEED_DEMO: 'true' } });
  const tables = (await cp.admin('GET', '/api/v2/tables')).body.items as Json[];
  tableId = tables.find((t) => t.name === 'crm')!.id;
  await cp.admin('PUT', `/api/v2/tables/${tableId}/rules`, {
    protect: [{ path: '/customers', deny: ['delete'] }],
  });
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

describe('the sidebar', () => {
  it('opens beside the demo table and runs reads at once', async () => {
    await page.goto(`${cp.url}/console/data/tables/${tableId}`);
    await page.getByRole('heading', { name: 'Table crm' }).waitFor();
    await page.getByRole('button', { name: 'Sidebar' }).click();
    await page.getByRole('complementary', { name: 'Sidebar' }).waitFor();
    await page.getByText('live', { exact: true }).waitFor();
    await type('use crm /customers', /^crm \/customers \(version \d+\)$/);
    await type("query 'length(@)'", /^8$/);
    await type('query \'[?tier==`"platinum"`].name\'', 'Grace Hopper');
  });

  it('proposes a set, shows the change, applies it on approval, and the audit row appears', async () => {
    const before = await table();
    await type('set 0/tier "platinum"', /waiting for the person/);
    const proposal = card('set 0/tier "platinum"');
    await proposal.waitFor();
    const row = proposal.getByRole('row', { name: /\/customers\/0\/tier/ });
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('"gold"');
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('"platinum"');
    expect((await table()).version).toBe(before.version);
    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: `${SCREENSHOTS}sidebar.png` });
    // The sidebar stays open beside the live logs, where the approval's audit row appears.
    await page.getByRole('navigation').getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('heading', { name: 'Logs' }).first().waitFor();
    await proposal.getByRole('button', { name: 'Approve' }).click();
    await page.getByText(`set 0/tier "platinum": applied at version ${before.version + 1}`).waitFor();
    await proposal.waitFor({ state: 'detached' });
    await page.getByText('sidebar.apply · set').first().waitFor();
    await page
      .getByText(`proposed by the person · version ${before.version} → ${before.version + 1}`)
      .waitFor();
    const after = await table();
    expect(after.data.customers[0]!.tier).toBe('platinum');
    await page.goto(`${cp.url}/console/data/tables/${tableId}`);
    await page.getByLabel('Table data').getByText('"platinum"').first().waitFor();
  });

  it('rejects another, writing nothing', async () => {
    await page.getByRole('button', { name: 'Sidebar' }).click();
    const before = await table();
    await type('set 1/email "grace@navy.example"', /waiting for the person/);
    const proposal = card('set 1/email "grace@navy.example"');
    await proposal.getByLabel('Note for the agent').fill('keep her address');
    await proposal.getByRole('button', { name: 'Reject' }).click();
    await page.getByText('set 1/email "grace@navy.example": rejected').waitFor();
    expect(await table()).toEqual(before);
  });

  it('refuses a proposal made stale by a tool write, offers it again, and applies the fresh one', async () => {
    await type('set 2/city "Leeds"', /waiting for the person/);
    const first = card('set 2/city "Leeds"');
    await first.waitFor();
    await toolWrite('/2/email', 'alan@turing.example');
    errors.expectFailedRequest(409);
    await first.getByRole('button', { name: 'Approve' }).click();
    await page
      .getByRole('log', { name: 'Terminal output' })
      .getByText(/is stale: table version is now/)
      .waitFor();
    // The stale one leaves; the fresh one, computed on the data now, takes its place.
    await expect.poll(() => card('set 2/city "Leeds"').count()).toBe(1);
    const fresh = card('set 2/city "Leeds"');
    await fresh.getByRole('button', { name: 'Approve' }).click();
    await page.getByText(/set 2\/city "Leeds": applied at version/).waitFor();
    const now = await table();
    expect(now.data.customers[2]).toMatchObject({ city: 'Leeds', email: 'alan@turing.example' });
  });

  it("lets an agent drive the session: its write waits for the person's approval, its delete of a protected path is blocked", async () => {
    await page.getByText('Let an agent work here').click();
    const command = await page.getByText(/BINDERY_SIDEBAR_TOKEN=/).textContent();
    const session = /BINDERY_SIDEBAR_SESSION=(\S+)/.exec(command ?? '')![1]!;
    const token = /BINDERY_SIDEBAR_TOKEN=(\S+)/.exec(command ?? '')![1]!;
    Object.assign(handed, { session, token });
    const agent = (line: string, waitMs = 0) =>
      fetch(`${cp.url}/api/v2/sidebar/sessions/${session}/commands`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: line, wait_ms: waitMs }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Json }));

    expect((await agent('use crm /customers')).status).toBe(200);
    const waiting = agent('set 3/city "Hampton Roads"', 30_000);
    const proposal = card('set 3/city "Hampton Roads"');
    await proposal.getByText('by the agent').waitFor();
    await proposal.getByRole('button', { name: 'Approve' }).click();
    const answer = await waiting;
    expect(answer.body.proposal.status).toBe('applied');
    expect(answer.body.output).toMatch(/approved: applied at version \d+/);
    expect((await table()).data.customers[3]!.city).toBe('Hampton Roads');

    const before = await table();
    const blocked = await agent('rm 0');
    expect(blocked.body.proposal.status).toBe('blocked');
    const shown = card('rm 0');
    await shown.getByText(/✗ protect \/customers/).waitFor();
    await shown.getByText('Blocked by protect: it cannot be approved.').waitFor();
    expect(await shown.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await table()).toEqual(before);
  });

  it('lets an agent drive it through bindery-mcp --sidebar with the SDK client, approved in the browser', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BINDERY_MCP, '--sidebar'],
      env: {
        PATH: process.env.PATH ?? '',
        BINDERY_CONTROL_PLANE_URL: cp.url,
        BINDERY_SIDEBAR_SESSION: handed.session!,
        BINDERY_SIDEBAR_TOKEN: handed.token!,
        BINDERY_SIDEBAR_WAIT_MS: '30000',
      },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sidebar-agent', version: '1.0.0' });
    await client.connect(transport);
    const run = async (command: string) =>
      (await client.callTool({ name: 'sidebar_run', arguments: { command } }, undefined, {
        timeout: 60_000,
      })) as CallToolResult;
    const text = (result: CallToolResult) =>
      result.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('sidebar_run');
      await run('use crm /customers');
      const waiting = run('set 4/city "Portland, OR"');
      const proposal = card('set 4/city "Portland, OR"');
      await proposal.getByText('by the agent').waitFor();
      await proposal.getByRole('button', { name: 'Approve' }).click();
      const approved = await waiting;
      expect(approved.isError).toBeFalsy();
      expect(text(approved)).toMatch(/approved: applied at version \d+/);
      expect((await table()).data.customers[4]!.city).toBe('Portland, OR');

      const before = await table();
      const blocked = await run('rm 1');
      expect(text(blocked)).toMatch(/protect \/customers/);
      await card('rm 1').getByText('Blocked by protect: it cannot be approved.').waitFor();
      expect(await table()).toEqual(before);
    } finally {
      await client.close();
    }
  });
});
