// Pins the regressions of bad input on the MCP entry that used to answer HTTP 500, -32603 or a raw
// validation dump, or was silently accepted: an empty body (-32700), a body that is not a JSON-RPC
// message (-32600), arguments nested 10,000 deep (-32600, HTTP 400), tools/call without a string
// name or with non-object arguments (-32602, one line), malformed cursors (always -32602, `!!!`
// included), arguments the control plane refuses (NUL, lone surrogates, over its body limit: a
// tool error with its code, never UPSTREAM_FAILED), numbers that overflow a double (refused by the
// gateway, which alone still sees them: direct, legacy v1 and execute_apis items). Each runs on every path a request can take:
// the fast lane, Fastify's route, the SDK transport on a held session and without one.
import { MAX_BODY_DEPTH, MAX_JSON_DEPTH } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Exposed, type Json, resultJson, twoTableExposure } from '@bindery/test-support';
import { bindAddOrder } from './support/fixtures.ts';
import { LANES, lanesFor, responseTo, servedByLane, type Lanes, type McpAnswer } from './support/mcp-raw.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let direct: Lanes;
let progressive: Lanes;
const path = () => `/api/v2/mcp/server/${exposed.apiKey}`;

beforeAll(async () => {
  stack = await startStack({
    // One tool per page, so tools/list hands out cursors; the control plane takes smaller bodies
    // than the gateway, so an argument can pass the gateway and be refused behind it.
    gatewayEnv: { TOOLS_PAGE_SIZE: '1', RATE_LIMIT_BURST: '100000', RATE_LIMIT_PER_SECOND: '1000' },
    controlPlaneEnv: { BODY_LIMIT_BYTES: '65536' },
  });
  exposed = await twoTableExposure(stack);
  const as = (method: string, p: string, body?: unknown) => stack.admin(method, p, body, exposed.token);
  const addId = await bindAddOrder(stack, exposed);
  direct = await lanesFor(stack.gatewayUrl, path());
  const catalog = await as('POST', '/api/v2/aeis', { name: 'catalog', exposure_mode: 'progressive' });
  await as('POST', `/api/v2/aeis/${catalog.id}/bindings`, { adi_id: addId, tool_name: 'add_order' });
  progressive = await lanesFor(stack.gatewayUrl, `/api/v2/mcp/server/${catalog.api_key}`);
});
afterAll(() => stack.close());

const message = (id: number, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) });
const call = (id: number, params: unknown) => message(id, 'tools/call', params);
const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);

/** A refusal before the MCP layer: an HTTP status and a JSON-RPC error without an id. */
function expectHttpRefusal(answer: McpAnswer, status: number, code: number, text: string | RegExp) {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.messages).toHaveLength(1);
  expect(answer.messages[0]).toMatchObject({
    id: null,
    error: { code, data: { code: 'VALIDATION_FAILED' } },
  });
  expect(answer.messages[0].error.message).toMatch(text);
}

/** A JSON-RPC error answering request `id` (HTTP 200), one line, never -32603. */
function expectRpcError(answer: McpAnswer, id: number, code: number, text: string | RegExp) {
  expect(answer.status, answer.text).toBe(200);
  const response = responseTo(answer, id);
  expect(response, answer.text).toBeDefined();
  expect(response.error.code).toBe(code);
  expect(response.error.message).toMatch(text);
  expect(response.error.message).not.toContain('\n');
}

/** The tool error answering request `id`: an isError result carrying `code`. */
function toolError(answer: McpAnswer, id: number): Json {
  expect(answer.status, answer.text).toBe(200);
  const response = responseTo(answer, id);
  expect(response?.result?.isError, answer.text).toBe(true);
  return resultJson(response.result).error;
}

describe('the four paths', () => {
  it('are the ones named: two served by the fast lane, two by the framework', async () => {
    const before = await servedByLane(stack.gatewayUrl);
    for (const lane of LANES) await direct.post(lane, message(1, 'tools/list'));
    const after = await servedByLane(stack.gatewayUrl);
    expect(after.fast - before.fast).toBe(2);
    // The second /metrics read counts itself.
    expect(after.framework - before.framework).toBe(3);
  });
});

describe('bodies refused before the MCP layer', () => {
  it('an empty body: HTTP 400 with -32700 (it used to be HTTP 500 with -32603)', async () => {
    for (const headers of [{}, { 'mcp-session-id': 'whatever' }] as Record<string, string>[]) {
      const res = await rawPost(stack.gatewayUrl, path(), '', { headers });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toMatchObject({ error: { code: -32700, message: /body is empty/ } });
    }
  });

  it('JSON that is not a message or a non-empty batch of them: HTTP 400 with -32600', async () => {
    const cases: [string, RegExp][] = [
      ['5', /the body must be a JSON-RPC message/],
      ['null', /the body must be a JSON-RPC message/],
      ['"tools/list"', /the body must be a JSON-RPC message/],
      ['[]', /an empty batch/], // it used to answer 202 and do nothing
      ['[1]', /batch item 0 must be a JSON-RPC message/],
      ['{}', /needs "jsonrpc": "2.0"/],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":1}', /unknown member "extra"/],
      ['{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', /"id" must be a string or an integer/],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}', /"params" must be an object/],
    ];
    for (const lane of LANES) {
      for (const [body, text] of cases) {
        expectHttpRefusal(await direct.post(lane, body), 400, -32600, text);
      }
    }
  });

  it('arguments nested 10,000 deep: HTTP 400 with -32600 (they used to overflow the stack: -32603)', async () => {
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_customers","arguments":{"query":${nested(10_000)}}}}`;
    for (const lane of LANES) {
      expectHttpRefusal(
        await direct.post(lane, body),
        400,
        -32600,
        `Invalid Request: JSON nested deeper than ${MAX_BODY_DEPTH} levels`,
      );
    }
  });
});

describe('URLs the router cannot read', () => {
  it('a percent-escape that is not UTF-8, or a key over 100 characters: HTTP 400 with -32600', async () => {
    for (const url of ['/api/v2/mcp/server/%ED%A0%80', `/api/v2/mcp/server/${'k'.repeat(101)}`]) {
      const res = await rawPost(stack.gatewayUrl, url, message(1, 'tools/list'));
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toMatchObject({
        error: { code: -32600, data: { code: 'VALIDATION_FAILED' } },
      });
    }
  });
});

describe('keys that cannot exist', () => {
  it('a key holding a NUL (which the control plane refuses to look up) is 401, not 503', async () => {
    for (const key of ['%00', 'bnd_key_%00x', 'x%ED%B0%80', `v${'%00'.repeat(30)}`]) {
      const res = await rawPost(stack.gatewayUrl, `/api/v2/mcp/server/${key}`, message(1, 'tools/list'));
      expect(res.status, `${key}: ${res.text}`).toBeLessThan(500);
    }
    const nul = await rawPost(stack.gatewayUrl, '/api/v2/mcp/server/bnd_key_%00x', message(1, 'tools/list'));
    expect(nul.status).toBe(401);
    expect(JSON.parse(nul.text)).toMatchObject({ error: { code: -32001, data: { code: 'UNAUTHORIZED' } } });
  });
});

describe('tools/call params', () => {
  it('a missing or non-string name: -32602 in one line (it used to be -32603 with a raw dump)', async () => {
    for (const lane of LANES) {
      for (const params of [
        {},
        { name: 123 },
        { name: null, arguments: {} },
        { arguments: { query: '@' } },
      ]) {
        expectRpcError(
          await direct.post(lane, call(7, params)),
          7,
          -32602,
          /^tools\/call needs params\.name, a string$/,
        );
      }
      // Without params at all.
      expectRpcError(await direct.post(lane, message(8, 'tools/call')), 8, -32602, /needs params\.name/);
    }
  });

  it('arguments that are not an object: -32602', async () => {
    for (const lane of LANES) {
      for (const args of [[1], 'x', 5, null]) {
        expectRpcError(
          await direct.post(lane, call(9, { name: 'find_customers', arguments: args })),
          9,
          -32602,
          /params\.arguments must be an object/,
        );
      }
    }
  });

  it('a batch answers each message: a bad call is -32602, its neighbour is served', async () => {
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 5 } },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]);
    for (const lane of ['SDK, held session', 'SDK, stateless'] as const) {
      const answer = await direct.post(lane, body);
      expectRpcError(answer, 1, -32602, /needs params\.name/);
      expect(responseTo(answer, 2).result.tools).toHaveLength(1);
    }
  });
});

describe('cursors', () => {
  it('a cursor the gateway handed out pages on; anything else is -32602 ("!!!" used to give page 1)', async () => {
    for (const lane of LANES) {
      const first = responseTo(await direct.post(lane, message(1, 'tools/list')), 1).result;
      expect(first.tools).toHaveLength(1);
      // `{config_version}.{name of the page's last tool}`, base64url.
      const [version, lastName] = Buffer.from(first.nextCursor, 'base64url')
        .toString()
        .split(/\.(.*)/s);
      expect([Number(version) > 0, lastName]).toEqual([true, first.tools[0].name]);
      const b64 = (text: string) => Buffer.from(text).toString('base64url');
      const second = responseTo(
        await direct.post(lane, message(2, 'tools/list', { cursor: first.nextCursor })),
        2,
      );
      expect(second.result.tools).toHaveLength(1);
      const third = responseTo(
        await direct.post(lane, message(5, 'tools/list', { cursor: second.result.nextCursor })),
        5,
      ).result;
      expect([third.tools.length, third.nextCursor]).toEqual([1, undefined]);
      const bad = [
        '!!!',
        '',
        'MQ' /* 1: the old offset form */,
        b64(`-1.${lastName}`),
        b64(`0${version}.${lastName}`),
        `${first.nextCursor}==`,
        b64(`${version}.no_such_tool`),
        b64(`${Number(version) - 1}.${lastName}`) /* an older version */,
        b64(`${version}.${third.tools[0].name}`) /* the last tool: no page after it */,
      ];
      for (const cursor of bad) {
        expectRpcError(await direct.post(lane, message(3, 'tools/list', { cursor })), 3, -32602, /cursor/);
      }
      for (const cursor of [5, null, {}]) {
        expectRpcError(
          await direct.post(lane, message(4, 'tools/list', { cursor })),
          4,
          -32602,
          /params\.cursor must be a string/,
        );
      }
    }
  });
});

describe('arguments the control plane refuses are tool errors with its code, not UPSTREAM_FAILED', () => {
  it('a NUL character or a lone surrogate: VALIDATION_FAILED naming the argument', async () => {
    for (const lane of LANES) {
      const nul = toolError(
        await direct.post(lane, call(1, { name: 'add_order', arguments: { value: { id: 'a\u0000' } } })),
        1,
      );
      expect(nul).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: /arguments\/value\/id: the text contains a NUL/,
      });
      const lone = toolError(
        await direct.post(
          lane,
          `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_customers","arguments":{"query":"\\ud800"}}}`,
        ),
        2,
      );
      expect(lone).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: /arguments\/query: the text contains an unpaired/,
      });
    }
    const orders = await stack.admin(
      'GET',
      `/api/v2/tables/${exposed.tables.orders}`,
      undefined,
      exposed.token,
    );
    expect(orders.data).toHaveLength(2);
  });

  it('arguments over the control plane’s body limit: PAYLOAD_TOO_LARGE', async () => {
    const big = call(1, { name: 'find_customers', arguments: { query: `'${'x'.repeat(100_000)}'` } });
    for (const lane of LANES) {
      expect(toolError(await direct.post(lane, big), 1).code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('a value as deep as the data limit is written; one level more is VALIDATION_FAILED', async () => {
    const value = (depth: number) => JSON.parse(nested(depth, '"deep"')) as unknown;
    const ok = await direct.post(
      'fast lane',
      call(1, { name: 'add_order', arguments: { value: value(MAX_JSON_DEPTH) } }),
    );
    expect(responseTo(ok, 1).result.isError).toBeUndefined();
    for (const lane of LANES) {
      const over = toolError(
        await direct.post(
          lane,
          call(2, { name: 'add_order', arguments: { value: value(MAX_JSON_DEPTH + 1) } }),
        ),
        2,
      );
      expect(over).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: /nested deeper than the limit of 64/,
      });
    }
  });
});

describe('numbers that overflow a double (they used to be written as null)', () => {
  // JSON numbers the gateway parses to Infinity: sent on, JSON writes them as null, so the control
  // plane never sees them. The long mantissa once slipped past the raw-text pre-test too.
  const huge = ['1e999', '-1E+400', `1${'0'.repeat(250)}e60`, '9'.repeat(400)];
  const rawCall = (id: number, name: string, args: string) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;
  const rows = async () =>
    (await stack.admin('GET', `/api/v2/tables/${exposed.tables.orders}`, undefined, exposed.token)).data
      .length as number;

  it('a direct tool: VALIDATION_FAILED naming the argument, on every path, nothing written', async () => {
    const before = await rows();
    for (const lane of LANES) {
      for (const number of huge) {
        const error = toolError(
          await direct.post(lane, rawCall(1, 'add_order', `{"value":{"id":"n","total":[0,${number}]}}`)),
          1,
        );
        expect(error).toMatchObject({
          code: 'VALIDATION_FAILED',
          message: /^arguments\/value\/total\/1: the value is a number too large to represent/,
          details: { pointer: '/value/total/1', problem: 'non-finite number' },
        });
      }
    }
    expect(await rows()).toBe(before);
  });

  it('a legacy v1 tool: the same', async () => {
    const legacy = await stack.admin(
      'POST',
      '/api/v1/mcp',
      { table_id: exposed.tables.orders, json_pointer: '' },
      exposed.token,
    );
    const v1 = await lanesFor(stack.gatewayUrl, `/api/v1/mcp/server/${legacy.api_key}`);
    const before = await rows();
    for (const lane of LANES) {
      const error = toolError(await v1.post(lane, rawCall(1, 'create_data', '{"value":{"total":1e999}}')), 1);
      expect(error).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: /^arguments\/value\/total: the value is a number too large/,
      });
    }
    expect(await rows()).toBe(before);
  });

  it('an execute_apis item fails alone, naming the item; a catalog tool is refused whole', async () => {
    const before = await rows();
    for (const lane of ['fast lane', 'SDK, held session'] as const) {
      const init = await progressive.post(
        lane,
        call(1, { name: 'initialize_session', arguments: { app_id: 'default' } }),
      );
      expect(responseTo(init, 1).result.isError).toBeUndefined();
      const answer = await progressive.post(
        lane,
        rawCall(
          2,
          'execute_apis',
          `{"executions":[{"api_name":"add_order","parameters":{"value":{"id":"ok"}}},{"api_name":"add_order","parameters":{"value":{"total":-1E+400}}}]}`,
        ),
      );
      const { results } = resultJson(responseTo(answer, 2).result);
      expect(results[0]).toMatchObject({ success: true });
      expect(results[1]).toMatchObject({
        success: false,
        error: {
          code: 'VALIDATION_FAILED',
          message: expect.stringMatching(
            /^arguments\/executions\/1\/parameters\/value\/total: the value is a number too large/,
          ),
          details: { pointer: '/executions/1/parameters/value/total', problem: 'non-finite number' },
        },
      });
      const search = toolError(
        await progressive.post(lane, rawCall(3, 'get_api_details', '{"api_names":["add_order"],"x":1e999}')),
        3,
      );
      expect(search).toMatchObject({ code: 'VALIDATION_FAILED', message: /^arguments\/x: the value/ });
    }
    // Only the good items were written.
    expect(await rows()).toBe(before + 2);
  });
});

describe('other methods the SDK used to answer with -32603', () => {
  it('initialize and logging/setLevel with bad params, and task-augmented calls: -32602', async () => {
    for (const lane of LANES) {
      expectRpcError(
        await direct.post(lane, message(1, 'initialize', {})),
        1,
        -32602,
        /^initialize: params\.protocolVersion/,
      );
      expectRpcError(
        await direct.post(lane, message(2, 'logging/setLevel', { level: 'loud' })),
        2,
        -32602,
        /params\.level/,
      );
      expectRpcError(
        await direct.post(lane, call(3, { name: 'find_customers', arguments: {}, task: {} })),
        3,
        -32602,
        /does not run requests as tasks/,
      );
      // An unknown method stays the SDK's -32601.
      expectRpcError(
        await direct.post(lane, message(4, 'sampling/createMessage', { messages: [], maxTokens: 1 })),
        4,
        -32601,
        /not found/i,
      );
    }
  });
});

describe('progressive exposures get the same treatment', () => {
  it('arguments that are not an object: -32602; text the platform refuses: VALIDATION_FAILED', async () => {
    for (const lane of LANES) {
      expectRpcError(
        await progressive.post(lane, call(1, { name: 'initialize_session', arguments: ['default'] })),
        1,
        -32602,
        /params\.arguments must be an object/,
      );
      const nul = toolError(
        await progressive.post(
          lane,
          call(2, { name: 'initialize_session', arguments: { app_id: 'de\u0000fault' } }),
        ),
        2,
      );
      expect(nul).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: /^arguments\/app_id: the text contains a NUL/,
      });
    }
  });

  it('an execute_apis item the control plane refuses fails alone, with VALIDATION_FAILED', async () => {
    for (const lane of ['fast lane', 'SDK, held session'] as const) {
      const init = await progressive.post(
        lane,
        call(1, { name: 'initialize_session', arguments: { app_id: 'default' } }),
      );
      expect(responseTo(init, 1).result.isError).toBeUndefined();
      const answer = await progressive.post(
        lane,
        call(2, {
          name: 'execute_apis',
          arguments: {
            executions: [
              { api_name: 'add_order', parameters: { value: 'x\u0000' } },
              { api_name: 'add_order', parameters: { value: { id: 'ok' } } },
            ],
          },
        }),
      );
      const { results } = resultJson(responseTo(answer, 2).result);
      expect(results[0]).toMatchObject({ success: false, error: { code: 'VALIDATION_FAILED' } });
      expect(results[1]).toMatchObject({ success: true });
    }
  });
});
