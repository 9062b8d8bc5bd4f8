// Pins writes an agent can retry safely, end to end (SDK Client -> gateway -> control plane
// process): a tools/call carrying params._meta["bindery/idempotency_key"] and sent again answers
// its first outcome and writes once, on the plain-JSON path and on the SDK's streaming path, and
// in execute_apis items; a malformed key is -32602. A write whose answer never came (the control
// plane frozen past the call timeout) answers OUTCOME_UNKNOWN, never "try again", naming the key;
// once the control plane resumes, the write it did apply is not applied twice by the retry. A read
// that timed out says it only reads.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let token: string;
let tableId: string;
let directKey: string;
let catalogKey: string;

const KEY = 'bindery/idempotency_key';

beforeAll(async () => {
  // A call unanswered for 1.5 s times out; the control plane, frozen, answers nothing.
  stack = await startStack({ gatewayEnv: { TOOL_CALL_TIMEOUT_MS: '1500' } });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'retrier' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', { name: 'ledger', data: { items: [] } });
  tableId = table.id;
  const add = await as('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/items',
    operation_type: 'create',
    category: 'Ledger',
  });
  const read = await as('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '/items',
    operation_type: 'query',
    category: 'Ledger',
  });
  const direct = await as('POST', '/api/v2/aeis', { name: 'direct' });
  await as('POST', `/api/v2/aeis/${direct.id}/bindings`, [
    { adi_id: add.id, tool_name: 'add_item' },
    { adi_id: read.id, tool_name: 'find_items' },
  ]);
  directKey = direct.api_key;
  const catalog = await as('POST', '/api/v2/aeis', { name: 'catalog', exposure_mode: 'progressive' });
  await as('POST', `/api/v2/aeis/${catalog.id}/bindings`, [{ adi_id: add.id, tool_name: 'add_item' }]);
  catalogKey = catalog.api_key;
});
afterAll(async () => {
  stack?.thawControlPlane();
  await stack?.close();
});

async function items(): Promise<string[]> {
  return (await stack.admin('GET', `/api/v2/tables/${tableId}`, undefined, token)).data.items;
}
const count = async (value: string) => (await items()).filter((v) => v === value).length;
const add = (client: Client, value: string, key?: string) =>
  client.callTool({ name: 'add_item', arguments: { value }, ...(key && { _meta: { [KEY]: key } }) });

describe('a write sent again with its idempotency key', () => {
  it('answers the first outcome and writes once (plain JSON answers)', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    const first = await add(client, 'direct', 'k-direct');
    const again = await add(client, 'direct', 'k-direct');
    expect(first.isError).toBeFalsy();
    expect(again).toEqual(first);
    expect(await count('direct')).toBe(1);
  });

  it('answers the first outcome and writes once (streamed answers, after logging/setLevel)', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    await client.setLoggingLevel('debug');
    const first = await add(client, 'streamed', 'k-streamed');
    const again = await add(client, 'streamed', 'k-streamed');
    expect(again.content).toEqual(first.content);
    expect(await count('streamed')).toBe(1);
  });

  it('without a key, writes each time', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    await add(client, 'unkeyed');
    await add(client, 'unkeyed');
    expect(await count('unkeyed')).toBe(2);
  });

  it('in execute_apis items too', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${catalogKey}`);
    await client.callTool({ name: 'initialize_session', arguments: { app_id: 'default' } });
    const batch = {
      executions: [{ api_name: 'add_item', parameters: { value: 'batched' }, idempotency_key: 'k-batch' }],
    };
    const first = resultJson(await client.callTool({ name: 'execute_apis', arguments: batch }));
    const again = resultJson(await client.callTool({ name: 'execute_apis', arguments: batch }));
    expect(first.results[0].success).toBe(true);
    expect(again).toEqual(first);
    expect(await count('batched')).toBe(1);
  });

  it.each([
    ['empty', ''],
    ['with a space', 'a key'],
    ['not a string', 42],
  ])('a malformed key (%s) is -32602 and nothing is written', async (_name, key) => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    const call = client.callTool({ name: 'add_item', arguments: { value: 'never' }, _meta: { [KEY]: key } });
    await expect(call).rejects.toBeInstanceOf(McpError);
    await expect(call).rejects.toMatchObject({ code: -32602 });
    expect(await count('never')).toBe(0);
  });
});

describe('a call whose answer never came', () => {
  it('a write answers OUTCOME_UNKNOWN naming its key; its retry after resume writes nothing more', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    stack.freezeControlPlane();
    let lost: Json;
    try {
      lost = resultJson(await add(client, 'frozen', 'k-frozen'));
    } finally {
      stack.thawControlPlane();
    }
    expect(lost.error.code).toBe('OUTCOME_UNKNOWN');
    expect(lost.error.message).toMatch(/may have been applied/);
    expect(lost.error.message).toMatch(/same idempotency key \("k-frozen"\)/);
    expect(lost.error.message).not.toMatch(/try again/);
    expect(lost.error.details).toEqual({ sent: true, idempotency_key: 'k-frozen' });
    await stack.waitForReadiness('ready', 10_000);

    const retried = await add(client, 'frozen', 'k-frozen');
    expect(retried.isError).toBeFalsy();
    expect(await count('frozen')).toBe(1);
  });

  it('a write without a key says to check before retrying, and how to avoid it', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    stack.freezeControlPlane();
    let lost: Json;
    try {
      lost = resultJson(await add(client, 'unkeyed-frozen'));
    } finally {
      stack.thawControlPlane();
    }
    expect(lost.error.code).toBe('OUTCOME_UNKNOWN');
    expect(lost.error.message).toMatch(/check the data before retrying/);
    expect(lost.error.message).toContain(KEY);
    await stack.waitForReadiness('ready', 10_000);
  });

  it('a read answers TIMEOUT and says nothing changed', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${directKey}`);
    stack.freezeControlPlane();
    let lost: Json;
    try {
      lost = resultJson(await client.callTool({ name: 'find_items', arguments: { query: 'length(@)' } }));
    } finally {
      stack.thawControlPlane();
    }
    expect(lost.error.code).toBe('TIMEOUT');
    expect(lost.error.message).toMatch(/only reads, so nothing changed/);
    await stack.waitForReadiness('ready', 10_000);
  });
});
