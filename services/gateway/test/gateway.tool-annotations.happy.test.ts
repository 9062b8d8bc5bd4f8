// Pins what an MCP client learns about each tool beyond its schema (SDK Client -> gateway ->
// control plane): tools/list gives every tool a title and MCP annotations from its kind (context
// reads read-only, create not destructive, update/delete idempotent, nothing open-world), the same
// on the fast path's plain JSON answer and in the admin preview; a legacy v1 instance's tools carry
// them too; a progressive AEI annotates its catalog tools and gives each API's annotations in
// get_api_details.
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let token: string;
let tableId: string;
let directKey: string;
let directAei: string;

const READ = { readOnlyHint: true, openWorldHint: false };
const WRITE = { readOnlyHint: false, openWorldHint: false };

beforeAll(async () => {
  stack = await startStack();
  token = (await stack.admin('POST', '/api/v2/users', { name: 'annotations' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', {
    name: 'CRM',
    data: { customers: [{ id: 'c1', name: 'Ada' }] },
  });
  tableId = table.id;
  const specs = [
    ['find_customers', 'query', ''],
    ['add_customer', 'create', '/customers'],
    ['change_customer', 'update', '/customers'],
    ['remove_customer', 'delete', '/customers'],
  ] as const;
  const adis = [];
  for (const [name, op, path] of specs) {
    adis.push(
      await as('POST', '/api/v2/adis', { table_id: tableId, json_path: path, operation_type: op, name }),
    );
  }
  const aei = await as('POST', '/api/v2/aeis', { name: 'agent' });
  directKey = aei.api_key;
  directAei = aei.id;
  await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    adis.map((a: Json) => ({ adi_id: a.id })),
  );
});
afterAll(() => stack.close());

const EXPECTED = [
  { name: 'find_customers', title: 'Query CRM', annotations: { title: 'Query CRM', ...READ } },
  {
    name: 'add_customer',
    title: 'Add to CRM /customers',
    annotations: { title: 'Add to CRM /customers', ...WRITE, destructiveHint: false, idempotentHint: false },
  },
  {
    name: 'change_customer',
    title: 'Update CRM /customers',
    annotations: { title: 'Update CRM /customers', ...WRITE, destructiveHint: true, idempotentHint: true },
  },
  {
    name: 'remove_customer',
    title: 'Delete from CRM /customers',
    annotations: {
      title: 'Delete from CRM /customers',
      ...WRITE,
      destructiveHint: true,
      idempotentHint: true,
    },
  },
];

const hints = (tools: { name: string; title?: string; annotations?: unknown }[]) =>
  tools.map(({ name, title, annotations }) => ({ name, title, annotations }));

describe('tool annotations in tools/list', () => {
  it('gives every tool of a direct AEI its title and annotations, as the admin preview does', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    const { tools } = await client.listTools();
    expect(hints(tools)).toEqual(EXPECTED);
    const preview = await stack.admin('GET', `/api/v2/aeis/${directAei}/tools`, undefined, token);
    expect(hints(preview.tools)).toEqual(EXPECTED);
  });

  it('answers the same annotations on the fast path (plain JSON on a held session)', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await fetch(`${stack.gatewayUrl}/api/v2/mcp/server/${directKey}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { result: { tools: Json[] } };
    expect(hints(body.result.tools)).toEqual(EXPECTED);
  });

  it('annotates the tools of a legacy v1 instance by their operation', async () => {
    const instance = await stack.admin(
      'POST',
      '/api/v1/mcp',
      { table_id: tableId, json_pointer: '/customers' },
      token,
    );
    const client = await stack.connect(`/api/v1/mcp/server/${instance.api_key}`);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('query_data')).toMatchObject({
      title: 'Query CRM /customers',
      annotations: { readOnlyHint: true, openWorldHint: false },
    });
    expect(byName.get('delete_data')?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
  });

  it('annotates a progressive AEI’s catalog tools and each API in get_api_details', async () => {
    const adi = await stack.admin(
      'POST',
      '/api/v2/adis',
      { table_id: tableId, json_path: '/customers', operation_type: 'create', name: 'add_one' },
      token,
    );
    const aei = await stack.admin(
      'POST',
      '/api/v2/aeis',
      { name: 'catalog', exposure_mode: 'progressive' },
      token,
    );
    await stack.admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id }, token);
    const client = await stack.connect(`/api/v2/mcp/server/${aei.api_key}`);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('get_api_details')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('execute_apis')?.annotations).toMatchObject({ readOnlyHint: false });
    expect(byName.get('execute_apis')?.title).toBe('Run APIs');

    await client.callTool({ name: 'initialize_session', arguments: { app_id: 'default' } });
    const details = resultJson(
      await client.callTool({ name: 'get_api_details', arguments: { api_names: ['add_one'] } }),
    );
    expect(details.apis[0]).toMatchObject({
      name: 'add_one',
      title: 'Add to CRM /customers',
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    });
  });
});
