/**
 * Custom tools for tests: a user with a table and an exposure, custom ADIs saved through the admin
 * API and bound to it, and calls through the internal executor API the way a gateway makes them.
 */
import { INTERNAL_TOKEN, type CallResult, type TestApp } from './app.ts';

// Tool answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Adds up an array argument: the smallest useful custom tool. */
export const SUM_TOOL = {
  kind: 'custom',
  code: 'export default async function (args) {\n  return { sum: args.numbers.reduce((a, b) => a + b, 0) };\n}\n',
  input_schema: {
    type: 'object',
    required: ['numbers'],
    properties: { numbers: { type: 'array', items: { type: 'number' }, maxItems: 1000 } },
    additionalProperties: false,
  },
};

export interface ToolOutcome {
  isError: boolean;
  value: Json;
  /** The result's `_meta` (console lines under "bindery/console"). */
  meta: Json;
  structured: Json;
}

export interface CustomToolUser {
  token: string;
  userId: string;
  tableId: string;
  aeiId: string;
  /** Saves an ADI (any kind) named `name` and binds it to the exposure. */
  add(name: string, body: Record<string, unknown>): Promise<{ adiId: string; bindingId: string }>;
  /** Saves an ADI and answers the HTTP result, whatever it is. */
  save(body: Record<string, unknown>): Promise<CallResult>;
  /** Calls a bound tool through the executor. */
  call(name: string, args?: Record<string, unknown>, idempotencyKey?: string): Promise<ToolOutcome>;
  table(): Promise<{ data: Json; version: number }>;
}

/** A user owning `data` as table "crm" and an exposure "agent"; tools are added with `add`. */
export async function customToolUser(
  t: TestApp,
  data: unknown,
  name = 'custom-author',
): Promise<CustomToolUser> {
  const user = await t.newUser(name);
  const ok = (res: CallResult, what: string) => {
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const table = ok(
    await t.call('POST', '/api/v2/tables', { token: user.token, body: { name: 'crm', data } }),
    'table',
  );
  const aei = ok(await t.call('POST', '/api/v2/aeis', { token: user.token, body: { name: 'agent' } }), 'aei');
  const bound = new Map<string, { adiId: string; bindingId: string }>();
  const save = (body: Record<string, unknown>) => t.call('POST', '/api/v2/adis', { token: user.token, body });
  return {
    token: user.token,
    userId: user.id,
    tableId: table.id,
    aeiId: aei.id,
    save,
    async add(toolName, body) {
      const adi = ok(await save({ name: toolName, ...body }), `save ${toolName}`);
      const binding = ok(
        await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, {
          token: user.token,
          body: { adi_id: adi.id },
        }),
        `bind ${toolName}`,
      );
      const ids = { adiId: adi.id as string, bindingId: binding.id as string };
      bound.set(toolName, ids);
      return ids;
    },
    async call(toolName, args = {}, idempotencyKey) {
      const ids = bound.get(toolName);
      if (!ids) throw new Error(`no tool ${toolName}`);
      const res = await t.call('POST', `/internal/adi/${ids.adiId}/execute`, {
        token: INTERNAL_TOKEN,
        body: {
          aei_id: aei.id,
          binding_id: ids.bindingId,
          arguments: args,
          request_id: `req-${toolName}`,
          ...(idempotencyKey !== undefined && { idempotency_key: idempotencyKey }),
        },
      });
      if (res.status !== 200)
        throw new Error(`execute answered HTTP ${res.status}: ${JSON.stringify(res.body)}`);
      return {
        isError: res.body.isError === true,
        value: JSON.parse(res.body.content[0].text),
        meta: res.body._meta,
        structured: res.body.structuredContent,
      };
    },
    async table() {
      const res = await t.call('GET', `/api/v2/tables/${table.id}`, { token: user.token });
      return { data: res.body.data, version: res.body.version };
    },
  };
}

/** The body of a custom tool with `code` and an open input schema, on the user's table at `json_path`. */
export function customTool(code: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { kind: 'custom', code, input_schema: { type: 'object' }, ...extra };
}
