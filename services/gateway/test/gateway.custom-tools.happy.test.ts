// Pins custom JavaScript tools end to end (SDK Client -> gateway -> control plane process -> its
// sandbox): tools/list shows a custom tool with its schemas and annotations; a tool that sums an
// array argument answers the sum, as structuredContent too since it declares an output schema
// (the SDK checks one against the other); console lines arrive in the result's `_meta`; a tool
// stuck in `while (true) {}` ends with TIMEOUT in under 2 s while a context query through the same
// gateway answers meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let apiKey: string;

const SUM = {
  kind: 'custom',
  name: 'sum',
  description: 'Adds up numbers.',
  code: 'export default async function (args) {\n  return { sum: args.numbers.reduce((a, b) => a + b, 0) };\n}\n',
  input_schema: {
    type: 'object',
    required: ['numbers'],
    properties: { numbers: { type: 'array', items: { type: 'number' } } },
    additionalProperties: false,
  },
  output_schema: { type: 'object', required: ['sum'], properties: { sum: { type: 'number' } } },
};

beforeAll(async () => {
  stack = await startStack();
  const token = (await stack.admin('POST', '/api/v2/users', { name: 'custom' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const table = await as('POST', '/api/v2/tables', {
    name: 'CRM',
    data: {
      customers: [
        { id: 'c1', tier: 'gold' },
        { id: 'c2', tier: 'silver' },
      ],
    },
  });
  const adis: Json[] = [
    await as('POST', '/api/v2/adis', SUM),
    await as('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'chatty',
      code: 'export default (args) => { console.info("hello", args.who); return "hi " + args.who; }',
      input_schema: { type: 'object', properties: { who: { type: 'string' } } },
    }),
    await as('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'spin',
      code: 'export default function () { while (true) {} }',
      input_schema: { type: 'object' },
    }),
    await as('POST', '/api/v2/adis', {
      name: 'crm_query',
      table_id: table.id,
      json_path: '',
      operation_type: 'query',
    }),
  ];
  const aei = await as('POST', '/api/v2/aeis', { name: 'agent' });
  apiKey = aei.api_key;
  await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    adis.map((adi) => ({ adi_id: adi.id })),
  );
});
afterAll(() => stack.close());

describe('custom tools through the gateway', () => {
  it('lists a custom tool with its schemas, title and annotations', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    const { tools } = await client.listTools();
    expect(tools.find((tool) => tool.name === 'sum')).toMatchObject({
      name: 'sum',
      title: 'Custom tool',
      description: 'Adds up numbers.',
      inputSchema: SUM.input_schema,
      outputSchema: SUM.output_schema,
      annotations: { readOnlyHint: true, openWorldHint: false },
    });
  });

  it('a tool that sums an array argument returns the sum, as text and structuredContent', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    const result = await client.callTool({ name: 'sum', arguments: { numbers: [1, 2, 3, 4.5] } });
    expect(result.isError).toBeFalsy();
    expect(resultJson(result)).toEqual({ sum: 10.5 });
    expect(result.structuredContent).toEqual({ sum: 10.5 });
  });

  it('console lines arrive in the result’s _meta', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    const result = await client.callTool({ name: 'chatty', arguments: { who: 'Ada' } });
    expect(resultJson(result)).toBe('hi Ada');
    expect(result._meta).toEqual({ 'bindery/console': [{ level: 'info', message: 'hello Ada' }] });
  });

  it('while(true){} ends with TIMEOUT in under 2 s; a context query answers meanwhile', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    // Both sandbox threads are running before the clock starts.
    await Promise.all([1, 2].map(() => client.callTool({ name: 'sum', arguments: { numbers: [] } })));
    const started = performance.now();
    const spinning = client.callTool({ name: 'spin', arguments: {} }).then((result) => ({
      result,
      ms: performance.now() - started,
    }));
    const query = await client.callTool({
      name: 'crm_query',
      arguments: { query: "customers[?tier=='gold'].id" },
    });
    const queryMs = performance.now() - started;
    const spin = await spinning;
    expect(resultJson(query)).toEqual(['c1']);
    expect(queryMs).toBeLessThan(spin.ms);
    expect(spin.result.isError).toBe(true);
    expect(resultJson(spin.result).error).toMatchObject({ code: 'TIMEOUT', details: { limit: 'time' } });
    expect(spin.ms).toBeLessThan(2_000);
  });
});
