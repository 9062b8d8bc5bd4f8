// The caller entries and the REST entry against a real control plane and gateway: a personal key
// with a caller map (/api/v2/mcp/caller/{caller}, and without a caller: initialize's clientInfo
// name), the REST tool calls with seed 004's tolerant source routing, the generated OpenAPI
// document (validated, then imported back as HTTP tools), and the caller on every audit row.
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { validate } from '@scalar/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { restCall } from './support/fixtures.ts';
import { startStack, type Stack } from './support/stack.ts';

const SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);

let stack: Stack;
let user: Exposed;
let personalKey: string;
/** The ambiguous profile: two upstream servers that both have read_data. */
let twinsAei: Json;
const logLines: Json[] = [];

const upstream = (name: string) => ({
  name,
  transport: 'stdio',
  command: 'node',
  args: [SCRIPT],
  env: { UPSTREAM_TEST_EXTRA: 'read_data', UPSTREAM_TEST_CATALOG: 'none' },
});

beforeAll(async () => {
  const log = new PassThrough();
  log.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() !== '') logLines.push(JSON.parse(line));
    }
  });
  stack = await startStack({
    controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node' },
    gatewayLogTo: log,
  });
  user = await twoTableExposure(stack);
  const as = user.token;
  personalKey = (await stack.admin('POST', '/api/v2/mcp-keys', { name: 'laptop' }, as)).key;
  await stack.admin('PUT', '/api/v2/callers/vscode', { aei_id: user.aeiId }, as);

  // An upstream server whose tool read_data is attached under the prefix "excel", and a native
  // tool whose ADI is also called read_data, bound under another name.
  const excel = await stack.admin('POST', '/api/v2/upstream-servers', upstream('excel'), as);
  await stack.admin(
    'POST',
    `/api/v2/aeis/${user.aeiId}/bindings`,
    { upstream_server_id: excel.id, prefix: 'excel' },
    as,
  );
  const native = await stack.admin(
    'POST',
    '/api/v2/adis',
    { name: 'read_data', table_id: user.tables.customers, json_path: '/list', operation_type: 'get_all' },
    as,
  );
  await stack.admin(
    'POST',
    `/api/v2/aeis/${user.aeiId}/bindings`,
    [{ adi_id: native.id, tool_name: 'native_read_data' }],
    as,
  );

  const sheets = await stack.admin('POST', '/api/v2/upstream-servers', upstream('sheets'), as);
  twinsAei = await stack.admin('POST', '/api/v2/aeis', { name: 'twins' }, as);
  for (const [server, prefix] of [
    [excel, 'excel'],
    [sheets, 'sheets'],
  ] as const) {
    await stack.admin(
      'POST',
      `/api/v2/aeis/${twinsAei.id}/bindings`,
      { upstream_server_id: server.id, prefix },
      as,
    );
  }
}, 120_000);
afterAll(() => stack?.close());

const bearer = (key: string, caller?: string) => ({
  authorization: `Bearer ${key}`,
  ...(caller !== undefined && { 'x-bindery-caller': caller }),
});

const rest = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  restCall(stack.gatewayUrl, method, path, headers, body);

const names = (tools: { name: string }[]) => tools.map((t) => t.name).sort();

describe('the caller entry (MCP)', () => {
  it('serves the profile the caller maps to, and the caller is on the audit row', async () => {
    const direct = await stack.connect(`/api/v2/mcp/server/${user.apiKey}`);
    const viaCaller = await stack.connect('/api/v2/mcp/caller/vscode', {
      headers: bearer(personalKey),
    });
    try {
      const expected = (await direct.listTools()).tools;
      expect(expected.length).toBeGreaterThan(2);
      expect((await viaCaller.listTools()).tools).toEqual(expected);
      const result = await viaCaller.callTool({
        name: 'find_customers',
        arguments: { query: 'length(@)' },
        _meta: { 'bindery/source': 'somewhere' },
      });
      expect(logLines.find((l) => l.source === 'somewhere')).toMatchObject({
        msg: 'unknown source hint ignored',
        caller: 'vscode',
      });
      expect(result.isError).toBeFalsy();
      expect(resultJson(result)).toBe(2);
      const [resource] = (await viaCaller.listResources()).resources;
      expect((await viaCaller.readResource({ uri: resource!.uri })).contents).toHaveLength(1);
    } finally {
      await direct.close();
      await viaCaller.close();
    }
    const audit = await stack.admin('GET', '/api/v2/audit?caller=vscode', undefined, user.token);
    expect(audit.items.length).toBeGreaterThan(0);
    expect(audit.items.every((row: Json) => row.caller === 'vscode')).toBe(true);
    const read = audit.items.find((row: Json) => row.action === 'resource.read');
    expect(read).toMatchObject({ tool_name: 'find_customers', caller: 'vscode' });
    const call = audit.items.find((row: Json) => row.tool_name === 'find_customers' && row !== read);
    expect(call).toMatchObject({ caller: 'vscode', source_used: 'native' });
    const others = await stack.admin('GET', '/api/v2/audit?caller=cursor', undefined, user.token);
    expect(others.items).toEqual([]);
  });

  it('gives an unmapped caller the default profile', async () => {
    const client = await stack.connect('/api/v2/mcp/caller/nobody', { headers: bearer(personalKey) });
    try {
      expect((await client.listTools()).tools).toEqual([]);
    } finally {
      await client.close();
    }
    const callers = await stack.admin('GET', '/api/v2/callers', undefined, user.token);
    const resolution = await stack.admin('GET', '/api/v2/callers/nobody', undefined, user.token);
    expect(resolution).toMatchObject({ via: 'default', aei_id: callers.default_profile.aei_id });
  });

  it('without a caller in the URL, tries the client’s own name (normalised) first', async () => {
    await stack.admin('PUT', '/api/v2/callers/visual-studio-code', { aei_id: user.aeiId }, user.token);
    const client = new Client({ name: 'Visual Studio Code', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}/api/v2/mcp/caller`), {
      requestInit: { headers: bearer(personalKey) },
    });
    await client.connect(transport);
    try {
      expect(names((await client.listTools()).tools)).toContain('find_customers');
      // The session id carries the caller: a replica that does not hold the session (here: this
      // one, once it dropped it) still serves the caller's profile, not the default one.
      expect(transport.sessionId).toMatch(/~visual-studio-code$/);
      stack.gateway.gateway.sessions.remove(transport.sessionId!);
      expect(names((await client.listTools()).tools)).toContain('find_customers');
      await client.callTool({ name: 'peek_orders', arguments: {} });
    } finally {
      await client.close();
    }
    const audit = await stack.admin('GET', '/api/v2/audit?caller=visual-studio-code', undefined, user.token);
    expect(audit.items[0]).toMatchObject({ tool_name: 'peek_orders', caller: 'visual-studio-code' });
  });

  it('announces tools/list_changed when the caller is mapped to another profile, and then serves it', async () => {
    const client = await stack.connect('/api/v2/mcp/caller/cursor', { headers: bearer(personalKey) });
    try {
      expect((await client.listTools()).tools).toEqual([]);
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      await stack.admin('PUT', '/api/v2/callers/cursor', { aei_id: user.aeiId }, user.token);
      await changed;
      expect(names((await client.listTools()).tools)).toContain('find_customers');
      // The session now follows the new profile: a change there reaches it too.
      const again = new Promise<void>((resolve) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      await stack.admin(
        'PATCH',
        `/api/v2/aeis/${user.aeiId}/bindings/${user.bindings.peek_orders}`,
        { tool_description: 'Orders, a few at a time.' },
        user.token,
      );
      await again;
    } finally {
      await client.close();
      await stack.admin('DELETE', '/api/v2/callers/cursor', undefined, user.token);
    }
  });
});

describe('the REST entry', () => {
  it('lists the profile’s tools with their schemas, by api_key or by personal key and caller', async () => {
    const byKey = await rest('GET', '/tools', bearer(user.apiKey));
    expect(byKey.status).toBe(200);
    expect(byKey.body.profile).toMatchObject({ aei_id: user.aeiId, via: 'key', caller: null });
    const byCaller = await rest('GET', '/tools', bearer(personalKey, 'vscode'));
    expect(byCaller.body.profile).toMatchObject({ aei_id: user.aeiId, via: 'map', caller: 'vscode' });
    expect(byCaller.body.tools).toEqual(byKey.body.tools);
    const query = byKey.body.tools.find((t: Json) => t.name === 'find_customers');
    expect(query.input_schema.properties.query).toBeDefined();
    const byDefault = await rest('GET', '/tools', bearer(personalKey));
    expect(byDefault.body.profile).toMatchObject({ via: 'default', caller: null });
    expect(byDefault.body.profile.aei_id).not.toBe(user.aeiId);
  });

  it('runs a batch of 10 calls concurrently, one failing, each answered in order with its ok flag', async () => {
    const calls = Array.from({ length: 10 }, (_, i) =>
      i === 6
        ? { id: `c${i}`, tool_name: 'find_customers', arguments: { query: 'length(' } }
        : { id: `c${i}`, tool_name: 'find_customers', arguments: { query: `[${i % 2}].id` } },
    );
    const { status, body } = await rest('POST', '/tool-calls', bearer(personalKey, 'vscode'), calls);
    expect(status).toBe(200);
    expect(body).toHaveLength(10);
    expect(body.map((a: Json) => a.id)).toEqual(calls.map((c) => c.id));
    expect(body.map((a: Json) => a.ok)).toEqual(calls.map((_, i) => i !== 6));
    expect(body[0]).toMatchObject({ tool_name: 'find_customers', source_used: 'native', result: 1 });
    expect(body[9]).toMatchObject({ ok: true, result: 2 });
    expect(body[6].error.code).toBe('INVALID_QUERY');
    const one = await rest('POST', '/tool-calls', bearer(user.apiKey), {
      id: 'solo',
      tool_name: 'find_customers',
      arguments: { query: 'length(@)' },
    });
    expect(one.body).toEqual([
      { id: 'solo', tool_name: 'find_customers', source_used: 'native', ok: true, result: 2 },
    ]);
  });

  it('routes bare names to upstream tools first, whatever the hint, and records the hint and the source', async () => {
    for (const source of ['appflowy', undefined, 'excel', 'nonsense']) {
      // The same profile by api_key and by caller: the caller's log lines say who called.
      const auth = source === 'nonsense' ? bearer(personalKey, 'vscode') : bearer(user.apiKey);
      const { body } = await rest('POST', '/tool-calls', auth, {
        id: 1,
        tool_name: 'read_data',
        arguments: { text: `via ${source}` },
        ...(source !== undefined && { source }),
      });
      expect(body[0]).toMatchObject({
        ok: true,
        source_used: 'mcp:excel',
        result: `read_data: via ${source}`,
      });
    }
    expect(
      logLines.some(
        (l) =>
          l.msg === 'unknown source hint ignored' &&
          l.source === 'nonsense' &&
          l.tool === 'read_data' &&
          l.caller === 'vscode',
      ),
    ).toBe(true);
    // The native tool of the same name is reached by its exact exposed name.
    const native = await rest('POST', '/tool-calls', bearer(user.apiKey), {
      id: 2,
      tool_name: 'native_read_data',
      arguments: {},
      source: 'excel',
    });
    expect(native.body[0]).toMatchObject({ ok: true, source_used: 'native' });
    expect(native.body[0].result).toHaveLength(2);
    const audit = await stack.admin('GET', `/api/v2/audit?aei_id=${user.aeiId}`, undefined, user.token);
    const hinted = audit.items.find((row: Json) => row.source_hint === 'nonsense');
    expect(hinted).toMatchObject({ tool_name: 'excel_read_data', source_used: 'mcp:excel' });
  });

  it('refuses an ambiguous bare name listing the candidates; a server hint settles it', async () => {
    const { body } = await rest('POST', '/tool-calls', bearer(twinsAei.api_key), {
      id: 1,
      tool_name: 'read_data',
      arguments: { text: 'x' },
    });
    expect(body[0]).toMatchObject({ ok: false, source_used: null, error: { code: 'CONFLICT' } });
    expect(body[0].error.details.candidates.sort()).toEqual(['excel_read_data', 'sheets_read_data']);
    expect(body[0].error.message).toContain('"excel_read_data"');
    const settled = await rest('POST', '/tool-calls', bearer(twinsAei.api_key), {
      id: 2,
      tool_name: 'read_data',
      arguments: { text: 'y' },
      source: 'sheets',
    });
    expect(settled.body[0]).toMatchObject({ ok: true, source_used: 'mcp:sheets', result: 'read_data: y' });
  });

  it('routes MCP tools/call by the same rules (hint in _meta)', async () => {
    const client = await stack.connect(`/api/v2/mcp/server/${twinsAei.api_key}`);
    try {
      const hinted = await client.callTool({
        name: 'read_data',
        arguments: { text: 'mcp' },
        _meta: { 'bindery/source': 'excel' },
      });
      expect(hinted.isError).toBeFalsy();
      expect((hinted.content as Json)[0].text).toBe('read_data: mcp');
      await expect(client.callTool({ name: 'read_data', arguments: { text: 'x' } })).rejects.toThrow(
        /matches several tools: .*"excel_read_data"/,
      );
    } finally {
      await client.close();
    }
  });

  it('answers an OpenAPI 3.1 document that validates and imports back as HTTP tools with the same names', async () => {
    const { status, body: document } = await rest('GET', '/openapi.json', bearer(user.apiKey));
    expect(status).toBe(200);
    expect(document.openapi).toBe('3.1.0');
    const { valid, errors } = await validate(document);
    expect(errors ?? []).toEqual([]);
    expect(valid).toBe(true);
    const tools = (await rest('GET', '/tools', bearer(user.apiKey))).body.tools as Json[];
    expect(Object.keys(document.paths)).toHaveLength(tools.length);
    const imported = await stack.admin('POST', '/api/v2/openapi-imports', { document }, user.token);
    expect(imported.adis.map((a: Json) => a.name).sort()).toEqual(names(tools));
    const adis = await stack.admin('GET', `/api/v2/adis/${imported.adis[0].id}`, undefined, user.token);
    expect(adis.kind).toBe('http');
  });
});
