// Pins the demo a fresh install starts with: on a database without user data the root user gets a
// "Demo" project, a CRM table and an exposure whose api_key a gateway can use at once, with its
// tools answering (the custom JavaScript one included); a database that holds any table is left alone, and the demo is seeded only once
// even by two control planes starting together.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_AEI, DEMO_PROJECT, seedDemo, wantsDemo, type DemoSeed } from '../src/demo.ts';
import type { DomainContext } from '../src/domain/context.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let ctx: DomainContext;
let demo: DemoSeed;
beforeAll(async () => {
  t = await startTestApp();
  // The app's domain: it carries the sandbox that checks the demo's custom tool.
  ctx = { ...t.app.domain, listener: { configChanged: () => {} } };
});
afterAll(() => t.close());

describe('demo seed', () => {
  it('is wanted on the embedded database, on PostgreSQL only when asked, never when refused', () => {
    expect(wantsDemo(undefined, 'pglite')).toBe(true);
    expect(wantsDemo(undefined, 'postgres')).toBe(false);
    expect(wantsDemo(true, 'postgres')).toBe(true);
    expect(wantsDemo(false, 'pglite')).toBe(false);
  });

  it('leaves a database that holds any table alone', async () => {
    const user = await t.newUser('early-bird');
    const table = await t.call('POST', '/api/v2/tables', {
      token: user.token,
      body: { name: 'mine', data: {} },
    });
    expect(table.status).toBe(201);

    expect(await seedDemo(ctx)).toBeUndefined();
    expect(await t.database.prisma.aei.count()).toBe(0);
    expect(await t.database.prisma.project.count()).toBe(0);

    // Empty again for the next case.
    expect((await t.call('DELETE', `/api/v2/tables/${table.body.id}`, { token: user.token })).status).toBe(
      204,
    );
  });

  it('seeds an empty database once, for root, even when two starts race', async () => {
    const outcomes = await Promise.all([seedDemo(ctx), seedDemo(ctx)]);
    const seeded = outcomes.filter((o) => o !== undefined);
    expect(seeded).toHaveLength(1);
    demo = seeded[0]!;
    expect(demo.apiKey).toMatch(/^bnd_key_/);
    expect(await t.database.prisma.project.count()).toBe(1);
    expect(await t.database.prisma.aei.count()).toBe(1);

    const projects = await t.call('GET', '/api/v2/projects');
    expect(projects.body.items).toMatchObject([{ name: DEMO_PROJECT, slug: 'demo' }]);
    const aei = await t.call('GET', `/api/v2/aeis/${demo.aeiId}`);
    expect(aei.body).toMatchObject({ name: DEMO_AEI, status: 'enabled', exposure_mode: 'direct' });

    const tools = await t.call('GET', `/api/v2/aeis/${demo.aeiId}/tools`);
    expect(tools.status).toBe(200);
    const names = tools.body.tools.map((tool: { name: string }) => tool.name).sort();
    expect(names).toEqual(
      [
        'create_customer',
        'get_crm_schema',
        'order_totals',
        'preview_customers',
        'preview_orders',
        'query_crm',
        'select_customers',
        'update_customer',
      ].sort(),
    );
    expect(demo.toolNames.sort()).toEqual(names);

    expect(await seedDemo(ctx)).toBeUndefined();
    expect(await t.database.prisma.aei.count()).toBe(1);
  });

  it('gives an api_key a gateway can use at once, with tools that answer', async () => {
    const config = await t.call('GET', `/internal/aei/mcp/${demo.apiKey}/config`, { token: INTERNAL_TOKEN });
    expect(config.status).toBe(200);
    const bindings: { binding_id: string; tool_name: string; adi_ref: { adi_id: string } }[] =
      config.body.bindings;
    expect(bindings).toHaveLength(8);

    const call = async (toolName: string, args: Record<string, unknown>) => {
      const binding = bindings.find((b) => b.tool_name === toolName)!;
      const res = await t.call('POST', `/internal/adi/${binding.adi_ref.adi_id}/execute`, {
        token: INTERNAL_TOKEN,
        body: {
          aei_id: demo.aeiId,
          binding_id: binding.binding_id,
          arguments: args,
          request_id: `demo-${toolName}`,
        },
      });
      expect(res.status).toBe(200);
      return { isError: res.body.isError === true, value: JSON.parse(res.body.content[0].text) };
    };

    const gold = await call('query_crm', { query: "customers[?tier=='gold'].name" });
    expect(gold).toEqual({ isError: false, value: ['Ada Lovelace', 'Katherine Johnson'] });
    const picked = await call('select_customers', { keys: ['c-002'] });
    expect(JSON.stringify(picked.value)).toContain('grace@cobol.example');
    const page = await call('preview_customers', { limit: 2 });
    expect(page.value.total).toBe(8);
    const refused = await call('create_customer', { value: { id: 'c-009', name: 'No Email' } });
    expect(refused.isError).toBe(true);
    expect(refused.value.error.code).toBe('VALIDATION_FAILED');
    // The custom tool reads the orders and adds up per currency.
    const paid = await call('order_totals', { status: 'paid' });
    expect(paid).toEqual({
      isError: false,
      value: { orders: 3, totals: { EUR: 1250, USD: 420.5, GBP: 310.75 } },
    });
    const all = await call('order_totals', {});
    expect(all.value.orders).toBe(8);
  });
});
