/**
 * Builds a user's tools through the admin API and calls them through the internal executor API,
 * the way a gateway does.
 */
import { INTERNAL_TOKEN, type CallResult, type TestApp } from './app.ts';

export interface BoundTool {
  adiId: string;
  bindingId: string;
  toolName: string;
}

export interface Fixture {
  userId: string;
  token: string;
  tableId: string;
  aeiId: string;
  apiKey: string;
  tools: Record<string, BoundTool>;
}

/** A user with one table, one AEI, and one bound ADI per spec (keyed by the spec's name). */
export async function buildFixture(
  t: TestApp,
  data: unknown,
  specs: Record<string, { json_path: string; operation_type: string; config?: Record<string, unknown> }>,
): Promise<Fixture> {
  const { id: userId, token } = await t.newUser('executor-user');
  const ok = (res: CallResult, what: string) => {
    if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const table = ok(await t.call('POST', '/api/v2/tables', { token, body: { name: 'crm', data } }), 'table');
  const aei = ok(await t.call('POST', '/api/v2/aeis', { token, body: { name: 'agent' } }), 'aei');
  const tools: Record<string, BoundTool> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const adi = ok(
      await t.call('POST', '/api/v2/adis', { token, body: { table_id: table.id, ...spec } }),
      name,
    );
    const binding = ok(
      await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, {
        token,
        body: { adi_id: adi.id, tool_name: name },
      }),
      `bind ${name}`,
    );
    tools[name] = { adiId: adi.id, bindingId: binding.id, toolName: name };
  }
  return { userId, token, tableId: table.id, aeiId: aei.id, apiKey: aei.api_key, tools };
}

/** Calls a bound tool through `POST /internal/adi/{id}/execute`; answers the HTTP result. */
export function execute(
  t: TestApp,
  f: Fixture,
  name: string,
  args: Record<string, unknown> = {},
  overrides: {
    aei_id?: string;
    binding_id?: string;
    adi_id?: string;
    token?: string | null;
    idempotency_key?: string;
    /** The config_version a gateway would send (none otherwise). */
    config_version?: number;
  } = {},
): Promise<CallResult> {
  const tool = f.tools[name];
  if (!tool) throw new Error(`no tool ${name} in the fixture`);
  return t.call('POST', `/internal/adi/${overrides.adi_id ?? tool.adiId}/execute`, {
    token: overrides.token === undefined ? INTERNAL_TOKEN : overrides.token,
    body: {
      aei_id: overrides.aei_id ?? f.aeiId,
      binding_id: overrides.binding_id ?? tool.bindingId,
      arguments: args,
      request_id: `req-${name}`,
      ...(overrides.idempotency_key !== undefined && { idempotency_key: overrides.idempotency_key }),
      ...(overrides.config_version !== undefined && { config_version: overrides.config_version }),
    },
  });
}

// Tool answers are arbitrary JSON; each test asserts the fields it cares about.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The JSON inside a tool result's text content, and whether it is an error. */
export function toolAnswer(res: CallResult): { isError: boolean; value: Json } {
  if (res.status !== 200) throw new Error(`execute answered HTTP ${res.status}: ${JSON.stringify(res.body)}`);
  return { isError: res.body.isError === true, value: JSON.parse(res.body.content[0].text) };
}

/** The table's data and version as the admin API shows them. */
export async function tableState(t: TestApp, f: Fixture): Promise<{ data: Json; version: number }> {
  const res = await t.call('GET', `/api/v2/tables/${f.tableId}`, { token: f.token });
  return { data: res.body.data, version: res.body.version };
}
