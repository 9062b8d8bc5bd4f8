// The caller entries and the REST entry refusing what they must: a wrong, revoked or rotated
// personal key, a malformed caller name, a missing key, an exposure's api_key on the caller entry,
// malformed tool calls and a batch over the limit. Each refusal is a clear 4xx in the entry's own
// error shape (JSON-RPC on MCP, the REST error body on REST).
import { MAX_BATCH_EXECUTIONS, PERSONAL_KEY_PREFIX } from '@bindery/contracts';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { postInitialize, restCall } from './support/fixtures.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let user: Exposed;

beforeAll(async () => {
  // Two sessions per key: enough to see that a personal key's callers share the key's cap.
  stack = await startStack({ gatewayEnv: { GATEWAY_MAX_SESSIONS_PER_KEY: '2' } });
  user = await twoTableExposure(stack);
  await stack.admin('PUT', '/api/v2/callers/vscode', { aei_id: user.aeiId }, user.token);
}, 60_000);
afterAll(() => stack?.close());

const newKey = async (name = 'k') => stack.admin('POST', '/api/v2/mcp-keys', { name }, user.token);
const unknownPersonalKey = () => `${PERSONAL_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;

/** An MCP initialize on `path` with these headers: status and body. */
async function initialize(path: string, headers: Record<string, string>) {
  const res = await postInitialize(`${stack.gatewayUrl}${path}`, headers);
  const text = await res.text();
  return { status: res.status, text, json: (text.startsWith('{') ? JSON.parse(text) : undefined) as Json };
}

const rest = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  restCall(stack.gatewayUrl, method, path, headers, body);

describe('personal keys on the caller entry', () => {
  it('refuses a missing, unknown or malformed key, and an exposure’s api_key, with 401', async () => {
    const missing = await initialize('/api/v2/mcp/caller/vscode', {});
    expect(missing.status).toBe(401);
    expect(missing.json.error.message).toContain('personal MCP key');
    for (const key of [unknownPersonalKey(), 'bnd_pk_short', user.apiKey]) {
      const refused = await initialize('/api/v2/mcp/caller/vscode', { authorization: `Bearer ${key}` });
      expect(refused.status).toBe(401);
      expect(refused.json.error.message).toContain('unknown personal MCP key');
    }
  });

  it('stops serving a revoked key at once, on MCP and REST', async () => {
    const { id, key } = await newKey('revoked');
    expect((await initialize('/api/v2/mcp/caller/vscode', { authorization: `Bearer ${key}` })).status).toBe(
      200,
    );
    expect(
      (await rest('GET', '/tools', { authorization: `Bearer ${key}`, 'x-bindery-caller': 'vscode' })).status,
    ).toBe(200);
    await stack.admin('DELETE', `/api/v2/mcp-keys/${id}`, undefined, user.token);
    expect((await initialize('/api/v2/mcp/caller/vscode', { authorization: `Bearer ${key}` })).status).toBe(
      401,
    );
    const rested = await rest('GET', '/tools', {
      authorization: `Bearer ${key}`,
      'x-bindery-caller': 'vscode',
    });
    expect(rested.status).toBe(401);
    expect(rested.body.error).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('refuses the old key of a rotated one and serves the new', async () => {
    const { id, key } = await newKey('rotated');
    expect((await rest('GET', '/tools', { authorization: `Bearer ${key}` })).status).toBe(200);
    const rotated = await stack.admin('POST', `/api/v2/mcp-keys/${id}/rotate`, undefined, user.token);
    expect(rotated.key).not.toBe(key);
    expect((await rest('GET', '/tools', { authorization: `Bearer ${key}` })).status).toBe(401);
    expect((await rest('GET', '/tools', { authorization: `Bearer ${rotated.key}` })).status).toBe(200);
  });

  it('refuses a malformed caller name with 400, on MCP and REST', async () => {
    const { key } = await newKey('names');
    for (const caller of ['VSCode', '-x', 'a'.repeat(65), 'sp%20ace']) {
      const refused = await initialize(`/api/v2/mcp/caller/${caller}`, { authorization: `Bearer ${key}` });
      expect(refused.status).toBe(400);
      expect(refused.json.error.message).toContain('caller name');
    }
    const rested = await rest('GET', '/tools', {
      authorization: `Bearer ${key}`,
      'x-bindery-caller': 'Not A Name',
    });
    expect(rested.status).toBe(400);
    expect(rested.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});

describe('session caps', () => {
  it('count a personal key’s sessions together, whatever callers they name', async () => {
    const { key } = await newKey('cap');
    const ids: string[] = [];
    for (const caller of ['one', 'two', 'three']) {
      const res = await postInitialize(`${stack.gatewayUrl}/api/v2/mcp/caller/${caller}`, {
        authorization: `Bearer ${key}`,
      });
      expect(res.status).toBe(200);
      ids.push(res.headers.get('mcp-session-id')!);
      await res.text();
    }
    const sessions = stack.gateway.gateway.sessions;
    // The third closed the least recently used idle one of the same key to stay within 2.
    expect(ids.map((id) => sessions.peek(id) !== undefined)).toEqual([false, true, true]);
  });
});

describe('the REST entry', () => {
  it('refuses a request without a key, and an unknown api_key', async () => {
    const none = await rest('GET', '/tools', {});
    expect(none.status).toBe(401);
    expect(none.body.error.message).toContain('Authorization: Bearer');
    const unknown = await rest('GET', '/openapi.json', {
      authorization: 'Bearer bnd_key_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    });
    expect(unknown.status).toBe(401);
  });

  it('refuses a batch over the limit, an empty one, and malformed calls, naming what is wrong', async () => {
    const auth = { authorization: `Bearer ${user.apiKey}` };
    const call = (i: number) => ({ id: i, tool_name: 'find_customers', arguments: { query: '@' } });
    const over = await rest(
      'POST',
      '/tool-calls',
      auth,
      Array.from({ length: MAX_BATCH_EXECUTIONS + 1 }, (_, i) => call(i)),
    );
    expect(over.status).toBe(400);
    expect(over.body.error.message).toContain(`1 to ${MAX_BATCH_EXECUTIONS} calls`);
    expect((await rest('POST', '/tool-calls', auth, [])).status).toBe(400);
    const cases: [unknown, string][] = [
      [{ id: 1, arguments: {} }, '"tool_name"'],
      [{ tool_name: 'find_customers', arguments: [] }, '"arguments" must be an object'],
      [[call(1), { ...call(2), extra: true }], 'call 1 has an unknown member "extra"'],
      [[call(1), call(1)], 'its own "id"'],
      [{ tool_name: 'find_customers', source: 'x'.repeat(200) }, '"source"'],
      ['text', 'must be an object'],
    ];
    for (const [body, message] of cases) {
      const refused = await rest('POST', '/tool-calls', auth, body);
      expect(refused.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(refused.body.error.message).toContain(message);
    }
  });

  it('answers an unknown tool as a failed item (with close matches), and 404 on its operation path', async () => {
    const auth = { authorization: `Bearer ${user.apiKey}` };
    const { status, body } = await rest('POST', '/tool-calls', auth, {
      id: 'x',
      tool_name: 'find_customer',
      arguments: {},
    });
    expect(status).toBe(200);
    expect(body[0]).toMatchObject({ ok: false, source_used: null, error: { code: 'NOT_FOUND' } });
    expect(body[0].error.details.close_matches).toContain('find_customers');
    const missing = await rest('POST', '/tools/nope', auth, {});
    expect(missing.status).toBe(404);
    const wrongArgs = await rest('POST', '/tools/find_customers', auth, { query: 5 });
    expect(wrongArgs.status).toBe(200);
    expect(wrongArgs.body).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED' } });
  });
});
