// The fast lane (requests on a held session, and modern requests, served before Fastify) must be
// invisible to clients:
// the same answers as the framework path, every refusal still produced, nothing taken that it
// cannot serve. The `lane` label of gateway_requests_total tells which path served a request.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../src/app.ts';
import { loadGatewayConfig } from '../src/config.ts';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { servedByLane } from './support/mcp-raw.ts';
import { rawPost, type RawPostOptions } from './support/raw-post.ts';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let sessionId: string;

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1000' } });
  exposed = await twoTableExposure(stack);
  const client = await stack.connect(`/api/v2/mcp/server/${exposed.apiKey}`);
  sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
});
afterAll(() => stack.close());

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
}

/** A POST on the held session through node:http; JSON answers parsed, others left as text. */
async function post(path: string, body: string, options: RawPostOptions = {}): Promise<Answer> {
  const res = await rawPost(stack.gatewayUrl, path, body, {
    ...options,
    headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18', ...options.headers },
  });
  const json = res.headers['content-type']?.includes('application/json') && res.text;
  return { status: res.status, headers: res.headers, body: json ? JSON.parse(res.text) : res.text };
}

/**
 * A gateway of its own (burst of 6, 1 per second) with an SDK client's session on it; `send` posts
 * a body on that session.
 */
async function withRateLimitedGateway(
  work: (gateway: { url: string; send(body: string): Promise<Response> }) => Promise<void>,
): Promise<void> {
  const config = loadGatewayConfig({
    CONTROL_PLANE_URL: stack.controlPlaneUrl,
    INTERNAL_TOKEN,
    RATE_LIMIT_PER_SECOND: '1',
    RATE_LIMIT_BURST: '6',
    LOG_REQUESTS: 'false',
  });
  const gateway = await buildGateway(config, false);
  const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  const client = new Client({ name: 'lane-test', version: '1.0.0' });
  try {
    const endpoint = `${url}/api/v2/mcp/server/${exposed.apiKey}`;
    const transport = new StreamableHTTPClientTransport(new URL(endpoint));
    await client.connect(transport);
    const send = (body: string) =>
      fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId!,
        },
        body,
      });
    await work({ url, send });
  } finally {
    await client.close().catch(() => undefined);
    await gateway.close();
  }
}

const keyPath = () => `/api/v2/mcp/server/${exposed.apiKey}`;
const call = (id: number, name: string, args: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** Runs `work` and answers how many requests each lane served meanwhile. */
async function lanes(work: () => Promise<unknown>): Promise<{ fast: number; framework: number }> {
  const before = await servedByLane(stack.gatewayUrl);
  await work();
  const after = await servedByLane(stack.gatewayUrl);
  // The first /metrics read is itself one framework request.
  return { fast: after.fast - before.fast, framework: after.framework - before.framework - 1 };
}

describe('fast lane', () => {
  it('serves tools/call and tools/list on a held session, on both v2 URLs, as the framework would', async () => {
    let answers: Answer[] = [];
    const counted = await lanes(async () => {
      answers = [
        await post(keyPath(), call(1, 'find_customers', { query: '[0].name' })),
        await post('/api/v2/mcp/server', call(2, 'peek_orders', {}), {
          headers: { authorization: `Bearer ${exposed.apiKey}` },
        }),
        await post(keyPath(), JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' })),
      ];
    });
    expect(counted).toEqual({ fast: 3, framework: 0 });
    const [query, preview, list] = answers as [Answer, Answer, Answer];
    expect(query.status).toBe(200);
    expect(query.headers['mcp-session-id']).toBe(sessionId);
    expect(query.body).toMatchObject({ jsonrpc: '2.0', id: 1 });
    expect(JSON.parse(query.body.result.content[0].text)).toBe('Ada');
    expect(preview.body.id).toBe(2);
    expect(preview.body.result.isError).toBeUndefined();
    expect(list.body.result.tools.map((t: { name: string }) => t.name).sort()).toEqual([
      'find_customers',
      'peek_orders',
    ]);
  });

  it('serves a modern request (no session) on the api_key route as the framework would, not listen', async () => {
    const modern = (id: number, method: string, params: Record<string, unknown>, name?: string) =>
      rawPost(
        stack.gatewayUrl,
        keyPath(),
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method,
          params: {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
        {
          headers: {
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': method,
            ...(name !== undefined && { 'mcp-name': name }),
          },
        },
      );
    let answers: Awaited<ReturnType<typeof modern>>[] = [];
    const counted = await lanes(async () => {
      answers = [
        await modern(
          11,
          'tools/call',
          { name: 'find_customers', arguments: { query: '[0].name' } },
          'find_customers',
        ),
        await modern(12, 'tools/list', {}),
        // A header that disagrees with the body is refused alike (-32020).
        await modern(13, 'tools/call', { name: 'find_customers', arguments: {} }, 'peek_orders'),
      ];
    });
    expect(counted).toEqual({ fast: 3, framework: 0 });
    const [called, listed, mismatch] = answers.map((a) => JSON.parse(a.text)) as Json[];
    expect(answers[0]!.headers['mcp-session-id']).toBeUndefined();
    expect(called).toMatchObject({ id: 11, result: { resultType: 'complete' } });
    expect(JSON.parse(called!.result.content[0].text)).toBe('Ada');
    expect(listed!.result.tools).toHaveLength(2);
    expect(answers[2]!.status).toBe(400);
    expect(mismatch!.error.code).toBe(-32020);

    // An initialize under the modern header opens a legacy session: the framework's path.
    let opened: Awaited<ReturnType<typeof modern>> | undefined;
    const initCounted = await lanes(async () => {
      opened = await rawPost(
        stack.gatewayUrl,
        keyPath(),
        JSON.stringify({
          jsonrpc: '2.0',
          id: 14,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'lane-test', version: '1.0.0' },
          },
        }),
        { headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'initialize' } },
      );
    });
    expect(initCounted).toEqual({ fast: 0, framework: 1 });
    expect(opened!.status).toBe(200);
    expect(opened!.headers['mcp-session-id']).toEqual(expect.any(String));
  });

  it('answers a ping of a held session, and hands notifications to the SDK transport', async () => {
    let ping: Answer | undefined;
    let note: Answer | undefined;
    const counted = await lanes(async () => {
      ping = await post(keyPath(), JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }));
      note = await post(keyPath(), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    });
    expect(counted).toEqual({ fast: 2, framework: 0 });
    const pong = typeof ping!.body === 'string' ? ping!.body : JSON.stringify(ping!.body);
    expect(ping!.status).toBe(200);
    expect(pong).toContain('"id":9');
    expect(pong).toContain('"result":{}');
    expect(note!.status).toBe(202);
  });

  it('answers malformed JSON and prototype poisoning with -32700, like the framework', async () => {
    for (const body of [
      '{"jsonrpc": "2.0", "id": 1,',
      '{"jsonrpc":"2.0","id":1,"method":"ping","__proto__":{"x":1}}',
    ]) {
      for (const chunked of [false, true]) {
        const res = await post(keyPath(), body, { chunked });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32700, data: { code: 'VALIDATION_FAILED' } },
        });
      }
    }
  });

  it('leaves to the framework what it does not serve, with the same answers', async () => {
    let chunked: Answer | undefined;
    let foreign: Answer | undefined;
    let otherKey: Answer | undefined;
    const counted = await lanes(async () => {
      // No content-length.
      chunked = await post(keyPath(), call(4, 'find_customers', { query: '[1].name' }), { chunked: true });
      // A browser Origin that is not allowed.
      foreign = await post(keyPath(), call(5, 'find_customers', { query: '@' }), {
        headers: { origin: 'http://evil.example' },
      });
      // The session belongs to another key: not this session, so no lane; the framework refuses the
      // unknown key.
      otherKey = await post('/api/v2/mcp/server/bnd_key_not-a-real-key-000000000000', call(6, 'x', {}));
    });
    expect(counted).toEqual({ fast: 0, framework: 3 });
    expect(JSON.parse(chunked!.body.result.content[0].text)).toBe('Grace');
    expect(foreign!.status).toBe(403);
    expect(foreign!.body.error.data.code).toBe('FORBIDDEN');
    expect(otherKey!.status).toBe(401);
  });

  it('leaves a spent rate limit to the framework, which answers 429 with Retry-After', async () => {
    await withRateLimitedGateway(async ({ url, send }) => {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 10 && last?.status !== 429; i++) {
        last = await send(call(i, 'find_customers', { query: '@' }));
        statuses.push(last.status);
        await last.text();
      }
      expect(statuses[0]).toBe(200);
      expect(statuses.at(-1)).toBe(429);
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toMatch(/gateway_requests_total\{[^}]*status="200",lane="fast"\} [1-9]/);
      expect(metrics).toMatch(/gateway_requests_total\{[^}]*status="429",lane="framework"\} 1/);
    });
  });

  it('checks again once the body is in: an exposure disabled meanwhile is refused', async () => {
    const other = await twoTableExposure(stack);
    const client = await stack.connect(`/api/v2/mcp/server/${other.apiKey}`);
    const headers = { 'mcp-session-id': (client.transport as StreamableHTTPClientTransport).sessionId! };
    const path = `/api/v2/mcp/server/${other.apiKey}`;
    expect((await post(path, call(1, 'find_customers', { query: '@' }), { headers })).status).toBe(200);
    let late: Answer | undefined;
    const counted = await lanes(async () => {
      late = await post(path, call(2, 'find_customers', { query: '[0].name' }), {
        headers,
        // Headers now, body once the gateway has heard that the exposure is disabled.
        beforeBody: async () => {
          await stack.admin('PATCH', `/api/v2/aeis/${other.aeiId}`, { status: 'disabled' }, other.token);
          for (let i = 0; i < 50; i++) {
            const probe = await post(path, call(3, 'find_customers', { query: '@' }), {
              headers,
              chunked: true,
            });
            if (probe.status === 403) return;
            await new Promise((r) => setTimeout(r, 50));
          }
          throw new Error('the gateway never refused the disabled exposure');
        },
      });
    });
    expect(late!.status).toBe(403);
    expect(late!.body.error).toMatchObject({ code: -32003, data: { code: 'FORBIDDEN' } });
    // The late request was taken by the lane when its headers came, and refused there.
    expect(counted.fast).toBe(1);
  });

  it('spends no rate-limit token on a body that is not JSON, as the framework does not', async () => {
    await withRateLimitedGateway(async ({ send }) => {
      const malformed: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await send('{"jsonrpc": "2.0",');
        malformed.push(res.status);
        await res.text();
      }
      expect(new Set(malformed)).toEqual(new Set([400]));
      // Twenty refusals later the burst of six is still there.
      const valid = await send(call(1, 'find_customers', { query: '[0].name' }));
      expect(valid.status).toBe(200);
      expect(await valid.text()).toContain('Ada');
    });
  });

  it('leaves a disabled exposure to the framework, which refuses it', async () => {
    const other = await twoTableExposure(stack);
    const client = await stack.connect(`/api/v2/mcp/server/${other.apiKey}`);
    const otherSession = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const path = `/api/v2/mcp/server/${other.apiKey}`;
    const headers = { 'mcp-session-id': otherSession };
    expect((await post(path, call(1, 'find_customers', { query: '@' }), { headers })).status).toBe(200);
    await stack.admin('PATCH', `/api/v2/aeis/${other.aeiId}`, { status: 'disabled' }, other.token);
    let refused: Answer | undefined;
    for (let i = 0; i < 50; i++) {
      refused = await post(path, call(2, 'find_customers', { query: '@' }), { headers });
      if (refused.status === 403) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(refused!.status).toBe(403);
    expect(refused!.body.error.message).toContain('disabled');
  });
});
