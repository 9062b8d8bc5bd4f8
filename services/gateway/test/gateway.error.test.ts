// Pins the gateway's answers to bad requests, each a clear JSON-RPC error with the right HTTP
// status: wrong key, missing key, wrong Origin or Host, oversized body, malformed JSON, a rate
// limit hit (429 with Retry-After); the ops route refuses callers without the ops token; api keys
// never reach the logs.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactApiKeyInUrl } from '@bindery/contracts';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { rawPost } from './support/raw-post.ts';
import { INTERNAL_TOKEN, OPS_TOKEN, startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: { GATEWAY_BODY_LIMIT_BYTES: '4096', RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1000' },
  });
  exposed = await twoTableExposure(stack);
});
afterAll(() => stack.close());

const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.gatewayUrl}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** A tools/list POST through node:http, with Host and Origin as given. */
const rawList = (path: string, headers: Record<string, string>) =>
  rawPost(stack.gatewayUrl, path, LIST, { headers });

function expectJsonRpcError(
  res: { status: number; body: Json },
  status: number,
  code: number,
  bindery: string,
) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code, data: { code: bindery } } });
  expect(res.body.error.message.length).toBeGreaterThan(5);
}

describe('refused requests', () => {
  it('wrong key: 401', async () => {
    expectJsonRpcError(await post('/api/v2/mcp/server/bnd_key_wrong', LIST), 401, -32001, 'UNAUTHORIZED');
  });

  it('no key on the header entry: 401 saying how to send one', async () => {
    const res = await post('/api/v2/mcp/server', LIST);
    expectJsonRpcError(res, 401, -32001, 'UNAUTHORIZED');
    expect(res.body.error.message).toContain('Authorization: Bearer');
  });

  it('a foreign browser Origin: 403; a local one passes', async () => {
    const path = `/api/v2/mcp/server/${exposed.apiKey}`;
    const evil = await rawList(path, { origin: 'http://evil.example' });
    expectJsonRpcError({ status: evil.status, body: JSON.parse(evil.text) }, 403, -32003, 'FORBIDDEN');
    expect(evil.text).toContain('evil.example');
    const local = await rawList(path, { origin: 'http://localhost:6274' });
    expect(local.status).toBe(200);
    expect(local.text).toContain('find_customers');
  });

  it('a rebinding Host header: 403', async () => {
    // As a browser fooled by DNS rebinding would send it: the attacker's name with our address.
    const res = await rawList(`/api/v2/mcp/server/${exposed.apiKey}`, { host: 'attacker.example:4100' });
    expect(res.status).toBe(403);
    expect(res.text).toContain('attacker.example');
  });

  it('oversized body: 413', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'x', arguments: { q: 'x'.repeat(10_000) } },
    });
    expectJsonRpcError(
      await post(`/api/v2/mcp/server/${exposed.apiKey}`, big),
      413,
      -32600,
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('malformed JSON: -32700 parse error', async () => {
    expectJsonRpcError(
      await post(`/api/v2/mcp/server/${exposed.apiKey}`, '{"jsonrpc": "2.0", "id": 1,'),
      400,
      -32700,
      'VALIDATION_FAILED',
    );
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After once a key spends its burst', async () => {
    const config = loadGatewayConfig({
      INTERNAL_TOKEN,
      CONTROL_PLANE_URL: stack.controlPlaneUrl,
      RATE_LIMIT_PER_SECOND: '1',
      RATE_LIMIT_BURST: '3',
    });
    const gateway = await buildGateway(config, false);
    const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
    try {
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${url}/api/v2/mcp/server/${exposed.apiKey}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: LIST,
        });
        statuses.push(res.status);
        if (res.status === 429) retryAfter = res.headers.get('retry-after');
        await res.text();
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    } finally {
      await gateway.close();
    }
  });
});

describe('ops route', () => {
  it('refuses /cache/invalidate without the ops token and accepts it with', async () => {
    const none = await fetch(`${stack.gatewayUrl}/cache/invalidate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ all: true }),
    });
    expect(none.status).toBe(401);
    const apiKeyAsToken = await fetch(`${stack.gatewayUrl}/cache/invalidate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${exposed.apiKey}` },
      body: JSON.stringify({ all: true }),
    });
    expect(apiKeyAsToken.status).toBe(401);
    const ok = await fetch(`${stack.gatewayUrl}/cache/invalidate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPS_TOKEN}` },
      body: JSON.stringify({ aei_ids: [exposed.aeiId] }),
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ aei_ids: [exposed.aeiId] });
    const empty = await fetch(`${stack.gatewayUrl}/cache/invalidate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPS_TOKEN}` },
      body: JSON.stringify({}),
    });
    expect(empty.status).toBe(400);
  });
});

describe('logs', () => {
  it('never contain an api_key, only its display prefix', async () => {
    let logs = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    });
    const gateway = await buildGateway(
      loadGatewayConfig({ INTERNAL_TOKEN, CONTROL_PLANE_URL: stack.controlPlaneUrl }),
      sink,
    );
    const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
    try {
      await fetch(`${url}/api/v2/mcp/server/${exposed.apiKey}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: LIST,
      }).then((r) => r.text());
      await fetch(`${url}/api/v2/mcp/server/${exposed.apiKey}?x=1`, {
        method: 'POST',
        body: '{oops',
        headers: { 'content-type': 'application/json' },
      }).then((r) => r.text());
    } finally {
      await gateway.close();
    }
    expect(logs).toContain('/api/v2/mcp/server/');
    expect(logs).toContain(exposed.apiKey.slice(0, 12));
    expect(logs).not.toContain(exposed.apiKey);
    expect(redactApiKeyInUrl(`/api/v1/mcp/server/${exposed.apiKey}?a=b`)).toBe(
      `/api/v1/mcp/server/${exposed.apiKey.slice(0, 12)}…?a=b`,
    );
  });
});
