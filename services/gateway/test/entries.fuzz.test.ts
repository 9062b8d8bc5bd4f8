// Pins, property-based, that nothing a client sends to the gateway's entries other than MCP
// messages gets a 5xx, a broken error body or no answer: the REST entry (calls shaped after the
// gateway's own REST OpenAPI document, one operation per tool, with hostile arguments, tool names,
// ids, sources, idempotency keys, batches, bodies and content types, by an exposure's api_key, a
// legacy instance's, a playground key and a personal key with any caller), the ops routes
// (`/healthz`, `/readyz`, `/metrics` behind a token, `/cache/invalidate` with hostile bodies), and
// raw HTTP to every entry (any method, target and header set, two Host headers or none, an
// absolute URL, chunked bodies, held sessions' ids). Errors must be the REST error body, or a
// JSON-RPC error on an MCP path; tool failures items with a documented code, never INTERNAL. The
// seed is fixed (FUZZ_SEED overrides it, FUZZ_RUNS the number of REST requests; the other
// properties run a share of it); a failure prints the seed and the shrunk request.
import { ERROR_CODES, MAX_BATCH_EXECUTIONS, type ErrorCode } from '@bindery/contracts';
import { requestTargetPath } from '@bindery/service-kit';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isMcpPath } from '../src/http/mcp-paths.ts';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { bindAddOrder } from './support/fixtures.ts';
import { hostileNumber, hostileText, hostileValue, percentEncoded } from './support/hostile.ts';
import { PROTOCOL_VERSION, openSession } from './support/mcp-raw.ts';
import { socketRequest, type SocketAnswer } from './support/raw-socket.ts';
import { OPS_TOKEN, startStack, type Stack } from './support/stack.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_202);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const DEADLINE_MS = 10_000;
const METRICS_TOKEN = 'fuzz-metrics-token-0001';

let stack: Stack;
let exposed: Exposed;
let host: string;
/** Credentials the REST entry serves, and what they send with them. */
const credentials: { name: string; headers: Record<string, string> }[] = [];
/** The REST OpenAPI document's operations: path, tool name, input schema. */
const operations: { path: string; tool: string; schema: Json }[] = [];
/** MCP paths with a session held on each (for raw requests that name it). */
const mcpTargets: { path: string; headers: Record<string, string>; sessionId: string }[] = [];

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: {
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
      EXECUTE_RATE_PER_SECOND: '100000',
      EXECUTE_RATE_BURST: '100000',
      METRICS_TOKEN,
    },
  });
  host = new URL(stack.gatewayUrl).host;
  exposed = await twoTableExposure(stack);
  await bindAddOrder(stack, exposed);
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, exposed.token);
  const legacy = await as('POST', '/api/v1/mcp', {
    table_id: exposed.tables.customers,
    json_pointer: '/list',
  });
  const playground = await as('POST', `/api/v2/aeis/${exposed.aeiId}/playground-keys`);
  await as('PUT', '/api/v2/callers/vscode', { aei_id: exposed.aeiId });
  const personal = (await as('POST', '/api/v2/mcp-keys', { name: 'fuzz' })).key as string;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  credentials.push(
    { name: 'api_key', headers: bearer(exposed.apiKey) },
    { name: 'legacy api_key', headers: bearer(legacy.api_key) },
    { name: 'playground key', headers: bearer(playground.api_key) },
    { name: 'personal key, caller vscode', headers: { ...bearer(personal), 'x-bindery-caller': 'vscode' } },
    { name: 'personal key, no caller', headers: bearer(personal) },
  );
  // The request shapes come from the gateway's own document of the REST entry.
  const doc = await fetch(`${stack.gatewayUrl}/api/v2/rest/openapi.json`, {
    headers: bearer(exposed.apiKey),
  });
  const paths = ((await doc.json()) as Json).paths as Record<string, Json>;
  for (const [path, item] of Object.entries(paths)) {
    const post = item.post;
    operations.push({
      path,
      tool: post.operationId,
      schema: post.requestBody.content['application/json'].schema,
    });
  }
  if (operations.length < 3) throw new Error(`the REST document has ${operations.length} operations`);
  for (const [path, headers] of [
    [`/api/v2/mcp/server/${exposed.apiKey}`, {}],
    ['/api/v2/mcp/server', bearer(exposed.apiKey)],
    [`/api/v1/mcp/server/${legacy.api_key}`, {}],
    ['/api/v2/mcp/caller/vscode', bearer(personal)],
    ['/api/v2/mcp/caller', bearer(personal)],
  ] as const) {
    mcpTargets.push({ path, headers, sessionId: await openSession(stack.gatewayUrl, path, false, headers) });
  }
});
afterAll(() => stack.close());

// ---- shapes ---------------------------------------------------------------------------------

/** A value of a JSON Schema (the tools' input schemas), or now and then a hostile one in its place. */
function fromSchema(schema: Json, depth = 0): fc.Arbitrary<unknown> {
  const valid = (): fc.Arbitrary<unknown> => {
    if (typeof schema !== 'object' || schema === null || depth > 3) return hostileValue;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
    if ('const' in schema) return fc.constant(schema.const);
    const alternatives = schema.anyOf ?? schema.oneOf;
    if (Array.isArray(alternatives) && alternatives.length > 0) {
      return fc.oneof(...alternatives.map((a: Json) => fromSchema(a, depth + 1)));
    }
    const types = [schema.type].flat().filter((t): t is string => typeof t === 'string');
    if (types.length === 0) return hostileValue;
    return fc.oneof(...types.map((type) => ofType(schema, type, depth)));
  };
  return fc.oneof({ weight: 5, arbitrary: valid() }, { weight: 1, arbitrary: hostileValue });
}

function ofType(schema: Json, type: string, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return fc.oneof(
        fc.string({ maxLength: Math.min(schema.maxLength ?? 20, 40) }),
        fc.constantFrom('', '/list', '/list/0', '[0].name', 'length(@)', 'o1'),
        hostileText,
      );
    case 'integer':
      return fc.oneof(
        fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 100, 1_000) }),
        hostileNumber,
      );
    case 'number':
      return hostileNumber;
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(fromSchema(schema.items, depth + 1), { maxLength: 3 });
    case 'object': {
      const properties = Object.entries((schema.properties ?? {}) as Record<string, Json>);
      const required = new Set<string>(schema.required ?? []);
      const shaped = fc.record(
        Object.fromEntries(properties.map(([name, s]) => [name, fromSchema(s, depth + 1)])),
        { requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)) },
      );
      return fc
        .tuple(shaped, fc.array(fc.tuple(hostileText, hostileValue), { maxLength: 1 }))
        .map(([object, strays]) => ({ ...object, ...Object.fromEntries(strays) }));
    }
    default:
      return hostileValue;
  }
}

/** A tool's arguments, shaped after its input schema in the document. */
const argumentsOf = (op: (typeof operations)[number]) => fromSchema(op.schema);

/** Bodies no serializer would produce. */
const rawBodies = fc.constantFrom(
  '',
  ' ',
  '{',
  '[',
  'null',
  '"x"',
  '1e999',
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '\ufeff{}',
  '['.repeat(100) + ']'.repeat(100),
  '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000),
  `{"tool_name":"${'y'.repeat(200_000)}"}`,
);

const contentTypes = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=utf-16',
    ),
  },
);

/** Text that fits in a header value (no control characters; Latin-1 at most). */
const headerText = fc.oneof(
  fc.constantFrom('', ' ', 'vscode', 'VSCode', '-x', 'a'.repeat(65), '@console', 'bnd_pk_x', '%00', '"'),
  fc.string({ maxLength: 30 }).map((t) => t.replace(/[^\x20-\x7e]/g, '')),
);

interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | undefined;
}

function query(): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(hostileText, fc.oneof(hostileText, hostileNumber.map(String))), { maxLength: 2 })
    .map((pairs) =>
      pairs.length === 0
        ? ''
        : `?${pairs.map(([k, v]) => `${percentEncoded(k)}=${percentEncoded(v)}`).join('&')}`,
    );
}

/** Who calls: a served credential (mostly), an unknown or malformed one, or none. */
const caller = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 4 }).map((i) => ({ ...credentials[i]!.headers })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 0, max: 4 }), headerText)
      .map(([i, name]) => ({ ...credentials[i]!.headers, 'x-bindery-caller': name })),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constant({}),
      headerText.map((t) => ({ authorization: `Bearer ${t}` })),
      headerText.map((t) => ({ authorization: t })),
    ),
  },
);

/** One call item of `tool-calls`, shaped after an operation of the document (or not). */
function callItem(): fc.Arbitrary<unknown> {
  const shaped = fc.constantFrom(...operations).chain((op) =>
    fc.record(
      {
        id: fc.oneof(
          { weight: 4, arbitrary: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.string({ maxLength: 4 })) },
          { weight: 1, arbitrary: hostileValue },
        ),
        tool_name: fc.oneof(
          { weight: 4, arbitrary: fc.constant(op.tool) },
          { weight: 1, arbitrary: hostileText },
        ),
        arguments: argumentsOf(op),
        source: fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom('native', 'mcp:nowhere', 'bindery', '') },
          { weight: 1, arbitrary: fc.oneof(hostileText, hostileValue) },
        ),
        idempotency_key: fc.oneof(
          { weight: 3, arbitrary: fc.nat(1_000).map((n) => `fuzz-${n}`) },
          { weight: 1, arbitrary: fc.oneof(fc.constant('x'.repeat(256)), hostileText, hostileValue) },
        ),
      },
      { requiredKeys: ['tool_name'] },
    ),
  );
  return fc.oneof(
    { weight: 6, arbitrary: shaped },
    {
      weight: 1,
      arbitrary: fc
        .tuple(shaped, hostileText, hostileValue)
        .map(([i, k, v]) => ({ ...(i as object), [k]: v })),
    },
    { weight: 1, arbitrary: hostileValue },
  );
}

function restRequest(): fc.Arbitrary<Request> {
  const body = (shaped: fc.Arbitrary<unknown>) =>
    fc.oneof(
      { weight: 12, arbitrary: shaped.map((v) => JSON.stringify(v) as string | undefined) },
      { weight: 1, arbitrary: rawBodies.map((b) => b as string | undefined) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
  const batch = fc.oneof(
    { weight: 4, arbitrary: callItem() },
    { weight: 3, arbitrary: fc.array(callItem(), { minLength: 1, maxLength: 3 }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(0, MAX_BATCH_EXECUTIONS + 1)
        .map((n) =>
          Array.from({ length: n }, (_, i) => ({ id: i, tool_name: operations[0]!.tool, arguments: {} })),
        ),
    },
  );
  const toolPath = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...operations.map((op) => op.path)) },
    { weight: 1, arbitrary: hostileText.map((name) => `/api/v2/rest/tools/${percentEncoded(name)}`) },
  );
  const shapes = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        method: fc.constant('POST'),
        path: fc.constant('/api/v2/rest/tool-calls'),
        body: body(batch),
      }),
    },
    {
      weight: 4,
      arbitrary: toolPath.chain((path) => {
        const op = operations.find((o) => o.path === path);
        return fc.record({
          method: fc.constant('POST'),
          path: fc.constant(path),
          body: body(op ? argumentsOf(op) : hostileValue),
        });
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        method: fc.constant('GET'),
        path: fc.constantFrom('/api/v2/rest/tools', '/api/v2/rest/openapi.json'),
        body: fc.constant(undefined),
      }),
    },
  );
  return fc
    .tuple(
      shapes,
      query(),
      caller,
      contentTypes,
      fc.oneof(
        { weight: 8, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom('http://localhost:5173', 'http://evil.example') },
      ),
    )
    .map(([shape, q, headers, type, origin]) => ({
      method: shape.method,
      path: `${shape.path}${q}`,
      headers: {
        ...headers,
        ...(shape.body !== undefined && type !== undefined && { 'content-type': type }),
        ...(origin !== undefined && { origin }),
      },
      body: shape.body,
    }));
}

function opsRequest(): fc.Arbitrary<Request> {
  const token = fc.oneof(
    fc.constantFrom<string | undefined>(
      undefined,
      `Bearer ${OPS_TOKEN}`,
      `Bearer ${METRICS_TOKEN}`,
      'Bearer',
      'Basic x',
    ),
    headerText.map((t) => `Bearer ${t}`),
  );
  const strings = fc.array(fc.oneof(hostileText, fc.constant(exposed.aeiId), fc.constant(exposed.apiKey)), {
    maxLength: 3,
  });
  const invalidation = fc.oneof(
    fc.record(
      {
        aei_ids: fc.oneof(strings, hostileValue),
        api_keys: fc.oneof(strings, hostileValue),
        all: fc.oneof(fc.boolean(), hostileValue),
        table_changes: fc.oneof(
          fc.array(
            fc.record(
              {
                table_id: fc.oneof(fc.constant(exposed.tables.orders), hostileText),
                version: fc.oneof(fc.integer({ min: 1, max: 9 }), hostileNumber, hostileValue),
              },
              { requiredKeys: [] },
            ),
            { maxLength: 3 },
          ),
          hostileValue,
        ),
      },
      { requiredKeys: [] },
    ),
    hostileValue,
  );
  const shapes = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        method: fc.constant('GET'),
        path: fc.constantFrom('/healthz', '/readyz', '/metrics'),
        body: fc.constant<string | undefined>(undefined),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        method: fc.constant('POST'),
        path: fc.constant('/cache/invalidate'),
        body: fc.oneof(
          { weight: 5, arbitrary: invalidation.map((v) => JSON.stringify(v) as string | undefined) },
          { weight: 1, arbitrary: rawBodies.map((b) => b as string | undefined) },
          { weight: 1, arbitrary: fc.constant(undefined) },
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        method: fc.constantFrom('POST', 'DELETE', 'PUT', 'PATCH'),
        path: fc.constantFrom('/healthz', '/readyz', '/metrics'),
        body: fc.constant<string | undefined>('{}'),
      }),
    },
  );
  return fc.tuple(shapes, query(), token, contentTypes).map(([shape, q, authorization, type]) => ({
    method: shape.method,
    path: `${shape.path}${q}`,
    headers: {
      ...(authorization !== undefined && { authorization }),
      ...(shape.body !== undefined && type !== undefined && { 'content-type': type }),
    },
    body: shape.body,
  }));
}

/**
 * The request's text on the wire: `head` (one Host, this gateway's, unless given), its headers,
 * Connection: close, and the body with its true length, or chunked (two chunks and the last).
 */
function wire(request: Request, head: readonly string[] = [`Host: ${host}`], chunked = false): string {
  const lines = [`${request.method} ${request.path} HTTP/1.1`, ...head];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
  lines.push('Connection: close');
  const body = request.body;
  if (body === undefined) return `${lines.join('\r\n')}\r\n\r\n`;
  if (!chunked) {
    lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
    return `${lines.join('\r\n')}\r\n\r\n${body}`;
  }
  lines.push('Transfer-Encoding: chunked');
  const chunk = (t: string) => `${Buffer.byteLength(t).toString(16)}\r\n${t}\r\n`;
  const half = Math.floor(body.length / 2);
  return `${lines.join('\r\n')}\r\n\r\n${chunk(body.slice(0, half) || ' ')}${chunk(body.slice(half) || ' ')}0\r\n\r\n`;
}

// ---- checks ---------------------------------------------------------------------------------

const shown = (answer: SocketAnswer) => `${answer.status} ${answer.text.slice(0, 400)}`;

/** A REST error body with a documented code (and, when the request got that far, its id). */
function expectRestError(answer: SocketAnswer): void {
  const body: Json = JSON.parse(answer.text);
  expect(ERROR_CODES, shown(answer)).toContain(body.error?.code);
  expect(body.error.code, shown(answer)).not.toBe('INTERNAL');
  expect(typeof body.error.message, shown(answer)).toBe('string');
}

/** A tool's own outcome: ok, or a documented code that is not INTERNAL. */
function expectItem(item: Json, answer: SocketAnswer): void {
  expect(typeof item?.ok, shown(answer)).toBe('boolean');
  if (item.ok) return;
  expect(ERROR_CODES, shown(answer)).toContain(item.error?.code as ErrorCode);
  expect(item.error.code, shown(answer)).not.toBe('INTERNAL');
}

function expectAnswered(answer: SocketAnswer): void {
  expect(answer.status, `no answer: ${answer.text.slice(0, 200)}`).toBeDefined();
  expect(answer.status, shown(answer)).toBeLessThan(500);
}

const send = (request: Request, head?: readonly string[]) =>
  socketRequest(stack.gatewayUrl, wire(request, head), { timeoutMs: DEADLINE_MS, streamForMs: 200 });

// ---- the properties -------------------------------------------------------------------------

it('no request to the REST entry gets a 5xx, a broken body or no answer', async () => {
  await fc.assert(
    fc.asyncProperty(restRequest(), async (request) => {
      const answer = await send(request);
      expectAnswered(answer);
      if (answer.status! >= 400) return expectRestError(answer);
      const body: Json = JSON.parse(answer.text);
      if (request.path.startsWith('/api/v2/rest/tool-calls')) {
        for (const item of [body].flat()) expectItem(item, answer);
      } else if (request.method === 'POST') {
        expectItem(body, answer);
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  const served = await send({ method: 'GET', path: '/api/v2/rest/tools', headers: credentials[0]!.headers });
  expect(served.status).toBe(200);
}, 180_000);

it('no request to the ops routes gets a 5xx, a broken body or no answer', async () => {
  await fc.assert(
    fc.asyncProperty(opsRequest(), async (request) => {
      const answer = await send(request);
      expectAnswered(answer);
      if (answer.status! >= 400) expectRestError(answer);
    }),
    { seed: SEED, numRuns: Math.ceil(RUNS / 3), endOnFailure: true },
  );
  expect((await send({ method: 'GET', path: '/healthz', headers: {} })).status).toBe(200);
}, 120_000);

/** Request targets on every entry: as they are, with hostile suffixes, or in forms no route takes. */
function target(): fc.Arbitrary<string> {
  const paths = [
    ...mcpTargets.map((t) => t.path),
    ...operations.map((op) => op.path),
    '/api/v2/rest/tools',
    '/api/v2/rest/tool-calls',
    '/api/v2/rest/openapi.json',
    '/healthz',
    '/readyz',
    '/metrics',
    '/cache/invalidate',
    '/.well-known/oauth-protected-resource',
    '/nowhere',
  ];
  const base = fc.constantFrom(...paths);
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(base, query()).map(([p, q]) => `${p}${q}`) },
    { weight: 2, arbitrary: fc.tuple(base, hostileText).map(([p, t]) => `${p}/${percentEncoded(t)}`) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        base.map((p) => `http://evil.example${p}`),
        base.map((p) => `${p}//x`),
        base.map((p) => `/.${p}`),
        fc.constantFrom('*', '/', '//', '/%', '/%ff', '/api/v2/mcp/server/%E0%A4%A'),
      ),
    },
  );
}

function rawRequest(): fc.Arbitrary<{ request: Request; text: string }> {
  const hostLines = fc.oneof(
    { weight: 6, arbitrary: fc.constant([`Host: ${host}`]) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        [],
        ['Host: evil.example'],
        [`Host: ${host}`, 'Host: evil.example'],
        ['Host: '],
        [`Host: ${host}`, `host: ${host}`],
      ),
    },
  );
  const session = fc.oneof(
    fc.constantFrom(...mcpTargets.map((t) => t.sessionId)),
    headerText,
    fc.constant(undefined),
  );
  const headers = fc.record(
    {
      authorization: fc.oneof(
        fc.constantFrom(...credentials.map((c) => c.headers.authorization!)),
        headerText.map((t) => `Bearer ${t}`),
      ),
      'x-bindery-caller': headerText,
      'content-type': fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1'),
      accept: fc.constantFrom(
        'application/json, text/event-stream',
        'text/event-stream',
        'application/json',
        '*/*',
      ),
      'mcp-session-id': session.map((s) => s ?? ''),
      'mcp-protocol-version': fc.oneof(
        fc.constantFrom(PROTOCOL_VERSION, '2024-11-05', '1999-01-01'),
        headerText,
      ),
      'last-event-id': headerText,
      origin: fc.constantFrom('http://localhost:5173', 'http://evil.example', 'null'),
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(
    fc.constantFrom(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'find_customers', arguments: { query: '[0].name' } },
      }),
      JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'initialize',
        params: {
          protocolVersion: PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'fuzz', version: '1' },
        },
      }),
      JSON.stringify({ id: 4, tool_name: 'find_customers', arguments: {} }),
      JSON.stringify({ all: true }),
    ),
    hostileValue.map((v) => JSON.stringify(v) ?? ''),
    rawBodies,
  );
  return fc
    .record({
      method: fc.constantFrom(
        'GET',
        'POST',
        'POST',
        'DELETE',
        'PUT',
        'PATCH',
        'OPTIONS',
        'HEAD',
        'TRACE',
        'get',
      ),
      path: target(),
      headers,
      body: fc.option(body, { nil: undefined }),
      host: hostLines,
      chunked: fc.boolean(),
    })
    .map(({ method, path, headers, body, host: head, chunked }) => {
      const request = {
        method,
        path,
        headers: Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== '')),
        body,
      };
      return { request, text: wire(request, head, chunked) };
    });
}

it('no raw HTTP request to any entry gets a 5xx, a body of the wrong shape or no answer', async () => {
  await fc.assert(
    fc.asyncProperty(rawRequest(), async ({ request, text }) => {
      const answer = await socketRequest(stack.gatewayUrl, text, {
        timeoutMs: DEADLINE_MS,
        streamForMs: 200,
      });
      expectAnswered(answer);
      if (answer.streamed || answer.status! < 400 || request.method === 'HEAD' || answer.text === '') return;
      const body: Json = JSON.parse(answer.text);
      if (body.jsonrpc !== undefined) {
        // Only an MCP endpoint answers in JSON-RPC, and never with an internal error.
        expect(isMcpPath(requestTargetPath(request.path)), shown(answer)).toBe(true);
        expect(Number.isInteger(body.error?.code), shown(answer)).toBe(true);
        expect(body.error.code, shown(answer)).not.toBe(-32603);
      } else {
        expectRestError(answer);
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  for (const { path, headers, sessionId } of mcpTargets) {
    const list = await send({
      method: 'POST',
      path,
      headers: {
        ...headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': PROTOCOL_VERSION,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(list.status, path).toBe(200);
  }
  expect((await fetch(`${stack.controlPlaneUrl}/healthz`)).status).toBe(200);
}, 180_000);
