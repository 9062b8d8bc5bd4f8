// Pins structured output (SDK Client -> gateway -> control plane): every prebuilt operation lists
// an outputSchema, and every answer of it carries structuredContent that conforms, checked twice:
// by the SDK Client itself (it validates a tool's answers against the schema tools/list gave, and
// refuses an answer without structured content) and here with the SDK's own Ajv validator. Answers
// that may be any JSON (get_all, preview, query) sit under `result`; the text content is the answer
// as before. A retried keyed write is answered from its record with the same structured content.
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let client: Client;
let schemas: Map<string, Record<string, unknown>>;

/** A binding's narrowing of the query tool's output: a count. */
const COUNT = {
  type: 'object',
  properties: { result: { type: 'integer', minimum: 0 } },
  required: ['result'],
  additionalProperties: false,
};

// One tool per operation (preview twice: paged with keys, and as a whole), on arrays and objects.
const SPECS = [
  ['all', 'get_all', '/customers', {}],
  ['shape', 'get_schema', '', {}],
  ['peek', 'preview', '/customers', { preview_keys: ['id'] }],
  ['peek_all', 'preview', '/settings', {}],
  ['pick', 'select', '/customers', { id_field: 'id' }],
  ['ask', 'query', '', {}],
  ['add', 'create', '/customers', {}],
  ['change', 'update', '/settings', {}],
  ['remove', 'delete', '/settings', {}],
  ['relocate', 'move', '', {}],
  ['duplicate', 'copy', '', {}],
] as const;

beforeAll(async () => {
  stack = await startStack();
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'structured' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', {
    name: 'CRM',
    data: {
      customers: [
        { id: 'c1', name: 'Ada' },
        { id: 'c2', name: 'Grace' },
      ],
      settings: { theme: 'dark', size: 3 },
    },
  });
  const adis = [];
  for (const [name, op, path, config] of SPECS) {
    adis.push(
      await as('POST', '/api/v2/adis', {
        table_id: table.id,
        json_path: path,
        operation_type: op,
        name,
        config,
      }),
    );
  }
  const aei = await as('POST', '/api/v2/aeis', { name: 'structured' });
  await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    adis.map((a: Json) => ({ adi_id: a.id })),
  );
  // A query tool once more, its answer narrowed to a count.
  const count = await as('POST', '/api/v2/adis', {
    table_id: table.id,
    json_path: '',
    operation_type: 'query',
    name: 'count',
  });
  await as('POST', `/api/v2/aeis/${aei.id}/bindings`, { adi_id: count.id, output_schema: COUNT });
  client = await stack.connect(`/api/v2/mcp/server/${aei.api_key}`);
  // Listing first is what makes the SDK Client validate each answer against its tool's schema.
  const { tools } = await client.listTools();
  schemas = new Map(tools.map((t) => [t.name, t.outputSchema as Record<string, unknown>]));
});
afterAll(() => stack.close());

const validator = new AjvJsonSchemaValidator();

/** Calls `name`, checks its structured content against the listed schema, gives both forms. */
async function call(name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) })) as Json;
  expect(result.isError, JSON.stringify(result)).toBeFalsy();
  const schema = schemas.get(name);
  expect(schema, `${name} lists an outputSchema`).toBeDefined();
  const check = validator.getValidator(schema!)(result.structuredContent);
  expect(check.valid, `${name}: ${check.errorMessage ?? ''}`).toBe(true);
  return { structured: result.structuredContent as Json, text: resultJson(result) };
}

describe('structured output of the prebuilt operations', () => {
  it('lists an object outputSchema for every one of them', () => {
    expect([...schemas.keys()].sort()).toEqual([...SPECS.map(([name]) => name), 'count'].sort());
    for (const [name, schema] of schemas) expect(schema, name).toMatchObject({ type: 'object' });
  });

  it('answers reads with conforming structured content; any-JSON answers sit under `result`', async () => {
    const all = await call('all');
    expect(all.structured).toEqual({ result: all.text });
    expect(all.text).toEqual([
      { id: 'c1', name: 'Ada' },
      { id: 'c2', name: 'Grace' },
    ]);
    const shape = await call('shape');
    expect(shape.structured).toEqual(shape.text);
    expect(shape.structured).toMatchObject({ type: 'object' });
    const peek = await call('peek', { limit: 1 });
    expect(peek.structured).toEqual({ result: { items: [{ id: 'c1' }], total: 2, offset: 0, limit: 1 } });
    const whole = await call('peek_all');
    // Object data pages as {key, value} items, in the order the engine keeps the keys.
    expect(whole.structured.result.total).toBe(2);
    expect(whole.structured.result.items).toEqual(
      expect.arrayContaining([
        { key: 'theme', value: 'dark' },
        { key: 'size', value: 3 },
      ]),
    );
    const pick = await call('pick', { keys: ['c2', 'c9'] });
    expect(pick.structured).toEqual({ items: [{ id: 'c2', name: 'Grace' }], missing: ['c9'] });
    // A scalar, a null and an array: what no object-only schema could describe.
    for (const [query, expected] of [
      ['length(customers)', 2],
      ['missing', null],
      ['customers[].id', ['c1', 'c2']],
    ] as const) {
      const answer = await call('ask', { query });
      expect(answer.structured).toEqual({ result: expected });
      expect(answer.text).toEqual(expected);
    }
  });

  it('answers writes with the pointer or places and the new table version, a replay alike', async () => {
    const added = await call('add', { value: { id: 'c3', name: 'Edsger' } });
    expect(added.structured).toEqual({
      pointer: '/2',
      value: { id: 'c3', name: 'Edsger' },
      table_version: expect.any(Number),
    });
    expect(added.text).toEqual(added.structured);
    const key = { 'bindery/idempotency_key': 'structured-output-update-1' };
    const changed = await call('change', { path: '/theme', value: 'light' }, key);
    expect(changed.structured).toMatchObject({ pointer: '/theme', value: 'light' });
    expect(changed.structured.table_version).toBeGreaterThan(added.structured.table_version);
    const replayed = await call('change', { path: '/theme', value: 'light' }, key);
    expect(replayed.structured).toEqual(changed.structured);
    const removed = await call('remove', { path: '/size' });
    expect(removed.structured).toMatchObject({ pointer: '/size', value: 3 });
    const moved = await call('relocate', { from: '/settings/theme', to: '/theme' });
    expect(moved.structured).toMatchObject({ from: '/settings/theme', to: '/theme' });
    const copied = await call('duplicate', { from: '/customers/0', to: '/first' });
    expect(copied.structured).toMatchObject({ from: '/customers/0', to: '/first' });
    expect(copied.structured.table_version).toBeGreaterThan(moved.structured.table_version);
  });

  it('holds a binding’s answers to the output schema it narrowed to', async () => {
    expect(schemas.get('count')).toEqual(COUNT);
    const counted = await call('count', { query: 'length(customers)' });
    expect(counted.structured).toEqual({ result: expect.any(Number) });
    // An answer outside the narrowing is the tool's error, never a result the client would refuse.
    const outside = (await client.callTool({
      name: 'count',
      arguments: { query: 'customers[0].id' },
    })) as Json;
    expect(outside.isError).toBe(true);
    expect(outside.structuredContent).toBeUndefined();
    expect(resultJson(outside).error).toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/count answered something the binding’s output_schema does not allow/),
    });
  });

  it('leaves tool errors without structured content, which the SDK Client accepts', async () => {
    const result = (await client.callTool({ name: 'remove', arguments: { path: '/nothing' } })) as Json;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(resultJson(result).error.code).toBe('NOT_FOUND');
  });
});
