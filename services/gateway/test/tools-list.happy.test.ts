// Pins the answers to tools/list, which the gateway serialises once per config and page and then
// serves as bytes with the request's id spliced in: on a held session (fast lane, framework route,
// a session that asked for log messages) the body is, byte for byte, what JSON.stringify makes of
// `{jsonrpc, id, result}` with the tools in config order, for number and string ids (escapes
// included) and whatever protocol version the session negotiated; on the SDK transport (a batch on
// a held session, answered as SSE; a request without a session) the result is the same, as are the
// SDK Client's pages and cursors; a progressive exposure lists its catalog tools the same way.
import { progressiveTools } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '@bindery/test-support';
import { LANES, lanesFor, openSession, readAnswer, responseTo } from './support/mcp-raw.ts';
import { rawPost } from './support/raw-post.ts';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

const PAGE_SIZE = 2;
let stack: Stack;
let direct: { key: string; path: string; pages: Json[] };
let progressive: { key: string; path: string; result: Json };

/** The tools/list pages of a config v2 in direct mode, built from the config alone. */
function pagesOf(config: Json): Json[] {
  const tools = config.bindings.map((b: Json) => ({
    name: b.tool_name,
    ...(b.title !== undefined && { title: b.title }),
    description: b.tool_description,
    inputSchema: b.input_schema,
    ...(b.output_schema !== null && b.output_schema !== undefined && { outputSchema: b.output_schema }),
    ...(b.annotations !== undefined && { annotations: b.annotations }),
  }));
  const pages: Json[] = [];
  for (let offset = 0; offset < tools.length; offset += PAGE_SIZE) {
    const next = offset + PAGE_SIZE;
    pages.push({
      tools: tools.slice(offset, next),
      // `{config_version}.{the page's last tool}`: the list's version and the key the next page follows.
      ...(next < tools.length && {
        nextCursor: Buffer.from(`${config.aei.config_version}.${tools[next - 1].name}`).toString('base64url'),
      }),
    });
  }
  return pages;
}

async function configOf(key: string): Promise<Json> {
  const res = await fetch(`${stack.controlPlaneUrl}/internal/keys/${key}/config`, {
    headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
  });
  return ((await res.json()) as Json).config;
}

const list = (id: unknown, cursor?: string) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', ...(cursor && { params: { cursor } }) });
const cursorOf = (pages: Json[], page: number) => (page === 0 ? undefined : pages[page - 1].nextCursor);

/** Ids as a client may send them: the answer must carry each back exactly, escaped as JSON. */
const IDS: unknown[] = [1, 0, -7, Number.MAX_SAFE_INTEGER, 'a', '', 'q"uo\\te</script>\u2028é𝄞\u0001'];

beforeAll(async () => {
  // Every page on every lane, back to back: more than one key's rate limit lets through in a
  // second on a fast machine (the limit has tests of its own).
  stack = await startStack({
    gatewayEnv: { TOOLS_PAGE_SIZE: String(PAGE_SIZE), RATE_LIMIT_PER_SECOND: '0' },
  });
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'lists' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', {
    name: 'crm',
    data: { customers: [{ id: 1, name: 'Ada' }] },
  });
  const context = (operation_type: string, description?: string) =>
    as('POST', '/api/v2/adis', {
      table_id: table.id,
      json_path: '/customers',
      operation_type,
      ...(description !== undefined && { description }),
    });
  const adis: Json[] = [
    await context('query', 'Kunden – "café" \\ </script> \u2028 ☕ 𝄞 <b>&amp;</b>'),
    await context('preview'),
    await as('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'sum',
      description: 'Adds up numbers.',
      code: 'export default (args) => ({ sum: args.numbers.reduce((a, b) => a + b, 0) })',
      input_schema: { type: 'object', properties: { numbers: { type: 'array', items: { type: 'number' } } } },
      output_schema: { type: 'object', properties: { sum: { type: 'number' } } },
    }),
    await context('create'),
    await context('select'),
  ];
  const bind = async (body: Json) => {
    const aei = await as('POST', '/api/v2/aeis', body);
    await as(
      'POST',
      `/api/v2/aeis/${aei.id}/bindings`,
      adis.map((adi) => ({ adi_id: adi.id })),
    );
    return { key: aei.api_key as string, path: `/api/v2/mcp/server/${aei.api_key}` };
  };
  const d = await bind({ name: 'direct' });
  direct = { ...d, pages: pagesOf(await configOf(d.key)) };
  const p = await bind({ name: 'catalog', exposure_mode: 'progressive', catalog_search: true });
  progressive = { ...p, result: { tools: progressiveTools(true) } };
});
afterAll(() => stack.close());

describe('tools/list in direct mode', () => {
  it('the fixture spans several pages and every optional field', () => {
    expect(direct.pages).toHaveLength(3);
    const tools = direct.pages.flatMap((p) => p.tools);
    expect(tools.map((t: Json) => t.name)).toHaveLength(5);
    expect(tools.some((t: Json) => t.title !== undefined && t.outputSchema !== undefined)).toBe(true);
    expect(tools.every((t: Json) => t.annotations !== undefined)).toBe(true);
  });

  it('a held session gets exactly the bytes of JSON.stringify({jsonrpc, id, result}), any id, any page', async () => {
    const lanes = await lanesFor(stack.gatewayUrl, direct.path);
    const session = await openSession(stack.gatewayUrl, direct.path);
    for (const id of IDS) {
      for (let page = 0; page < direct.pages.length; page++) {
        const expected = JSON.stringify({ jsonrpc: '2.0', id, result: direct.pages[page] });
        const body = list(id, cursorOf(direct.pages, page));
        const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
        // The fast lane, then the framework route (a chunked body), then a session with logs on.
        const fast = await rawPost(stack.gatewayUrl, direct.path, body, { headers });
        expect(fast.status).toBe(200);
        expect(fast.headers['content-type']).toBe('application/json');
        expect(fast.text).toBe(expected);
        const framework = await rawPost(stack.gatewayUrl, direct.path, body, { headers, chunked: true });
        expect(framework.text).toBe(expected);
        const logging = await lanes.post('SDK, held session', body);
        expect(logging.text).toBe(expected);
      }
    }
  });

  it('the SDK transport sends the same result: a batch on a held session (SSE), a request without a session', async () => {
    const session = await openSession(stack.gatewayUrl, direct.path);
    for (let page = 0; page < direct.pages.length; page++) {
      const cursor = cursorOf(direct.pages, page);
      const batch = readAnswer(
        await rawPost(stack.gatewayUrl, direct.path, `[${list(5, cursor)}]`, {
          headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
        }),
      );
      const stateless = readAnswer(await rawPost(stack.gatewayUrl, direct.path, list('s', cursor)));
      for (const [answer, id] of [
        [batch, 5],
        [stateless, 's'],
      ] as const) {
        const result = responseTo(answer, id).result;
        expect(result).toEqual(direct.pages[page]);
        // Same members in the same order, not only equal: serialised alike.
        expect(JSON.stringify(result)).toBe(JSON.stringify(direct.pages[page]));
      }
    }
  });

  it('a session that negotiated an older protocol version gets the same bytes', async () => {
    for (const version of ['2024-11-05', '2025-03-26']) {
      const init = await rawPost(
        stack.gatewayUrl,
        direct.path,
        JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'old', version: '1' } },
        }),
      );
      expect(responseTo(readAnswer(init), 0).result.protocolVersion).toBe(version);
      const headers = {
        'mcp-session-id': String(init.headers['mcp-session-id']),
        'mcp-protocol-version': version,
      };
      for (let page = 0; page < direct.pages.length; page++) {
        const res = await rawPost(stack.gatewayUrl, direct.path, list(9, cursorOf(direct.pages, page)), {
          headers,
        });
        expect(res.text).toBe(JSON.stringify({ jsonrpc: '2.0', id: 9, result: direct.pages[page] }));
      }
    }
  });

  it('the SDK Client pages through the same tools, with the same cursors', async () => {
    const client = await stack.connect(direct.path);
    const seen: Json[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      seen.push(page);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seen).toEqual(direct.pages);
  });

  it('refuses a cursor past the end or not its own on every lane, as before', async () => {
    const lanes = await lanesFor(stack.gatewayUrl, direct.path);
    // A new id each time: a session's transport may still count the previous request with the same
    // id in flight for a moment after its answer was read (409, its own test elsewhere).
    let id = 3;
    for (const lane of LANES) {
      for (const cursor of [Buffer.from('9').toString('base64url'), 'not-a-cursor!']) {
        id += 1;
        const answer = await lanes.post(lane, list(id, cursor));
        expect(responseTo(answer, id).error).toMatchObject({
          code: -32602,
          message: expect.stringMatching(/cursor/),
        });
      }
    }
  });
});

describe('tools/list in progressive mode', () => {
  it('lists the catalog tools as bytes on a held session, and the same result on the SDK transport', async () => {
    const lanes = await lanesFor(stack.gatewayUrl, progressive.path);
    for (const id of IDS) {
      const expected = JSON.stringify({ jsonrpc: '2.0', id, result: progressive.result });
      expect((await lanes.post('fast lane', list(id))).text).toBe(expected);
      expect((await lanes.post('framework', list(id))).text).toBe(expected);
      const stateless = responseTo(await lanes.post('SDK, stateless', list(id)), id).result;
      expect(JSON.stringify(stateless)).toBe(JSON.stringify(progressive.result));
    }
    const client = await stack.connect(progressive.path);
    expect(await client.listTools()).toEqual(progressive.result);
    const beyond = await lanes.post('fast lane', list(4, 'MQ'));
    expect(responseTo(beyond, 4).error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/one page/),
    });
  });
});
