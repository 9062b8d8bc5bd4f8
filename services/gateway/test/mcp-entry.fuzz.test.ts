// Pins, property-based, that nothing a client sends to an MCP entry gets a 5xx, an internal error
// (-32603) or no answer: random and hostile JSON-RPC messages (methods, params, ids, batches,
// cursors, tool names, arguments with NUL, lone surrogates, deep nesting, huge numbers, prototype
// keys) and raw bodies, POSTed through every path (fast lane, Fastify's route, the SDK transport
// with and without a session) of every MCP entry: a direct exposure by its key in the URL and as a
// bearer header, a progressive one, a legacy v1 instance on its v1 URL, and the caller entry with
// a personal key (named caller, and none), against the real control plane; and any api_key, in
// the URL or the Authorization header. Answers below 500 must be
// JSON-RPC; the gateway and the control plane must still serve afterwards. The seed is fixed
// (FUZZ_SEED overrides it, FUZZ_RUNS the number of requests); a failure prints the seed and the
// shrunk request that reproduces it.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Exposed, type Json, twoTableExposure } from '@bindery/test-support';
import { bindAddOrder } from './support/fixtures.ts';
import { LANES, lanesFor, readAnswer, type Lane, type Lanes, type McpAnswer } from './support/mcp-raw.ts';
import { hostileNumber, hostileText, hostileValue, percentEncoded } from './support/hostile.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
const DEADLINE_MS = 10_000;

let stack: Stack;
let exposed: Exposed;
const entries: { name: string; lanes: Lanes; tools: string[] }[] = [];

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: { TOOLS_PAGE_SIZE: '1', RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' },
  });
  exposed = await twoTableExposure(stack);
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, exposed.token);
  const addId = await bindAddOrder(stack, exposed);
  entries.push({
    name: 'direct',
    lanes: await lanesFor(stack.gatewayUrl, `/api/v2/mcp/server/${exposed.apiKey}`),
    tools: ['find_customers', 'peek_orders', 'add_order'],
  });
  const direct = ['find_customers', 'peek_orders', 'add_order'];
  entries.push({
    name: 'direct, bearer',
    lanes: await lanesFor(stack.gatewayUrl, '/api/v2/mcp/server', {
      authorization: `Bearer ${exposed.apiKey}`,
    }),
    tools: direct,
  });
  const legacy = await as('POST', '/api/v1/mcp', {
    table_id: exposed.tables.customers,
    json_pointer: '/list',
  });
  entries.push({
    name: 'legacy v1',
    lanes: await lanesFor(stack.gatewayUrl, `/api/v1/mcp/server/${legacy.api_key}`),
    tools: ['query_data', 'get_all_data', 'create_data', 'update_data', 'move_data'],
  });
  await as('PUT', '/api/v2/callers/vscode', { aei_id: exposed.aeiId });
  const personal = {
    authorization: `Bearer ${(await as('POST', '/api/v2/mcp-keys', { name: 'fuzz' })).key}`,
  };
  entries.push({
    name: 'caller entry',
    lanes: await lanesFor(stack.gatewayUrl, '/api/v2/mcp/caller/vscode', personal),
    tools: direct,
  });
  entries.push({
    name: 'caller entry, no caller',
    lanes: await lanesFor(stack.gatewayUrl, '/api/v2/mcp/caller', personal),
    tools: direct,
  });
  const catalog = await as('POST', '/api/v2/aeis', { name: 'catalog', exposure_mode: 'progressive' });
  await as('POST', `/api/v2/aeis/${catalog.id}/bindings`, { adi_id: addId, tool_name: 'add_order' });
  entries.push({
    name: 'progressive',
    lanes: await lanesFor(stack.gatewayUrl, `/api/v2/mcp/server/${catalog.api_key}`),
    tools: [
      'initialize_session',
      'get_categories',
      'get_apis_by_category',
      'get_api_details',
      'execute_apis',
    ],
  });
});
afterAll(() => stack.close());

// ---- hostile pieces -------------------------------------------------------------------------

/** JSON nested `depth` levels around `inner` (as text: some depths are past what may be sent). */
const nestedText = (depth: number, inner: string) => '['.repeat(depth) + inner + ']'.repeat(depth);

const id = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 1_000_000 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 1.5, -1, 2 ** 60, {}, [], true, '\u0000') },
);

const cursor = fc.oneof(
  fc.constantFrom<unknown>('MQ', 'Mg', 'MA', 'Mw', '!!!', '', 'LTE', 'MDE', 'MQ==', 'MS4w', null, 5, {}),
  fc.string({ maxLength: 12 }),
  fc.nat(100).map((n) => Buffer.from(String(n)).toString('base64url')),
);

/** Arguments a tool might get: plausible ones with hostile values, or anything at all. */
const toolArguments = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.dictionary(
      fc.constantFrom(
        'query',
        'value',
        'path',
        'offset',
        'limit',
        'app_id',
        'category_id',
        'api_names',
        'executions',
      ),
      hostileValue,
      { maxKeys: 3 },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      executions: fc.array(
        fc.record({ api_name: fc.oneof(fc.constant('add_order'), hostileText), parameters: hostileValue }),
        { maxLength: 3 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ app_id: fc.oneof(fc.constant('default'), hostileText) }) },
  { weight: 1, arbitrary: hostileValue },
);

function paramsFor(tools: string[]): fc.Arbitrary<[string, unknown]> {
  const name = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom<unknown>(...tools) },
    { weight: 1, arbitrary: fc.oneof(hostileText, hostileNumber, fc.constant(null)) },
  );
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record({ name, arguments: toolArguments }, { requiredKeys: [] })
        .map((p) => ['tools/call', p] as [string, unknown]),
    },
    {
      weight: 3,
      arbitrary: fc
        .record({ cursor }, { requiredKeys: [] })
        .map((p) => ['tools/list', p] as [string, unknown]),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            'initialize',
            'ping',
            'logging/setLevel',
            'resources/list',
            'resources/read',
            'resources/templates/list',
            'prompts/list',
            'prompts/get',
            'tools/call',
            'tools/list',
            'notifications/initialized',
            'notifications/cancelled',
            'completion/complete',
          ),
          hostileValue,
        )
        .map(([m, p]) => [m, p] as [string, unknown]),
    },
    { weight: 1, arbitrary: fc.tuple(hostileText, hostileValue) },
  );
}

/** One message: mostly well-formed JSON-RPC with hostile contents, sometimes a broken envelope. */
function messageFor(tools: string[]): fc.Arbitrary<unknown> {
  const request = fc.tuple(id, paramsFor(tools)).map(([i, [method, params]]) => ({
    jsonrpc: '2.0',
    id: i,
    method,
    ...(params !== undefined && { params }),
  }));
  const notification = paramsFor(tools).map(([method, params]) => ({ jsonrpc: '2.0', method, params }));
  const broken = fc.oneof(
    hostileValue,
    fc
      .tuple(fc.constantFrom<unknown>('1.0', 2, null, undefined), request)
      .map(([v, r]) => ({ ...r, jsonrpc: v })),
    fc.tuple(request, hostileText, hostileValue).map(([r, k, v]) => ({ ...r, [k]: v })),
    fc.record({ jsonrpc: fc.constant('2.0'), id, result: hostileValue }),
    fc.record({ jsonrpc: fc.constant('2.0'), id, error: hostileValue }),
  );
  return fc.oneof(
    { weight: 6, arbitrary: request },
    { weight: 1, arbitrary: notification },
    { weight: 2, arbitrary: broken },
  );
}

const DEEP_CALL = (depth: number) =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_order","arguments":{"value":${nestedText(depth, '"x"')}}}}`;

function bodyFor(tools: string[]): fc.Arbitrary<string> {
  const message = messageFor(tools);
  return fc.oneof(
    { weight: 8, arbitrary: message.map((m) => JSON.stringify(m) ?? '') },
    { weight: 2, arbitrary: fc.array(message, { maxLength: 4 }).map((b) => JSON.stringify(b)) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom(
          '',
          ' ',
          '{',
          '[',
          '{"jsonrpc":"2.0",',
          'null',
          '"x"',
          '1e999',
          '{"__proto__":{"x":1}}',
        ),
        fc.integer({ min: 60, max: 80 }).map(DEEP_CALL),
        fc.constantFrom(10_000, 100_000).map(DEEP_CALL),
      ),
    },
  );
}

// ---- the property ---------------------------------------------------------------------------

function checkAnswer(answer: McpAnswer): void {
  expect(answer.status, answer.text.slice(0, 500)).toBeLessThan(500);
  if (answer.status === 202) return; // notifications and responses only: accepted, no body
  expect(answer.messages.length, answer.text.slice(0, 500)).toBeGreaterThan(0);
  for (const message of answer.messages as Json[]) {
    expect(message.jsonrpc, answer.text.slice(0, 500)).toBe('2.0');
    if (message.error !== undefined) {
      expect(Number.isInteger(message.error.code), answer.text.slice(0, 500)).toBe(true);
      expect(message.error.code, answer.text.slice(0, 500)).not.toBe(-32603);
      expect(typeof message.error.message).toBe('string');
    }
  }
  if (answer.status >= 400) expect(answer.messages[0].error, answer.text.slice(0, 500)).toBeDefined();
}

async function withDeadline<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

it('no JSON-RPC request gets a 5xx, -32603 or no answer, on any path', async () => {
  const attempts = fc
    .tuple(fc.constantFrom(...entries), fc.constantFrom<Lane>(...LANES))
    .chain(([entry, lane]) => bodyFor(entry.tools).map((body) => ({ entry: entry.name, lane, body })));
  await fc.assert(
    fc.asyncProperty(attempts, async ({ entry, lane, body }) => {
      const { lanes } = entries.find((e) => e.name === entry)!;
      checkAnswer(await withDeadline(lanes.post(lane, body)));
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  // Both services still serve, on every path.
  for (const lane of LANES) {
    const list = await entries[0]!.lanes.post(
      lane,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    expect(list.status).toBe(200);
  }
  expect((await fetch(`${stack.gatewayUrl}/healthz`)).status).toBe(200);
  expect((await fetch(`${stack.controlPlaneUrl}/healthz`)).status).toBe(200);
}, 180_000);

it('no api_key in the URL or the Authorization header gets a 5xx while the control plane is up', async () => {
  const key = fc.oneof(
    fc.constantFrom('\u0000', 'bnd_key_\u0000', 'a\u0000b', '\ud800x', 'x'.repeat(101), 'x'.repeat(300)),
    hostileText,
    fc.constant(exposed.apiKey),
    fc.string({ unit: 'binary', maxLength: 120 }),
  );
  const attempts = fc.record({
    flavor: fc.constantFrom('/api/v2/mcp/server/', '/api/v1/mcp/server/', 'bearer'),
    key,
    body: bodyFor(entries[0]!.tools),
  });
  await fc.assert(
    fc.asyncProperty(attempts, async ({ flavor, key: k, body }) => {
      // Header values cannot carry control characters or non-Latin-1 text: those go in the URL only.
      const headerSafe = /^[\x20-\x7e]*$/.test(k);
      const res =
        flavor === 'bearer' && headerSafe
          ? await rawPost(stack.gatewayUrl, '/api/v2/mcp/server', body, {
              headers: { authorization: `Bearer ${k}` },
            })
          : await rawPost(
              stack.gatewayUrl,
              `${flavor === 'bearer' ? '/api/v2/mcp/server/' : flavor}${percentEncoded(k)}`,
              body,
            );
      checkAnswer(readAnswer(res));
    }),
    { seed: SEED, numRuns: Math.ceil(RUNS / 3), endOnFailure: true },
  );
}, 120_000);
