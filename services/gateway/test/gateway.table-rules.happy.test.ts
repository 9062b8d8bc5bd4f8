// Pins that a table's rules hold for every tool write through an exposure (SDK Client -> gateway
// -> control plane): a context `delete` under a path protected from deletion, and a custom tool's
// `ctx.context.write` that breaks the table's schema or a person-only path, are tool errors with
// code RULE_VIOLATED naming the rule, and nothing is written; writes that keep the rules land.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let client: Client;
let as: (method: string, path: string, body?: unknown) => Promise<Json>;
let tableId: string;
let aeiId: string;
let userToken: string;

beforeAll(async () => {
  stack = await startStack();
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'rules' })).token;
  userToken = token;
  as = (method, path, body) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', {
    name: 'crm',
    data: {
      customers: [
        { id: 'c1', name: 'Ann' },
        { id: 'c2', name: 'Bob' },
      ],
      settings: { plan: 'pro' },
    },
  });
  tableId = table.id;
  await as('PUT', `/api/v2/tables/${tableId}/rules`, {
    protect: [{ path: '/customers', deny: ['delete'] }],
    person_only: ['/settings'],
    schema: {
      type: 'object',
      properties: { customers: { type: 'array', items: { type: 'object', required: ['id', 'name'] } } },
    },
  });
  const adis: Json[] = [
    await as('POST', '/api/v2/adis', {
      name: 'remove_customer',
      table_id: tableId,
      json_path: '/customers',
      operation_type: 'delete',
    }),
    await as('POST', '/api/v2/adis', {
      name: 'rename_customer',
      table_id: tableId,
      json_path: '/customers',
      operation_type: 'update',
    }),
    await as('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'add_customer',
      code: `export default async (args, ctx) => {
        try {
          return await ctx.context.write('create', { path: '/customers', value: args.customer });
        } catch (error) {
          return { refused: error.code, rule: error.details && error.details.rule, message: error.message };
        }
      }`,
      input_schema: { type: 'object', properties: { customer: { type: 'object' } } },
      context: { table_id: tableId, json_path: '', write: true },
    }),
    await as('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'set_plan',
      code: `export default async (args, ctx) => ctx.context.write('update', { path: '/settings/plan', value: args.plan })`,
      input_schema: { type: 'object', properties: { plan: { type: 'string' } } },
      context: { table_id: tableId, json_path: '', write: true },
    }),
  ];
  const aei = await as('POST', '/api/v2/aeis', { name: 'agent' });
  aeiId = aei.id;
  await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    adis.map((adi) => ({ adi_id: adi.id })),
  );
  client = await stack.connect(`/api/v2/mcp/server/${aei.api_key}`);
});
afterAll(() => stack.close());

const table = async () => (await as('GET', `/api/v2/tables/${tableId}`)) as { version: number; data: Json };

describe('a table rule through an exposure', () => {
  it('refuses a context delete under a path protected from deletion, naming the rule', async () => {
    const before = await table();
    const result = await client.callTool({ name: 'remove_customer', arguments: { path: '/0' } });
    expect(result.isError).toBe(true);
    const error = (resultJson(result) as { error: Json }).error;
    expect(error).toMatchObject({ code: 'RULE_VIOLATED', details: { rule: 'protect', path: '/customers' } });
    expect(await table()).toEqual(before);
  });

  it('lets a write that keeps the rules land', async () => {
    const result = await client.callTool({
      name: 'rename_customer',
      arguments: { path: '/1/name', value: 'Bobby' },
    });
    expect(result.isError).toBeFalsy();
    expect((await table()).data.customers[1]).toEqual({ id: 'c2', name: 'Bobby' });
  });

  it("refuses a custom tool's write that breaks the schema; one that keeps it lands", async () => {
    const before = await table();
    const refused = resultJson(
      await client.callTool({ name: 'add_customer', arguments: { customer: { id: 'c3' } } }),
    );
    expect(refused).toMatchObject({ refused: 'RULE_VIOLATED', rule: 'schema' });
    expect(await table()).toEqual(before);
    const landed = await client.callTool({
      name: 'add_customer',
      arguments: { customer: { id: 'c3', name: 'Cid' } },
    });
    expect(landed.isError).toBeFalsy();
    expect((await table()).data.customers).toHaveLength(3);
  });

  it("refuses a custom tool's write to a person-only path as the tool's error", async () => {
    const before = await table();
    const result = await client.callTool({ name: 'set_plan', arguments: { plan: 'free' } });
    expect(result.isError).toBe(true);
    const error = (resultJson(result) as { error: Json }).error;
    expect(error).toMatchObject({
      code: 'RULE_VIOLATED',
      details: { rule: 'person_only', path: '/settings' },
    });
    expect(await table()).toEqual(before);
  });
});

describe('a sidebar token', () => {
  it('is never accepted by the gateway, on any entry', async () => {
    const session = await stack.admin('POST', '/api/v2/sidebar/sessions', {}, userToken);
    expect(session.token).toMatch(/^bnd_sidebar_/);
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    for (const path of [
      '/api/v2/mcp/server',
      `/api/v2/mcp/aei/${aeiId}`,
      `/api/v2/mcp/server/${session.token}`,
    ]) {
      const res = await fetch(`${stack.gatewayUrl}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${session.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(initialize),
      });
      expect([401, 404], `${path}: ${res.status}`).toContain(res.status);
      expect(await res.text()).not.toContain(session.token);
    }
  });
});
