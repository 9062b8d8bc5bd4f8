// Pins progressive discovery end to end (SDK Client -> gateway -> control plane): a progressive
// AEI lists only the catalog tools; the design's walk (initialize, categories, APIs, details,
// execute two APIs in one batch where one fails) gives the documented shapes; sessions never see
// each other's app; with Redis a session survives another replica; a 1,000-binding AEI lists under
// 2% of the bytes it lists in direct mode.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { resultJson, type Json } from '@bindery/test-support';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let stack: Stack;
let token: string;
let apiKey: string;
let aeiId: string;
const names: Record<string, string> = {};

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { REDIS_URL } });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'progressive' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const crm = await as('POST', '/api/v2/projects', { name: 'CRM' });
  const billing = await as('POST', '/api/v2/projects', { name: 'Billing' });
  const customers = await as('POST', '/api/v2/tables', {
    name: 'customers',
    project_id: crm.id,
    data: {
      list: [
        { id: 1, name: 'Ada' },
        { id: 2, name: 'Grace' },
      ],
    },
  });
  const invoices = await as('POST', '/api/v2/tables', {
    name: 'invoices',
    project_id: billing.id,
    data: [{ n: 1 }],
  });
  const loose = await as('POST', '/api/v2/tables', { name: 'notes', data: { text: 'hi' } });
  const adis = {
    find: await as('POST', '/api/v2/adis', {
      table_id: customers.id,
      json_path: '/list',
      operation_type: 'query',
      category: 'Customers',
      description: 'Search customers with a JMESPath query',
    }),
    pick: await as('POST', '/api/v2/adis', {
      table_id: customers.id,
      json_path: '/list',
      operation_type: 'select',
      category: 'Customers',
      config: { id_field: 'id' },
    }),
    add: await as('POST', '/api/v2/adis', {
      table_id: customers.id,
      json_path: '/list',
      operation_type: 'create',
      category: 'Writes',
    }),
    peek: await as('POST', '/api/v2/adis', {
      table_id: invoices.id,
      json_path: '',
      operation_type: 'preview',
    }),
    read: await as('POST', '/api/v2/adis', { table_id: loose.id, json_path: '', operation_type: 'get_all' }),
  };
  const aei = await as('POST', '/api/v2/aeis', {
    name: 'catalog',
    exposure_mode: 'progressive',
    catalog_search: true,
  });
  apiKey = aei.api_key;
  aeiId = aei.id;
  const bound = await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    Object.values(adis).map((a: Json) => ({ adi_id: a.id })),
  );
  Object.keys(adis).forEach((k, i) => (names[k] = bound.items[i].tool_name));
});
afterAll(() => stack.close());

const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
  const result = await client.callTool({ name, arguments: args });
  return { isError: result.isError === true, value: resultJson(result) };
};

describe('progressive discovery', () => {
  it('lists only the catalog tools (and search_apis, enabled here)', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'initialize_session',
      'get_categories',
      'get_apis_by_category',
      'get_api_details',
      'execute_apis',
      'search_apis',
    ]);
    const preview = await stack.admin('GET', `/api/v2/aeis/${aeiId}/tools`, undefined, token);
    expect(preview.tools.map((t: { name: string }) => t.name)).toEqual(tools.map((t) => t.name));
  });

  it('walks app -> categories -> APIs -> details -> batch execute', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    const early = await call(client, 'get_categories');
    expect(early).toMatchObject({ isError: true, value: { error: { code: 'SESSION_NOT_INITIALIZED' } } });
    expect(early.value.error.details.apps).toEqual(expect.arrayContaining(['crm', 'billing', 'default']));

    const refused = await call(client, 'initialize_session', { app_id: 'marketing' });
    expect(refused).toMatchObject({ isError: true, value: { error: { code: 'FORBIDDEN' } } });
    const init = await call(client, 'initialize_session', { app_id: 'crm' });
    expect(init).toEqual({
      isError: false,
      value: { success: true, message: expect.any(String), app_id: 'crm' },
    });

    const categories = await call(client, 'get_categories');
    expect(categories.value).toEqual({
      categories: [
        { id: 'customers', name: 'Customers', description: expect.any(String) },
        { id: 'writes', name: 'Writes', description: expect.any(String) },
      ],
    });

    const apis = await call(client, 'get_apis_by_category', { category_id: 'customers' });
    expect(apis.value.apis).toEqual([
      { name: names.find, description: 'Search customers with a JMESPath query', category_id: 'customers' },
      { name: names.pick, description: expect.stringContaining('customers'), category_id: 'customers' },
    ]);
    const noCategory = await call(client, 'get_apis_by_category', { category_id: 'nope' });
    expect(noCategory.value.error.code).toBe('NOT_FOUND');

    const details = await call(client, 'get_api_details', { api_names: [names.find, 'ghost'] });
    expect(details.value.unknown_apis).toEqual(['ghost']);
    expect(details.value.apis).toHaveLength(1);
    expect(details.value.apis[0]).toMatchObject({
      name: names.find,
      category_id: 'customers',
      // The answer itself (batch data is not wrapped under `result` as structured content is).
      response_schema: { description: 'What the expression returned.' },
    });
    expect(details.value.apis[0].parameters).toEqual([
      { name: 'query', type: 'string', required: true, description: expect.any(String), default: null },
    ]);

    const batch = await call(client, 'execute_apis', {
      executions: [
        { api_name: names.find, parameters: { query: '[1].name' } },
        { api_name: names.find, parameters: { query: '[?' } },
        { api_name: names.peek, parameters: {} },
      ],
    });
    expect(batch.isError).toBe(false);
    expect(batch.value.results).toEqual([
      { api_name: names.find, success: true, data: 'Grace', error: null },
      {
        api_name: names.find,
        success: false,
        data: null,
        error: expect.objectContaining({ code: 'INVALID_QUERY' }),
      },
      {
        api_name: names.peek,
        success: false,
        data: null,
        error: expect.objectContaining({ code: 'NOT_FOUND' }),
      },
    ]);

    const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${aeiId}&limit=2`, undefined, token);
    expect(audit.items.map((e: { status: string }) => e.status).sort()).toEqual(['error', 'ok']);
  });

  it('search_apis ranks by name, category and description', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    await call(client, 'initialize_session', { app_id: 'crm' });
    const found = await call(client, 'search_apis', { query: 'search customers' });
    expect(found.value.apis[0].name).toBe(names.find);
    expect(found.value.apis.map((a: { name: string }) => a.name)).not.toContain(names.peek);
  });

  it('two sessions with different apps never see each other’s app or cache', async () => {
    const a = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    const b = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    await Promise.all([
      call(a, 'initialize_session', { app_id: 'crm' }),
      call(b, 'initialize_session', { app_id: 'billing' }),
    ]);
    const [catsA, catsB] = await Promise.all([call(a, 'get_categories'), call(b, 'get_categories')]);
    expect(catsA.value.categories.map((c: { id: string }) => c.id)).toEqual(['customers', 'writes']);
    expect(catsB.value.categories.map((c: { id: string }) => c.id)).toEqual(['invoices']);
    const crossed = await call(b, 'execute_apis', {
      executions: [{ api_name: names.find, parameters: { query: '@' } }],
    });
    expect(crossed.value.results[0].error.code).toBe('NOT_FOUND');
    expect((await call(b, 'get_apis_by_category', { category_id: 'customers' })).value.error.code).toBe(
      'NOT_FOUND',
    );
    expect((await call(a, 'get_categories')).value.categories.map((c: { id: string }) => c.id)).toEqual([
      'customers',
      'writes',
    ]);
    // Switching app drops the old app's cached answers.
    await call(a, 'initialize_session', { app_id: 'default' });
    expect((await call(a, 'get_categories')).value.categories.map((c: { id: string }) => c.id)).toEqual([
      'notes',
    ]);
  });

  it('a session survives being served by another replica (state in Redis)', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    await call(client, 'initialize_session', { app_id: 'billing' });
    const transport = client.transport as StreamableHTTPClientTransport;
    const replica = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl, REDIS_URL }),
      false,
    );
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    try {
      const res = await fetch(`${url}/api/v2/mcp/server/${apiKey}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId!,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { name: 'get_categories', arguments: {} },
        }),
      });
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(text).toContain('invoices');
      expect(text).not.toContain('SESSION_NOT_INITIALIZED');
    } finally {
      await replica.close();
    }
  });
});

describe('execute_apis rate limit', () => {
  it('refuses a batch once the session has spent its executions, with retry_after_seconds', async () => {
    const replica = await buildGateway(
      loadGatewayConfig({
        INTERNAL_TOKEN,
        CONTROL_PLANE_URL: stack.controlPlaneUrl,
        EXECUTE_RATE_PER_SECOND: '1',
        EXECUTE_RATE_BURST: '50',
      }),
      false,
    );
    const url = await replica.listen({ host: '127.0.0.1', port: 0 });
    const client = new Client({ name: 'limited', version: '1' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/api/v2/mcp/server/${apiKey}`)));
      await call(client, 'initialize_session', { app_id: 'crm' });
      const executions = Array.from({ length: 50 }, () => ({
        api_name: names.find,
        parameters: { query: 'length(@)' },
      }));
      const full = await call(client, 'execute_apis', { executions });
      expect(full.value.results).toHaveLength(50);
      expect(full.value.results.every((r: { success: boolean }) => r.success)).toBe(true);
      const over = await call(client, 'execute_apis', { executions: executions.slice(0, 2) });
      expect(over).toMatchObject({ isError: true, value: { error: { code: 'RATE_LIMITED' } } });
      expect(over.value.error.details.retry_after_seconds).toBeGreaterThanOrEqual(1);
    } finally {
      await client.close();
      await replica.close();
    }
  });
});

describe('catalog size', () => {
  it('a 1,000-binding AEI lists under 2% of its direct-mode bytes; in direct mode 5 pages of 200 tools (and 3 of its 500 resources), none across an admin change', async () => {
    const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
    const table = await as('POST', '/api/v2/tables', { name: 'big', data: { items: [] } });
    const aei = await as('POST', '/api/v2/aeis', { name: 'big', exposure_mode: 'progressive' });
    const adiIds: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const adi = await as('POST', '/api/v2/adis', {
        table_id: table.id,
        json_path: '/items',
        operation_type: (['query', 'preview', 'select', 'create'] as const)[i % 4],
        category: `Area ${i % 25}`,
      });
      adiIds.push(adi.id);
    }
    for (let i = 0; i < 1000; i += 500) {
      await as(
        'POST',
        `/api/v2/aeis/${aei.id}/bindings`,
        adiIds.slice(i, i + 500).map((adi_id) => ({ adi_id })),
      );
    }
    const listBytes = async () => {
      const client = new Client({ name: 'size', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}/api/v2/mcp/server/${aei.api_key}`)),
      );
      let bytes = 0;
      let count = 0;
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        bytes += JSON.stringify(page).length;
        count += page.tools.length;
        cursor = page.nextCursor;
      } while (cursor);
      await client.close();
      return { bytes, count };
    };
    const progressive = await listBytes();
    await as('PATCH', `/api/v2/aeis/${aei.id}`, { exposure_mode: 'direct' });
    // The invalidation lands asynchronously, within milliseconds: list until it has.
    let direct = await listBytes();
    for (let i = 0; i < 50 && direct.count !== 1000; i++) {
      await new Promise((r) => setTimeout(r, 100));
      direct = await listBytes();
    }
    expect(progressive.count).toBe(5);
    expect(direct.count).toBe(1000);
    console.log(`tools/list bytes, 1,000 bindings: progressive ${progressive.bytes}, direct ${direct.bytes}`);
    expect(progressive.bytes / direct.bytes).toBeLessThan(0.02);

    // Direct mode pages by the default page size (200): five pages, the same order every time.
    const client = new Client({ name: 'pages', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}/api/v2/mcp/server/${aei.api_key}`)),
    );
    /** Every page of a list, each as the keys `pick` takes from it. */
    const pageThrough = async <Page extends { nextCursor?: string }>(
      list: (params: { cursor?: string }) => Promise<Page>,
      pick: (page: Page) => string[],
    ) => {
      const keys: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await list(cursor ? { cursor } : {});
        keys.push(pick(page));
        cursor = page.nextCursor;
      } while (cursor);
      return keys;
    };
    const pages = () =>
      pageThrough(
        (params) => client.listTools(params),
        (page) => page.tools.map((t) => t.name),
      );
    const before = await pages();
    expect(before.map((p) => p.length)).toEqual([200, 200, 200, 200, 200]);
    expect(await pages()).toEqual(before);
    // Resources page the same way: the 500 query and select tools read their whole context.
    const resourcePages = () =>
      pageThrough(
        (params) => client.listResources(params),
        (page) => page.resources.map((r) => r.uri),
      );
    const resourcesBefore = await resourcePages();
    expect(resourcesBefore.map((p) => p.length)).toEqual([200, 200, 100]);
    expect(await resourcePages()).toEqual(resourcesBefore);
    // An admin change between page 2 and page 3: the old cursors fail, fresh listings are whole.
    const first = await client.listTools();
    const second = await client.listTools({ cursor: first.nextCursor! });
    const firstResources = await client.listResources();
    const secondResources = await client.listResources({ cursor: firstResources.nextCursor! });
    const bindings = await as('GET', `/api/v2/aeis/${aei.id}/bindings?limit=1`);
    await as('PATCH', `/api/v2/aeis/${aei.id}/bindings/${bindings.items[0].id}`, {
      tool_name: 'renamed_first',
    });
    const stale = await client.listTools({ cursor: second.nextCursor! }).then(
      () => undefined,
      (error: unknown) => error as { code: number; message: string },
    );
    expect(stale?.code).toBe(-32602);
    expect(stale?.message).toMatch(/the list changed since this cursor was handed out/);
    const after = await pages();
    expect(after.map((p) => p.length)).toEqual([200, 200, 200, 200, 200]);
    expect(after.flat()).toEqual(['renamed_first', ...before.flat().slice(1)]);
    const staleResources = await client.listResources({ cursor: secondResources.nextCursor! }).then(
      () => undefined,
      (error: unknown) => error as { code: number; message: string },
    );
    expect(staleResources?.code).toBe(-32602);
    expect(staleResources?.message).toMatch(/the list changed since this cursor was handed out/);
    const resourcesAfter = await resourcePages();
    expect(resourcesAfter.map((p) => p.length)).toEqual([200, 200, 100]);
    const uriOf = (tool: string) => `bindery://tools/${tool}/context`;
    expect([...resourcesAfter.flat()].sort()).toEqual(
      resourcesBefore
        .flat()
        .map((uri) => (uri === uriOf(before.flat()[0]!) ? uriOf('renamed_first') : uri))
        .sort(),
    );
    await client.close();
  }, 180_000);
});
