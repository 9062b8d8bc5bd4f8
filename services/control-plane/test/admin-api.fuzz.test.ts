// Pins, property-based, that no request can make the control plane answer 5xx or hang: every route
// of its OpenAPI document (admin routes with a valid admin token, internal ones with the internal
// token; the live audit stream too, each stream it opens read briefly and then closed) gets random
// and hostile path parameters, query strings, bodies and content types (NUL, lone surrogates, deep
// nesting, huge, negative and fractional numbers, wrong types, `__proto__` and `constructor` keys,
// long strings, empty and malformed bodies). Every answer must come within
// the deadline, be below 500, and carry the documented error body with its code's status; the
// server must still answer afterwards. The seed is fixed (FUZZ_SEED overrides it, FUZZ_RUNS the
// number of requests); a failure prints the seed and the shrunk request that reproduces it.
import {
  ERROR_CODES,
  ERROR_STATUS,
  OPERATION_TYPES,
  type ErrorCode,
  type OperationType,
} from '@bindery/contracts';
import { OPERATIONS } from '@bindery/context-ops';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { INTERNAL_TOKEN, ROOT_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { documentedRoutes, type DocumentedRoute } from './support/openapi-routes.ts';
import { rawRequest } from './support/raw-request.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const DEADLINE_MS = 5_000;
/** How long an answer that is an event stream is read before the client closes it. */
const STREAM_READ_MS = 100;

let t: TestApp;
let routes: DocumentedRoute[];
/** Real ids of each kind, so some requests get past the lookups into the domain code. */
const ids: string[] = [];
/** A bound tool per operation, for the executor's property. */
const tools: { op: OperationType; adiId: string; aeiId: string; bindingId: string }[] = [];

beforeAll(async () => {
  t = await startTestApp({ bodyLimitBytes: 256 * 1024 });
  // Every documented route; an event stream's answer never ends, so each is read for a while.
  routes = await documentedRoutes(t.baseUrl);
  const project = await t.call('POST', '/api/v2/projects', { body: { name: 'Fuzz' } });
  const table = await t.call('POST', '/api/v2/tables', {
    body: { name: 'fuzz', project_id: project.body.id, data: { items: [{ id: 1 }], n: 1 } },
  });
  const adi = await t.call('POST', '/api/v2/adis', {
    body: { table_id: table.body.id, json_path: '/items', operation_type: 'create' },
  });
  const aei = await t.call('POST', '/api/v2/aeis', { body: { name: 'fuzz' } });
  const binding = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
    body: { adi_id: adi.body.id },
  });
  const legacy = await t.call('POST', '/api/v1/mcp', { body: { table_id: table.body.id, json_pointer: '' } });
  ids.push(project.body.id, table.body.id, adi.body.id, aei.body.id, binding.body.id, legacy.body.id);
  ids.push(aei.body.api_key, legacy.body.api_key);
  if (ids.some((id) => typeof id !== 'string')) throw new Error(`fixture failed: ${JSON.stringify(ids)}`);
  // One bound tool per operation, on data with objects, arrays and scalars to aim at.
  const data = await t.call('POST', '/api/v2/tables', {
    body: { name: 'ops', data: { list: [{ id: 1, tags: ['a'] }, { id: 2 }], map: { a: { b: 1 } }, n: 1 } },
  });
  for (const op of OPERATION_TYPES) {
    const adiBody = {
      table_id: data.body.id,
      json_path: '',
      operation_type: op,
      ...(op === 'select' && { config: { id_field: 'id' } }),
    };
    const made = await t.call('POST', '/api/v2/adis', { body: adiBody });
    const bound = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
      body: { adi_id: made.body.id, tool_name: `fuzz_${op}` },
    });
    if (bound.status !== 201) throw new Error(`binding ${op} failed: ${JSON.stringify(bound.body)}`);
    tools.push({ op, adiId: made.body.id, aeiId: aei.body.id, bindingId: bound.body.id });
  }
});
afterAll(() => t.close());

// ---- hostile pieces -------------------------------------------------------------------------

/** Text PostgreSQL cannot store: the inputs that used to answer 500. */
const unstorableText = fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udc00', '\udfff\ud800');

const hostileText = fc.oneof(
  { weight: 2, arbitrary: unstorableText },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\ud83d\ude00',
      '..',
      '../../etc/passwd',
      '%',
      '%00',
      '__proto__',
      'constructor',
      'prototype',
      '/',
      '~1',
      '*',
      '-1',
      '1e999',
      'null',
      'true',
      '"quoted"',
      "'; DROP TABLE aei; --",
      '$(reboot)',
      '{{secret.x}}',
      'x'.repeat(5_000),
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
);

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -1, 1.5, -0.5, 1e308, -1e308, 2 ** 53 + 2, Number.MIN_VALUE, 1e21),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Any JSON value, leaning towards the hostile. */
const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileText,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileText, fc.constantFrom('name', 'data', 'type', 'id')), tie('value'), {
      maxKeys: 4,
    }),
  ),
})).value;

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** Bodies no serializer would produce. */
const rawBodies = fc.constantFrom(
  '',
  '   ',
  '{',
  '{"name":',
  '[1,]',
  'undefined',
  'NaN',
  '1e999',
  '{"name":1e999}',
  '{"limit":-1e999}',
  '"\\u0000"',
  '{"name":"\\u0000"}',
  '{"name":"\\ud800"}',
  '{"\\u0000":1}',
  '{"__proto__":{"polluted":true}}',
  '{"name":"x","__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  `{"name":"deep","data":${nested(100)}}`,
  nested(10_000),
  '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000),
  '\u0000',
  '\ufeff{}',
  `{"name":"${'y'.repeat(300_000)}"}`,
);

const contentTypes = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom<string | undefined>(
      'application/json; charset=utf-8',
      undefined,
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/octet-stream',
      'application/json; charset=utf-16',
      'multipart/form-data; boundary=x',
    ),
  },
);

/** Values a route may accept, so that requests also get past validation into the domain. */
const plausible = () =>
  fc.oneof(
    fc.constantFrom(...ids),
    fc.constantFrom(...OPERATION_TYPES),
    fc.constantFrom(
      '',
      '/items',
      '/items/0',
      '/n',
      'x',
      'tool_x',
      'direct',
      'progressive',
      'enabled',
      'disabled',
    ),
    fc.constantFrom({}, { type: 'object' }, { preview_keys: ['id'] }, [], { items: [] }),
    fc.boolean(),
    fc.integer({ min: 0, max: 10 }),
  );

/**
 * A body shaped after the route's schema: each documented property (or a stray one) with a
 * plausible or a hostile value, one object or a batch of them; or any hostile value at all.
 */
function shapedBody(route: DocumentedRoute): fc.Arbitrary<unknown> {
  const names = route.bodyProperties.length > 0 ? route.bodyProperties : ['name'];
  const value = fc.oneof({ weight: 3, arbitrary: plausible() }, { weight: 2, arbitrary: hostileValue });
  const object = fc
    .tuple(
      fc.subarray(names, { minLength: Math.min(names.length, 1) }),
      fc.array(fc.tuple(hostileText, hostileValue), { maxLength: 1 }),
    )
    .chain(([keys, strays]) =>
      fc.tuple(...keys.map(() => value)).map((values) => ({
        ...Object.fromEntries(keys.map((k, i) => [k, values[i]])),
        ...Object.fromEntries(strays),
      })),
    );
  return fc.oneof(
    { weight: 6, arbitrary: object },
    { weight: 1, arbitrary: fc.array(object, { minLength: 1, maxLength: 3 }) },
    { weight: 1, arbitrary: hostileValue },
  );
}

interface Attempt {
  method: string;
  path: string;
  body: string | undefined;
  contentType: string | undefined;
  token: string;
}

const CODE_POINTS = /[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g;
const LONE = /^[\ud800-\udfff]$/;

/**
 * Percent-encodes text for a URL. A lone surrogate has no UTF-8 (encodeURIComponent throws), so
 * it goes as the bytes a careless client would send: its CESU-8 form.
 */
function encode(text: string): string {
  return text.replace(CODE_POINTS, (c) => (LONE.test(c) ? '%ED%A0%80' : encodeURIComponent(c)));
}

function attemptFor(route: DocumentedRoute): fc.Arbitrary<Attempt> {
  const param = fc.oneof(fc.constantFrom(...ids), hostileText);
  const params = fc.tuple(...route.pathParams.map(() => param));
  const queryKey = fc.oneof(
    ...(route.queryParams.length > 0 ? [fc.constantFrom(...route.queryParams)] : []),
    hostileText,
  );
  const queryValue = fc.oneof(hostileText, hostileNumber.map(String), fc.constantFrom(...ids));
  const query = fc.array(fc.tuple(queryKey, queryValue), { maxLength: 4 });
  const body = fc.oneof(
    { weight: 4, arbitrary: shapedBody(route).map((v) => JSON.stringify(v) as string | undefined) },
    { weight: 2, arbitrary: rawBodies.map((v) => v as string | undefined) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  return fc
    .record({ params, query, body, contentType: contentTypes })
    .map(({ params, query, body, contentType }) => {
      let i = 0;
      const path = route.path.replace(/\{[^}]+\}/g, () => encode(params[i++] ?? ''));
      const search = query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
      return {
        method: route.method,
        path: search === '' ? path : `${path}?${search}`,
        body,
        contentType: body === undefined ? undefined : contentType,
        token: route.security === 'internal' ? INTERNAL_TOKEN : ROOT_TOKEN,
      };
    });
}

// ---- the property ---------------------------------------------------------------------------

/** Sends an attempt and checks its answer; resolves to the answer's text when it succeeded. */
async function check(attempt: Attempt): Promise<string | undefined> {
  const res = await rawRequest(t.baseUrl, {
    method: attempt.method,
    path: attempt.path,
    headers: {
      authorization: `Bearer ${attempt.token}`,
      ...(attempt.contentType !== undefined && { 'content-type': attempt.contentType }),
    },
    ...(attempt.body !== undefined && { body: attempt.body }),
    timeoutMs: DEADLINE_MS,
    streamForMs: STREAM_READ_MS,
  });
  expect(res.timedOut, 'no answer within the deadline').toBe(false);
  expect(res.status, res.text.slice(0, 500)).toBeLessThan(500);
  // A stream that opened: its events are audit-stream.*.test.ts's business.
  if (res.streamed) {
    expect(res.status).toBe(200);
    return undefined;
  }
  if (res.status < 400) return res.text;
  const body = JSON.parse(res.text) as {
    error?: { code?: ErrorCode; message?: unknown; request_id?: unknown };
  };
  expect(ERROR_CODES, res.text.slice(0, 500)).toContain(body.error?.code);
  expect(res.status).toBe(ERROR_STATUS[body.error!.code!]);
  expect(typeof body.error?.message).toBe('string');
  expect(typeof body.error?.request_id).toBe('string');
  return undefined;
}

it('no request to a documented route answers 5xx, hangs or breaks the error body', async () => {
  expect(routes.length).toBeGreaterThanOrEqual(30);
  const attempts = fc.constantFrom(...routes).chain(attemptFor);
  await fc.assert(
    fc.asyncProperty(attempts, async (attempt) => {
      await check(attempt);
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  // Every route was reached at least once by the sample above? Make sure, with one attempt each.
  for (const route of routes) {
    await check(fc.sample(attemptFor(route), { seed: SEED, numRuns: 1 })[0]!);
  }
  expect((await t.call('GET', '/healthz')).status).toBe(200);
  expect((await t.call('GET', '/api/v2/me')).status).toBe(200);
}, 120_000);

/** Arguments each operation accepts on the fixture's data (the starting point of mutations). */
const VALID_ARGUMENTS: Record<OperationType, Record<string, unknown>> = {
  get_all: {},
  get_schema: {},
  preview: { offset: 0, limit: 2 },
  select: { keys: [1] },
  query: { query: 'list[0]' },
  create: { path: '/list', value: { id: 3 } },
  update: { path: '/n', value: 2 },
  delete: { path: '/list/0' },
  move: { from: '/map/a', to: '/map/c' },
  copy: { from: '/list/0', to: '/list/-' },
};

/** A replacement for one argument, of the kind that argument takes (or of any kind). */
function argumentValue(name: string): fc.Arbitrary<unknown> {
  const pointers = fc.constantFrom('', '/list', '/list/0', '/list/-', '/map/a', '/n', '/list/9', '/map/~1');
  const queries = fc.constantFrom('@', 'map.a', 'length(list)', '[*].id', 'list[?id > `1`]');
  const typed: Record<string, fc.Arbitrary<unknown>> = {
    // Values are what gets stored: text the database cannot take, in values and in keys, often.
    value: fc.oneof(
      { weight: 3, arbitrary: hostileValue },
      { weight: 1, arbitrary: unstorableText },
      { weight: 1, arbitrary: fc.dictionary(unstorableText, hostileValue, { minKeys: 1, maxKeys: 2 }) },
      { weight: 1, arbitrary: fc.array(unstorableText, { minLength: 1, maxLength: 2 }) },
    ),
    path: fc.oneof(pointers, hostileText),
    from: fc.oneof(pointers, hostileText),
    to: fc.oneof(pointers, hostileText),
    key: hostileText,
    query: fc.oneof(queries, hostileText),
    keys: fc.array(fc.oneof(hostileText, hostileNumber), { maxLength: 3 }),
  };
  return fc.oneof(
    { weight: 3, arbitrary: Object.hasOwn(typed, name) ? typed[name]! : hostileNumber },
    { weight: 1, arbitrary: hostileValue },
  );
}

/**
 * Arguments for an operation: valid ones with up to two arguments replaced (or a stray one added),
 * so most calls reach the engine and the store with hostile content; sometimes any value at all.
 */
function argumentsFor(op: OperationType): fc.Arbitrary<unknown> {
  const names = Object.keys((OPERATIONS[op].inputSchema.properties ?? {}) as Record<string, unknown>);
  const name = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...(names.length > 0 ? names : ['value'])) },
    { weight: 1, arbitrary: hostileText },
  );
  const mutated = fc
    .array(
      name.chain((n) => argumentValue(n).map((v) => [n, v] as const)),
      { maxLength: 2 },
    )
    .map((changes) => ({ ...VALID_ARGUMENTS[op], ...Object.fromEntries(changes) }));
  return fc.oneof({ weight: 8, arbitrary: mutated }, { weight: 1, arbitrary: hostileValue });
}

it('no tool call through the internal execute route answers 5xx, whatever its arguments', async () => {
  const calls = fc
    .constantFrom(...tools)
    .chain((tool) => argumentsFor(tool.op).map((args) => ({ tool, args })));
  await fc.assert(
    fc.asyncProperty(calls, async ({ tool, args }) => {
      const body = { aei_id: tool.aeiId, binding_id: tool.bindingId, arguments: args, request_id: 'fuzz' };
      const attempt: Attempt = {
        method: 'POST',
        path: `/internal/adi/${tool.adiId}/execute`,
        body: JSON.stringify(body),
        contentType: 'application/json',
        token: INTERNAL_TOKEN,
      };
      const text = await check(attempt);
      if (text === undefined) return;
      // A tool failure is a result with a documented code (an unknown fault would be a 500).
      const result = JSON.parse(text) as { content: { text: string }[]; isError?: boolean };
      const answer = JSON.parse(result.content[0]!.text) as {
        error?: { code?: ErrorCode; message?: unknown };
      };
      if (result.isError) {
        expect(ERROR_CODES).toContain(answer.error?.code);
        expect(answer.error?.code).not.toBe('INTERNAL');
        expect(typeof answer.error?.message).toBe('string');
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  expect((await t.call('GET', '/healthz')).status).toBe(200);
}, 120_000);
