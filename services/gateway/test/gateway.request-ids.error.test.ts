// Pins JSON-RPC ids within one session (raw HTTP on a held session, calls held up by freezing the
// control plane): on the SDK-transport path a second request whose id is in flight is refused at
// once on its own response (409, -32600), the first gets its own answer, and the id is free again
// afterwards; an id stays taken while its call still runs after the client hung up (else the late
// answer would reach the next request with that id); 7 and "7" are different ids; and on the
// direct-answer path two same-id requests each get their own answer.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed } from '@bindery/test-support';
import { rawPost, type RawAnswer } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

let stack: Stack;
let exposed: Exposed;
let path: string;

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { TOOL_CALL_TIMEOUT_MS: '20000' } });
  exposed = await twoTableExposure(stack);
  path = `/api/v2/mcp/server/${exposed.apiKey}`;
});
afterAll(async () => {
  stack?.thawControlPlane();
  await stack?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An initialized session; with `logs`, the client asked for log messages at info. */
async function openSession(logs: boolean): Promise<Record<string, string>> {
  const init = await rawPost(
    stack.gatewayUrl,
    path,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ids', version: '1' } },
    }),
  );
  expect(init.status).toBe(200);
  const headers = {
    'mcp-session-id': String(init.headers['mcp-session-id']),
    'mcp-protocol-version': '2025-06-18',
  };
  const post = (body: unknown) => rawPost(stack.gatewayUrl, path, JSON.stringify(body), { headers });
  expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  if (logs) {
    const set = await post({
      jsonrpc: '2.0',
      id: 'level',
      method: 'logging/setLevel',
      params: { level: 'info' },
    });
    expect(set.status).toBe(200);
  }
  return headers;
}

const call = (id: number | string, query: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'find_customers', arguments: { query } },
  });

/** A call with a progress token: its progress needs the request's stream, so it takes the SDK path. */
const sdkCall = (id: number | string, query: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'find_customers', arguments: { query }, _meta: { progressToken: `p-${String(id)}` } },
  });

/** The JSON-RPC answers in a response, JSON or SSE. */
function messages(
  answer: RawAnswer,
): { id?: unknown; result?: { content: { text: string }[] }; error?: unknown }[] {
  if (String(answer.headers['content-type']).startsWith('application/json')) return [JSON.parse(answer.text)];
  return answer.text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)))
    .filter((m) => 'id' in m);
}

function answerTo(answer: RawAnswer, id: number | string): unknown {
  const found = messages(answer).filter((m) => m.id === id);
  expect(found).toHaveLength(1);
  return JSON.parse(found[0]!.result!.content[0]!.text);
}

/** A POST whose connection the test can cut before the answer comes. */
function cuttable(headers: Record<string, string>, body: string) {
  const { port } = new URL(stack.gatewayUrl);
  const req = request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': String(Buffer.byteLength(body)),
      ...headers,
    },
  });
  req.on('error', () => undefined);
  req.end(body);
  return { cut: () => req.destroy() };
}

describe('same id on the SDK path', () => {
  it('refuses the second request at once; the first gets its own answer; the id is free afterwards', async () => {
    const headers = await openSession(true);
    stack.freezeControlPlane();
    let first: Promise<RawAnswer> | undefined;
    try {
      let firstDone = false;
      first = rawPost(stack.gatewayUrl, path, sdkCall(7, 'length(@)'), { headers });
      void first.then(() => (firstDone = true));
      await sleep(200);
      const second = await rawPost(stack.gatewayUrl, path, sdkCall(7, '[0].name'), { headers });
      expect(firstDone).toBe(false);
      expect(second.status).toBe(409);
      expect(JSON.parse(second.text)).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: 'request id 7 is already in use in this session; wait for its answer or use another id',
          data: { code: 'CONFLICT' },
        },
      });
      // Another id, and the string "7", are not 7.
      const other = rawPost(stack.gatewayUrl, path, sdkCall('7', '[1].name'), { headers });
      await sleep(100);
      stack.thawControlPlane();
      expect(answerTo(await first, 7)).toBe(2);
      expect(answerTo(await other, '7')).toBe('Grace');
    } finally {
      stack.thawControlPlane();
    }
    const again = await rawPost(stack.gatewayUrl, path, sdkCall(7, '[0].name'), { headers });
    expect(again.status).toBe(200);
    expect(answerTo(again, 7)).toBe('Ada');
  });

  it('keeps an id taken while its call still runs after the client hung up', async () => {
    const headers = await openSession(true);
    stack.freezeControlPlane();
    try {
      const hungUp = cuttable(headers, sdkCall(9, 'length(@)'));
      await sleep(200);
      hungUp.cut();
      await sleep(200);
      const reused = await rawPost(stack.gatewayUrl, path, sdkCall(9, '[0].name'), { headers });
      expect(reused.status).toBe(409);
    } finally {
      stack.thawControlPlane();
    }
    // Once the first call's answer is out (to nobody), id 9 is free and answers for itself.
    let answer: RawAnswer | undefined;
    for (let i = 0; i < 100; i++) {
      answer = await rawPost(stack.gatewayUrl, path, sdkCall(9, '[0].name'), { headers });
      if (answer.status !== 409) break;
      await sleep(50);
    }
    expect(answer!.status).toBe(200);
    expect(answerTo(answer!, 9)).toBe('Ada');
  });
});

describe('same id on the direct-answer path', () => {
  it('answers both requests, each with its own result', async () => {
    const headers = await openSession(false);
    stack.freezeControlPlane();
    try {
      const a = rawPost(stack.gatewayUrl, path, call(5, 'length(@)'), { headers });
      const b = rawPost(stack.gatewayUrl, path, call(5, '[0].name'), { headers });
      await sleep(200);
      stack.thawControlPlane();
      const [first, second] = await Promise.all([a, b]);
      expect(first.headers['content-type']).toMatch(/^application\/json/);
      expect(answerTo(first, 5)).toBe(2);
      expect(answerTo(second, 5)).toBe('Ada');
    } finally {
      stack.thawControlPlane();
    }
  });
});
