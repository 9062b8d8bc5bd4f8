// Pins what a binding's output_schema may be (the admin API, both engines): a narrowing of its
// tool's output schema by the input-schema rules, saved, shown and cleared with null; one that
// widens it, uses keywords the check cannot judge, narrows a tool that may write (its answer
// comes after the write) or one that declares no output schema is 400 naming the field, and
// nothing is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type CallResult, type TestApp } from './support/app.ts';

let t: TestApp;
let aeiId: string;
let queryId: string;
let tableId: string;

/** The canonical query answer, narrowed to an integer result. */
const COUNT = {
  type: 'object',
  properties: { result: { type: 'integer', minimum: 0 } },
  required: ['result'],
  additionalProperties: false,
};

beforeAll(async () => {
  t = await startTestApp();
  tableId = (await t.call('POST', '/api/v2/tables', { body: { name: 'things', data: { items: [1, 2] } } }))
    .body.id;
  queryId = (
    await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '', operation_type: 'query' },
    })
  ).body.id;
  aeiId = (await t.call('POST', '/api/v2/aeis', { body: { name: 'narrow' } })).body.id;
});
afterAll(() => t.close());

function expectRefused(res: CallResult, field: string, message: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('VALIDATION_FAILED');
  expect(res.body.error.message).toMatch(message);
  expect(JSON.stringify(res.body.error)).toContain(field);
}

describe('a binding’s output_schema', () => {
  it('is saved when it narrows the tool’s, shown in the binding and in tools/list, and cleared with null', async () => {
    const created = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: queryId, tool_name: 'count', output_schema: COUNT },
    });
    expect(created.status).toBe(201);
    expect(created.body.output_schema).toEqual(COUNT);
    const preview = await t.call('GET', `/api/v2/aeis/${aeiId}/tools`);
    const tool = preview.body.tools.find((x: { name: string }) => x.name === 'count');
    expect(tool.outputSchema).toEqual(COUNT);
    const cleared = await t.call('PATCH', `/api/v2/aeis/${aeiId}/bindings/${created.body.id}`, {
      body: { output_schema: null },
    });
    expect(cleared.body.output_schema).toBeNull();
    const again = await t.call('GET', `/api/v2/aeis/${aeiId}/tools`);
    expect(
      again.body.tools.find((x: { name: string }) => x.name === 'count').outputSchema.properties.result,
    ).toEqual({ description: 'What the expression returned.' });
    await t.call('DELETE', `/api/v2/aeis/${aeiId}/bindings/${created.body.id}`);
  });

  it('is 400 when it widens the tool’s, or uses keywords the check cannot judge; nothing is written', async () => {
    const wider = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: {
        adi_id: queryId,
        output_schema: { ...COUNT, properties: { ...COUNT.properties, extra: { type: 'string' } } },
      },
    });
    expectRefused(wider, 'output_schema', /extra/);
    const unjudged = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: {
        adi_id: queryId,
        output_schema: { type: 'object', properties: { result: { anyOf: [{ type: 'integer' }] } } },
      },
    });
    expectRefused(unjudged, 'output_schema', /anyOf/);
    const notObject = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: queryId, output_schema: { type: 'array' } },
    });
    expectRefused(notObject, 'output_schema', /type must be "object"/);
    const bindings = await t.call('GET', `/api/v2/aeis/${aeiId}/bindings`);
    expect(bindings.body.items).toEqual([]);
  });

  it('is 400 for a tool that may write: its answer comes after the write', async () => {
    const create = await t.call('POST', '/api/v2/adis', {
      body: { table_id: tableId, json_path: '/items', operation_type: 'create' },
    });
    const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: {
        adi_id: create.body.id,
        output_schema: {
          type: 'object',
          properties: {
            pointer: { type: 'string' },
            value: { type: 'integer' },
            table_version: { type: 'integer' },
          },
          required: ['pointer', 'value', 'table_version'],
          additionalProperties: false,
        },
      },
    });
    expectRefused(res, 'output_schema', /only a read-only tool's output schema can be narrowed/);
  });

  it('is 400 for a tool that declares no output schema', async () => {
    // Saved only, never called: no request leaves the machine.
    const http = await t.call('POST', '/api/v2/adis', {
      body: { kind: 'http', name: 'fetch_thing', method: 'GET', url: 'https://api.example.com/things' },
    });
    expect(http.status).toBe(201);
    const res = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
      body: { adi_id: http.body.id, output_schema: COUNT },
    });
    expectRefused(res, 'output_schema', /declares no output schema/);
  });
});
