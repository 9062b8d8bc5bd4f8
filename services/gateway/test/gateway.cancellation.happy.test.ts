// Cancellation reaches what a tool is doing (SDK Client -> gateway -> control plane process -> an
// API on 127.0.0.1, allowed by HTTP_TOOLS_ALLOWED_NETWORKS): a client cancelling a call of an HTTP
// tool, or of a custom tool awaiting ctx.fetch, makes the API see its request closed within a
// moment, not at the tool's time limit (20 s here), and the audit trail records the call as
// failed: UPSTREAM_FAILED, or OUTCOME_UNKNOWN once a request that may write had gone out. The
// custom tool's next call still answers. Calls that arrive together share one exchange with the
// control plane (POST /internal/execute-batch), and one cancelled there is still cut on its own:
// its API request closes while the others of its exchange keep running.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const TOOL_LIMIT_MS = 20_000;
let stack: Stack;
let token: string;
let apiKey: string;
let api: { server: Server; port: number };
/** Requests to /slow by their `tag` query: when each arrived and when its connection closed. */
const slow = new Map<string, { arrived: number; closed?: number }>();

/** `/slow?tag=`: never answers (the caller must give up); `/fast`: answers at once. */
async function startApi(): Promise<typeof api> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://api');
    if (url.pathname === '/fast') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"fast":true}');
    }
    const tag = url.searchParams.get('tag') ?? '';
    const seen: { arrived: number; closed?: number } = { arrived: Date.now() };
    slow.set(tag, seen);
    res.on('close', () => (seen.closed = Date.now()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

async function until<T>(what: string, probe: () => T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  api = await startApi();
  stack = await startStack({
    controlPlaneEnv: {
      HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.1/32',
      CUSTOM_TOOL_TIMEOUT_MS: String(TOOL_LIMIT_MS),
    },
  });
  token = (await stack.admin('POST', '/api/v2/users', { name: 'cancel' })).token;
  const as = (method: string, path: string, body?: unknown) => stack.admin(method, path, body, token);
  const base = `http://127.0.0.1:${api.port}`;
  // An HTTP tool calling /slow, and a custom tool fetching a URL it is given, by `method`.
  const slowHttp = (name: string, method: string) => ({
    kind: 'http',
    name,
    method,
    url: `${base}/slow`,
    params: [{ name: 'tag', in: 'query' }],
    timeout_ms: TOOL_LIMIT_MS,
  });
  const fetching = (name: string, init: string) => ({
    kind: 'custom',
    name,
    code:
      'export default async function (args, ctx) {\n' +
      `  const answer = await ctx.fetch(args.url${init});\n` +
      '  return { status: answer.status };\n' +
      '}\n',
    input_schema: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } },
    allowed_hosts: [`127.0.0.1:${api.port}`],
  });
  const adis: Json[] = [];
  for (const body of [
    slowHttp('slow_get', 'GET'),
    slowHttp('slow_post', 'POST'),
    fetching('fetch_slow', ''),
    fetching('post_slow', ", { method: 'POST', body: 'x' }"),
  ]) {
    adis.push(await as('POST', '/api/v2/adis', body));
  }
  const aei = await as('POST', '/api/v2/aeis', { name: 'cancellation' });
  await as(
    'POST',
    `/api/v2/aeis/${aei.id}/bindings`,
    adis.map((adi) => ({ adi_id: adi.id })),
  );
  apiKey = aei.api_key;
}, 90_000);
afterAll(async () => {
  await stack?.close();
  await new Promise((resolve) => api?.server.close(resolve));
});

/** Starts a call, waits until the API has its request, cancels it; answers how long the API waited. */
async function cancelAfterArrival(tool: string, args: Record<string, unknown>, tag: string) {
  const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
  try {
    const abort = new AbortController();
    const call = client.callTool({ name: tool, arguments: args }, undefined, { signal: abort.signal });
    call.catch(() => undefined);
    const seen = await until(`the API to receive ${tag}`, () => slow.get(tag));
    abort.abort('changed my mind');
    await expect(call).rejects.toThrow();
    const closed = await until(`the API's request ${tag} to close`, () => seen.closed);
    return closed - seen.arrived;
  } finally {
    await client.close();
  }
}

/** The audit row of the one call of `tool`, once written. */
async function auditRow(tool: string): Promise<Json> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await stack.admin('GET', '/api/v2/audit?status=error', undefined, token);
    const row = page.items.find((item: Json) => item.tool_name === tool);
    if (row) return row;
    if (Date.now() > deadline) throw new Error(`no audit row for ${tool}: ${JSON.stringify(page.items)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a cancelled call stops what its tool is doing', () => {
  it('an HTTP tool: the API sees its request closed at once, the call is audited as cancelled', async () => {
    const waited = await cancelAfterArrival('slow_get', { tag: 'get-1' }, 'get-1');
    // Far below the tool's 20 s limit: the cancellation, not the deadline, closed it.
    expect(waited).toBeLessThan(TOOL_LIMIT_MS / 4);
    expect(await auditRow('slow_get')).toMatchObject({ status: 'error', error_code: 'UPSTREAM_FAILED' });
  });

  it('an HTTP tool that may write: closed at once, audited as OUTCOME_UNKNOWN (the API may have acted)', async () => {
    const waited = await cancelAfterArrival('slow_post', { tag: 'post-1' }, 'post-1');
    expect(waited).toBeLessThan(TOOL_LIMIT_MS / 4);
    expect(await auditRow('slow_post')).toMatchObject({ status: 'error', error_code: 'OUTCOME_UNKNOWN' });
  });

  it("a custom tool awaiting ctx.fetch: the fetch is cut, the tool's code ends; the next call answers", async () => {
    const url = `http://127.0.0.1:${api.port}/slow?tag=custom-1`;
    const waited = await cancelAfterArrival('fetch_slow', { url }, 'custom-1');
    expect(waited).toBeLessThan(TOOL_LIMIT_MS / 4);
    // The code got the cut fetch as an error and ended: the call is audited long before its limit.
    expect(await auditRow('fetch_slow')).toMatchObject({ status: 'error', error_code: 'UPSTREAM_FAILED' });
    const client = await stack.connect(`/api/v2/mcp/server/${apiKey}`);
    try {
      const next = await client.callTool({
        name: 'fetch_slow',
        arguments: { url: `http://127.0.0.1:${api.port}/fast` },
      });
      expect(next.isError).toBeFalsy();
      expect(resultJson(next)).toEqual({ status: 200 });
    } finally {
      await client.close();
    }
  });

  it('a custom tool cut while its POST was out: OUTCOME_UNKNOWN, since the API may have acted', async () => {
    const url = `http://127.0.0.1:${api.port}/slow?tag=custom-2`;
    const waited = await cancelAfterArrival('post_slow', { url }, 'custom-2');
    expect(waited).toBeLessThan(TOOL_LIMIT_MS / 4);
    expect(await auditRow('post_slow')).toMatchObject({ status: 'error', error_code: 'OUTCOME_UNKNOWN' });
  });

  it('calls sharing one exchange: each one cancelled is cut on its own, the others keep running', async () => {
    const batchCalls = async () => {
      const text = await (await fetch(`${stack.gatewayUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith('gateway_execute_batch_calls_sum '));
      return Number(line?.split(' ')[1] ?? 0);
    };
    const clients = await Promise.all(
      Array.from({ length: 8 }, () => stack.connect(`/api/v2/mcp/server/${apiKey}`)),
    );
    try {
      // Sent together until some of them shared an exchange (the gateway batches what it reads in
      // one turn; calls on separate connections usually are).
      let round = 0;
      let calls: { abort: AbortController; call: Promise<unknown>; tag: string }[] = [];
      for (; round < 5; round += 1) {
        const before = await batchCalls();
        calls = clients.map((client, n) => {
          const abort = new AbortController();
          const tag = `batch-${round}-${n}`;
          const call = client.callTool({ name: 'slow_get', arguments: { tag } }, undefined, {
            signal: abort.signal,
          });
          call.catch(() => undefined);
          return { abort, call, tag };
        });
        for (const { tag } of calls) await until(`the API to receive ${tag}`, () => slow.get(tag));
        if ((await batchCalls()) - before >= 2) break;
        for (const { abort } of calls) abort.abort('not batched; again');
      }
      expect(round, 'no two calls ever shared an exchange').toBeLessThan(5);
      // All but the last, one by one: each closes at once, the ones left stay open.
      for (let n = 0; n < calls.length - 1; n += 1) {
        const { abort, call, tag } = calls[n]!;
        abort.abort('changed my mind');
        await expect(call).rejects.toThrow();
        await until(`the API's request ${tag} to close`, () => slow.get(tag)!.closed, TOOL_LIMIT_MS / 4);
        for (const left of calls.slice(n + 1)) expect(slow.get(left.tag)!.closed, left.tag).toBeUndefined();
      }
      calls.at(-1)!.abort.abort('done');
      await until('the last request to close', () => slow.get(calls.at(-1)!.tag)!.closed, TOOL_LIMIT_MS / 4);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });
});
