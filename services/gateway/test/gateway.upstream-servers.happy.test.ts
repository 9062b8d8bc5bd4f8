// Upstream MCP servers end to end: SDK Clients -> gateway -> control plane process -> its stdio
// children (real MCP servers written with the SDK). Two servers attached to one exposure under
// prefixes; a hanging one that never stalls tools/list; 200 concurrent calls over the two, each
// answer checked against its own unique argument; a cancelled call cancelled upstream too (the
// upstream says so on its stderr, read through the logs API); its progress reports reaching a client
// that asked for them; the upstream changing its tools reaching a
// connected client as tools/list_changed with no admin action; processes counted from the OS.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultJson, type Json } from '@bindery/test-support';
import { startStack, type Stack } from './support/stack.ts';

const SCRIPT = fileURLToPath(
  new URL('../../control-plane/test/support/upstream/mcp-server.mjs', import.meta.url),
);
let stack: Stack;
let apiKey: string;
let servers: Record<'alpha' | 'beta' | 'hang', Json>;

/** Living children of `parent` running the test upstream script, from /proc. */
function upstreamChildren(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (
          Number(fields[1]) === parent &&
          fields[0] !== 'Z' &&
          readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('mcp-server.mjs')
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

const server = (name: string, marker: string, limits: Record<string, number> = {}) => ({
  name,
  transport: 'stdio',
  command: 'node',
  args: [SCRIPT],
  env: { UPSTREAM_TEST_MARKER: marker },
  limits: { concurrent_calls: 64, ...limits },
});

beforeAll(async () => {
  stack = await startStack({
    controlPlaneEnv: { UPSTREAM_STDIO_COMMANDS: 'node' },
    // 200 calls at once from one api_key: above the default per-key rate.
    gatewayEnv: { RATE_LIMIT_BURST: '100000', RATE_LIMIT_PER_SECOND: '1000' },
  });
  servers = {
    alpha: await stack.admin('POST', '/api/v2/upstream-servers', server('Alpha', 'a')),
    beta: await stack.admin('POST', '/api/v2/upstream-servers', server('Beta', 'b')),
    hang: await stack.admin(
      'POST',
      '/api/v2/upstream-servers',
      server('Hang', 'h', { call_timeout_ms: 1500 }),
    ),
  };
  const aei = await stack.admin('POST', '/api/v2/aeis', { name: 'upstreams' });
  apiKey = aei.api_key;
  for (const [prefix, s] of [
    ['a', servers.alpha],
    ['b', servers.beta],
    ['h', servers.hang],
  ] as const) {
    await stack.admin('POST', `/api/v2/aeis/${aei.id}/bindings`, { upstream_server_id: s.id, prefix });
  }
}, 90_000);
afterAll(() => stack?.close());

const connect = () => stack.connect(`/api/v2/mcp/server/${apiKey}`);

describe('upstream tools through the gateway', () => {
  it('are listed under their prefixes and called; a hanging upstream never stalls tools/list', async () => {
    expect(servers.alpha.status).toBe('ok');
    const client = await connect();
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['a_echo', 'a_add', 'b_echo', 'h_hang']));
    const add = await client.callTool({ name: 'a_add', arguments: { a: 20, b: 22 } });
    expect(add.structuredContent).toEqual({ sum: 42 });

    let hangSettled = false;
    const hanging = client.callTool({ name: 'h_hang', arguments: {} }).finally(() => (hangSettled = true));
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    const listed = await client.listTools();
    const listMs = performance.now() - started;
    expect(listed.tools.length).toBe(names.length);
    // Answered from the gateway's cached config while the upstream call is still hanging.
    expect(hangSettled).toBe(false);
    expect(listMs).toBeLessThan(1_000);
    const timedOut = await hanging;
    expect(timedOut.isError).toBe(true);
    expect(resultJson(timedOut).error.code).toBe('TIMEOUT');
  });

  it('a call the client cancels is cancelled on the upstream too', async () => {
    const client = await connect();
    const abort = new AbortController();
    const call = client.callTool({ name: 'h_hang', arguments: {} }, undefined, { signal: abort.signal });
    await new Promise((r) => setTimeout(r, 300));
    abort.abort('changed my mind');
    await expect(call).rejects.toThrow();
    const deadline = Date.now() + 10_000;
    let lines: string[] = [];
    while (Date.now() < deadline) {
      const logs = await stack.admin('GET', `/api/v2/upstream-servers/${servers.hang.id}/logs`);
      lines = logs.lines.map((l: { text: string }) => l.text);
      if (lines.some((l) => l === 'hang cancelled: the caller closed its request')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // The gateway closed its request, the control plane sent notifications/cancelled upstream.
    // (A timed-out call is cancelled too, with another reason: this one is the client's.)
    expect(lines, JSON.stringify(lines)).toContain('hang cancelled: the caller closed its request');
  });

  it('progress reports of an upstream call reach a client that sent a progress token', async () => {
    const client = await connect();
    const reports: { progress: number; total?: number; message?: string }[] = [];
    const result = await client.callTool({ name: 'a_progress', arguments: { steps: 3 } }, undefined, {
      onprogress: (report) => reports.push(report),
    });
    expect((result.content as { text: string }[])[0]!.text).toBe('done after 3 steps');
    expect(reports).toEqual([
      { progress: 1, total: 3, message: 'step 1' },
      { progress: 2, total: 3, message: 'step 2' },
      { progress: 3, total: 3, message: 'step 3' },
    ]);
    // Without a token there is nothing to report to; the call answers the same.
    const quiet = await client.callTool({ name: 'a_progress', arguments: { steps: 2 } });
    expect((quiet.content as { text: string }[])[0]!.text).toBe('done after 2 steps');
  });

  it('200 concurrent calls over two upstream servers each reach the right client', async () => {
    const clients: Client[] = await Promise.all(Array.from({ length: 8 }, () => connect()));
    const calls = Array.from({ length: 200 }, (_, i) => {
      const client = clients[i % clients.length]!;
      const tool = i % 2 === 0 ? 'a_echo' : 'b_echo';
      const text = `call-${i}-${tool}-${Math.random().toString(36).slice(2)}`;
      return client.callTool({ name: tool, arguments: { text } }).then((r) => ({ text, r }));
    });
    const answers = await Promise.all(calls);
    for (const { text, r } of answers) {
      expect(r.isError).toBeFalsy();
      expect((r.content as { text: string }[])[0]!.text).toBe(text);
    }
    // One process per server (different specs), however many clients and calls.
    const pid = stack.controlPlanePid()!;
    expect(upstreamChildren(pid)).toHaveLength(3);
    await Promise.all(clients.map((c) => c.close()));
  });

  it('a changed upstream tool list reaches a connected client as tools/list_changed, with no admin action', async () => {
    const client = await connect();
    const changed = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no tools/list_changed within 10 s')), 10_000);
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await client.callTool({ name: 'b_set_tools', arguments: { extra: ['late_arrival'] } });
    await changed;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('b_late_arrival');
    const called = await client.callTool({ name: 'b_late_arrival', arguments: { text: 'hello' } });
    expect((called.content as { text: string }[])[0]!.text).toBe('late_arrival: hello');
  });

  it('deleting a server stops its process; its tools answer a clear error', async () => {
    const pid = stack.controlPlanePid()!;
    const before = upstreamChildren(pid).length;
    await stack.admin('DELETE', `/api/v2/upstream-servers/${servers.beta.id}`);
    const deadline = Date.now() + 10_000;
    while (upstreamChildren(pid).length !== before - 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(upstreamChildren(pid)).toHaveLength(before - 1);
    const client = await connect();
    const gone = await client.callTool({ name: 'b_echo', arguments: { text: 'x' } });
    expect(gone.isError).toBe(true);
    expect(resultJson(gone).error.message).toMatch(/was deleted/);
  });
});
