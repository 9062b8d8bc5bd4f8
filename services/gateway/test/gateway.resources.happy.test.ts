// An AEI's contexts as MCP resources, through the real gateway and control plane to the SDK
// Client: the capabilities declare resources (with listChanged and subscribe); resources/list lists the context
// of each bound tool that can already read all of it (a query tool, not a preview tool that shows
// key fields only); resources/read answers the whole context (as get_all would), and through the
// template one node under it; a path that climbs out (`..`, `%2e%2e`) or names nothing is refused,
// and so is the preview tool's context; a context over the result limit answers an error pointing
// to the template; every read is audited as a get_all with its pointer; a change to the bindings
// reaches open sessions as resources/list_changed, a change to anything else does not.
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let client: Client;

const CUSTOMERS = [
  { id: 1, name: 'Ada' },
  { id: 2, name: 'Grace' },
];

async function refusal(request: Promise<unknown>, code: number): Promise<McpError> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  expect((error as McpError).code).toBe(code);
  return error as McpError;
}

const read = async (uri: string) => {
  const answer = await client.readResource({ uri });
  expect(answer.contents).toHaveLength(1);
  expect(answer.contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
  return JSON.parse(String((answer.contents[0] as { text: string }).text)) as unknown;
};

beforeAll(async () => {
  // A small result limit, so one context is too large to read whole.
  stack = await startStack({ controlPlaneEnv: { RESULT_LIMIT_BYTES: '4096' } });
  exposed = await twoTableExposure(stack);
  client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
});
afterAll(() => stack.close());

describe('resources of an AEI', () => {
  it('are declared, listed per context tool, with the template for a part of one', async () => {
    expect(client.getServerCapabilities()?.resources).toEqual({ listChanged: true, subscribe: true });
    const { resources } = await client.listResources();
    expect(resources).toEqual([
      expect.objectContaining({
        uri: 'bindery://tools/find_customers/context',
        name: 'find_customers',
        mimeType: 'application/json',
      }),
    ]);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toEqual([
      expect.objectContaining({ uriTemplate: 'bindery://tools/{tool_name}/context{/pointer*}' }),
    ]);
  });

  it('resources/read answers the context, and the template one node under it', async () => {
    expect(await read('bindery://tools/find_customers/context')).toEqual(CUSTOMERS);
    expect(await read('bindery://tools/find_customers/context/0')).toEqual(CUSTOMERS[0]);
    expect(await read('bindery://tools/find_customers/context/1/name')).toBe('Grace');
  });

  it('a preview tool’s context is no resource: it shows key fields only', async () => {
    const error = await refusal(
      client.readResource({ uri: 'bindery://tools/peek_orders/context/1/total' }),
      -32002,
    );
    expect(error.message).not.toContain('7');
  });

  it('is audited as a get_all of the binding, with the pointer it read', async () => {
    await read('bindery://tools/find_customers/context/0/name');
    const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${exposed.aeiId}`, undefined, exposed.token);
    expect(audit.items[0]).toMatchObject({
      action: 'resource.read',
      operation: 'get_all',
      tool_name: 'find_customers',
      status: 'ok',
      // The SHA-256 of its arguments as canonical JSON: the pointer it read.
      args_digest: createHash('sha256').update('{"pointer":"/0/name"}').digest('hex'),
    });
  });

  it('refuses a path that climbs out, a bad encoding, a missing node and an unknown tool', async () => {
    for (const uri of [
      'bindery://tools/find_customers/context/..',
      'bindery://tools/find_customers/context/%2e%2e/%2E%2E',
      'bindery://tools/find_customers/context/0/./name',
    ]) {
      const error = await refusal(client.readResource({ uri }), -32602);
      expect(error.message).toContain('stays inside its tool');
    }
    await refusal(client.readResource({ uri: 'bindery://tools/find_customers/context/%E0%A4%A' }), -32602);
    const missing = await refusal(
      client.readResource({ uri: 'bindery://tools/find_customers/context/7' }),
      -32002,
    );
    expect(missing.message).toContain('bindery://tools/find_customers/context/7');
    await refusal(client.readResource({ uri: 'bindery://tools/nope/context' }), -32002);
    await refusal(client.readResource({ uri: 'bindery://tools/find_customers/other' }), -32002);
    await refusal(client.readResource({ uri: 'file:///etc/passwd' }), -32002);
  });

  it('a context over the result limit: an error pointing to the template', async () => {
    const big = Array.from({ length: 200 }, (_, i) => ({ id: i + 3, name: `customer number ${i + 3}` }));
    await stack.admin(
      'PUT',
      `/api/v2/tables/${exposed.tables.customers}/data`,
      { list: [...CUSTOMERS, ...big] },
      exposed.token,
    );
    const error = await refusal(
      client.readResource({ uri: 'bindery://tools/find_customers/context' }),
      -32602,
    );
    expect(error.message).toContain('through the template (bindery://tools/find_customers/context/{path})');
    expect(await read('bindery://tools/find_customers/context/150')).toEqual(big[148]);
  });

  it('a change to the bindings reaches open sessions as resources/list_changed; other changes do not', async () => {
    const other = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
    let changed = 0;
    other.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changed += 1;
    });
    const settle = () => new Promise((resolve) => setTimeout(resolve, 500));
    // A prompt: the exposure changed, its resources did not.
    await stack.admin(
      'POST',
      `/api/v2/aeis/${exposed.aeiId}/prompts`,
      { name: 'hello', messages: [{ role: 'user', text: 'Hello!' }] },
      exposed.token,
    );
    await settle();
    expect(changed).toBe(0);
    await stack.admin(
      'PATCH',
      `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.find_customers}`,
      { tool_name: 'search_customers' },
      exposed.token,
    );
    const deadline = Date.now() + 5_000;
    while (changed === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await settle();
    expect(changed).toBe(1);
    const { resources } = await other.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['bindery://tools/search_customers/context']);
  });
});
