// Upstream MCP servers that are refused, unreachable, not MCP, hanging or crashing: each gets a
// clear answer, the circuit opens and closes, crashed children are restarted with backoff and none
// is left behind (counted from the OS, zombies included). Real processes and servers only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { deadGatewayUrl } from './support/gateways.ts';
import {
  floodingUpstream,
  notMcpServer,
  stdioServerBody,
  upstreamChildren,
  zombieChildren,
  until,
  settledChildren,
} from './support/upstream-servers.ts';

let t: TestApp;
let user: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp({
    upstreamStdioCommands: ['node'],
    allowedNetworks: ['127.0.0.1/32'],
    upstreamPingEveryMs: 500,
  });
  user = await t.newUser('upstream-errors');
});
afterAll(async () => {
  await t?.close();
});

const as = () => ({ token: user.token });

async function createServer(body: Record<string, unknown>) {
  return t.call('POST', '/api/v2/upstream-servers', { ...as(), body });
}

/** A server's tools bound to a new AEI by their upstream names. */
async function bound(serverId: string) {
  const adis = await t.call('GET', `/api/v2/adis?kind=mcp&upstream_server_id=${serverId}&limit=100`, as());
  const aei = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: `aei ${serverId}` } });
  const res = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
    ...as(),
    body: adis.body.items.map((a: { id: string }) => ({ adi_id: a.id })),
  });
  expect(res.status).toBe(201);
  const byName = new Map<string, { id: string; adi_id: string }>(
    res.body.items.map((b: { tool_name: string; id: string; adi_id: string }) => [b.tool_name, b]),
  );
  return async (tool: string, args: Record<string, unknown> = {}) => {
    const binding = byName.get(tool)!;
    const r = await t.call('POST', `/internal/adi/${binding.adi_id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { aei_id: aei.body.id, binding_id: binding.id, arguments: args },
    });
    return r.body as { isError?: boolean; content: { text: string }[] };
  };
}

const errorOf = (result: { content: { text: string }[] }) => JSON.parse(result.content[0]!.text).error;

describe('refused at save', () => {
  it('a command outside UPSTREAM_STDIO_COMMANDS is FORBIDDEN, naming it', async () => {
    const res = await createServer({
      name: 'shell',
      transport: 'stdio',
      command: '/bin/sh',
      args: ['-c', 'true'],
    });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(res.body.error.message).toMatch(/"sh" is not among the commands .*UPSTREAM_STDIO_COMMANDS: node/);
  });

  it('stdio servers are refused altogether when the operator allows no command', async () => {
    const other = await startTestApp();
    try {
      const u = await other.newUser('nobody');
      const res = await other.call('POST', '/api/v2/upstream-servers', {
        token: u.token,
        body: stdioServerBody('x'),
      });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/turned off on this control plane/);
    } finally {
      await other.close();
    }
  });

  it('a secret that does not exist is VALIDATION_FAILED naming it; a malformed reference too', async () => {
    const missing = await createServer(stdioServerBody('needs secret', { TOKEN: '{{secret.NOPE}}' }));
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/no secret named NOPE/);
    const malformed = await createServer(stdioServerBody('bad ref', { TOKEN: '{{secrets.X}}' }));
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toMatch(/env\/TOKEN: .* is not a secret reference/);
  });

  it('a URL with credentials or another scheme is VALIDATION_FAILED', async () => {
    const creds = await createServer({ name: 'c', transport: 'http', url: 'http://user:pw@127.0.0.1:1/mcp' });
    expect(creds.status).toBe(400);
    expect(creds.body.error.message).toMatch(/credentials in the URL/);
    const scheme = await createServer({ name: 'f', transport: 'http', url: 'file:///etc/passwd' });
    expect(scheme.status).toBe(400);
  });

  it('mcp ADIs cannot be created through /api/v2/adis', async () => {
    const res = await t.call('POST', '/api/v2/adis', { ...as(), body: { kind: 'mcp' } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/come from upstream MCP servers/);
  });
});

describe('unreachable or not MCP: saved, with a status that says why', () => {
  it('a loopback port nothing listens on', async () => {
    const url = `${await deadGatewayUrl()}/mcp`;
    const res = await createServer({ name: 'dead', transport: 'http', url });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('failing');
    expect(res.body.last_error).toMatch(/could not be started: .*ECONNREFUSED/);
    expect(res.body.tools).toEqual([]);
  });

  it('an address outside HTTP_TOOLS_ALLOWED_NETWORKS is refused by the SSRF guard, never reached', async () => {
    const res = await createServer({ name: 'outside', transport: 'http', url: 'http://127.0.0.2:8999/mcp' });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('failing');
    expect(res.body.last_error).toMatch(/refused/);
  });

  it('an HTTP server that does not speak MCP', async () => {
    const web = await notMcpServer();
    try {
      const res = await createServer({ name: 'web page', transport: 'http', url: web.url });
      expect(res.status).toBe(201);
      expect(res.body.status).toBe('failing');
      expect(res.body.last_error).toMatch(/could not be started/);
    } finally {
      await web.close();
    }
  });

  it('a stdio program that does not speak MCP is stopped after its failed start', async () => {
    const before = upstreamChildren().length;
    const res = await createServer({
      ...stdioServerBody('junk', { UPSTREAM_TEST_MODE: 'not-mcp' }),
      limits: { call_timeout_ms: 1000 },
    });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('failing');
    expect(res.body.last_error).toMatch(/could not be started/);
    expect(await settledChildren(before)).toEqual({ living: before, zombies: [] });
  });
});

describe('the handshake', () => {
  it('is never cancelled: an answered initialize is left alone, an unanswered one ends by closing the connection', async () => {
    const answering = await floodingUpstream('call-sse-line');
    const silent = await floodingUpstream('init-silent');
    try {
      const started = Date.now();
      // A call timeout of 1 s: a start may take the least there is, 5 s.
      const [ok, stuck] = await Promise.all([
        createServer({
          name: 'answers initialize',
          transport: 'http',
          url: answering.url,
          limits: { call_timeout_ms: 1_000 },
        }),
        createServer({
          name: 'never answers initialize',
          transport: 'http',
          url: silent.url,
          limits: { call_timeout_ms: 1_000 },
        }),
      ]);
      expect(ok.body.status).toBe('ok');
      expect(stuck.body.status).toBe('failing');
      expect(stuck.body.last_error).toContain('the MCP handshake did not complete within 5000 ms');
      // The SDK's timer or signal would have cancelled initialize by now (5 s after the start).
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 6_000 - Date.now())));
      expect(answering.methods()).toContain('initialize');
      expect(answering.methods()).not.toContain('notifications/cancelled');
      expect(silent.methods()).toContain('initialize');
      expect(silent.methods()).not.toContain('notifications/cancelled');
      // The unanswered initialize's connection was closed by the control plane.
      expect(silent.floods().started).toBe(0);
    } finally {
      await Promise.all([answering.close(), silent.close()]);
    }
  });
});

describe('progress reports without end', () => {
  it('pass the call cap: RESULT_TOO_LARGE, the reports stop, and the circuit stays closed', async () => {
    const capped = await startTestApp({ upstreamStdioCommands: ['node'], upstreamCallMaxBytes: 64 * 1024 });
    try {
      const owner = await capped.newUser('progress-flood');
      const server = await capped.call('POST', '/api/v2/upstream-servers', {
        token: owner.token,
        body: stdioServerBody('chatty'),
      });
      const adis = await capped.call('GET', `/api/v2/adis?kind=mcp&upstream_server_id=${server.body.id}`, {
        token: owner.token,
      });
      const adi = adis.body.items.find((a: { name: string }) => a.name === 'progress');
      const aei = await capped.call('POST', '/api/v2/aeis', { token: owner.token, body: { name: 'chatty' } });
      const binding = await capped.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
        token: owner.token,
        body: { adi_id: adi.id },
      });
      /** A call that asks for progress: its NDJSON lines. */
      const call = async (args: Record<string, unknown>) => {
        const res = await fetch(`${capped.baseUrl}/internal/adi/${adi.id}/execute`, {
          method: 'POST',
          headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            aei_id: aei.body.id,
            binding_id: binding.body.id,
            arguments: args,
            progress: true,
          }),
        });
        return (await res.text())
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line));
      };
      // 2,000 reports of 2,000 characters: about 4 MB, 64 KiB allowed.
      for (let i = 0; i < 3; i++) {
        const lines = await call({ steps: 2_000, pad: 2_000 });
        const last = lines.at(-1).result;
        expect(last.isError).toBe(true);
        const error = JSON.parse(last.content[0].text).error;
        expect(error.code).toBe('RESULT_TOO_LARGE');
        expect(error.details).toMatchObject({ limit_bytes: 64 * 1024, cap: 'UPSTREAM_CALL_MAX_BYTES' });
        // What was passed on stays within the cap.
        expect(lines.length - 1).toBeLessThan(40);
      }
      // Three cut calls in a row: had they counted as failures, the circuit would be open.
      const fine = await call({ steps: 2 });
      expect(fine.at(-1).result.isError).toBeFalsy();
    } finally {
      await capped.close();
    }
  });
});

describe('a hanging upstream', () => {
  it('times out at the call timeout, opens the circuit after 3 failures and closes it once a probe succeeds', async () => {
    const res = await createServer({
      ...stdioServerBody('hanging', { UPSTREAM_TEST_MARKER: 'hang' }),
      limits: { call_timeout_ms: 300 },
    });
    expect(res.body.status).toBe('ok');
    const call = await bound(res.body.id);
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const result = await call('hang');
      expect(result.isError).toBe(true);
      expect(errorOf(result).code).toBe('TIMEOUT');
      expect(Date.now() - started).toBeLessThan(3_000);
    }
    // Open: refused at once, naming the server and its last error.
    const refused = await call('echo', { text: 'hi' });
    expect(errorOf(refused)).toMatchObject({ code: 'UPSTREAM_FAILED', details: { circuit: 'open' } });
    expect(errorOf(refused).message).toMatch(/"hanging" is failing \(circuit open after 3 failures/);
    const status = await t.call('GET', `/api/v2/upstream-servers/${res.body.id}`, as());
    expect(status.body.status).toBe('circuit_open');
    // After the backoff (at most 4 s here) the next call is the probe; the server answers it.
    const recovered = await until(
      () => call('echo', { text: 'back' }),
      (r) => r.isError !== true,
      8_000,
    );
    expect(recovered.content[0]!.text).toBe('back');
    const after = await until(
      async () => (await t.call('GET', `/api/v2/upstream-servers/${res.body.id}`, as())).body.status,
      (s) => s === 'ok',
    );
    expect(after).toBe('ok');
    await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
  });
});

describe('a crashing upstream', () => {
  it('is restarted on the next call after a backoff, and leaves no zombie', async () => {
    const before = upstreamChildren().length;
    const res = await createServer(stdioServerBody('crashing', { UPSTREAM_TEST_MARKER: 'crash' }));
    const call = await bound(res.body.id);
    const first = JSON.parse((await call('whoami')).content[0]!.text).pid as number;
    const crashed = await call('crash');
    expect(crashed.isError).toBe(true);
    expect(errorOf(crashed).code).toBe('UPSTREAM_FAILED');
    // The next call waits out the backoff (about a second) and gets a new process.
    const again = await call('whoami');
    expect(again.isError, JSON.stringify(again)).toBeUndefined();
    const second = JSON.parse(again.content[0]!.text).pid as number;
    expect(second).not.toBe(first);
    expect(upstreamChildren()).not.toContain(first);
    expect(await until(zombieChildren, (z) => z.length === 0)).toEqual([]);
    const body = await t.call('GET', `/api/v2/upstream-servers/${res.body.id}`, as());
    expect(body.body.pool.restarts).toBeGreaterThanOrEqual(1);
    await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
    expect(
      await until(
        () => upstreamChildren().length,
        (n) => n === before,
      ),
    ).toBe(before);
  });

  it('one that exits at start opens its circuit and leaves no process behind', async () => {
    const before = upstreamChildren().length;
    const res = await createServer(stdioServerBody('exits', { UPSTREAM_TEST_MODE: 'exit' }));
    expect(res.body.status).toBe('failing');
    const sync = async () => t.call('POST', `/api/v2/upstream-servers/${res.body.id}/sync`, as());
    // Two more failed starts (each after its backoff) open the circuit.
    await until(
      async () => {
        await sync();
        return (await t.call('GET', `/api/v2/upstream-servers/${res.body.id}`, as())).body.status;
      },
      (s) => s === 'circuit_open',
      10_000,
    );
    const refused = await sync();
    expect(refused.status).toBe(502);
    expect(refused.body.error.message).toMatch(/circuit open/);
    expect(await settledChildren(before)).toEqual({ living: before, zombies: [] });
  });
});

describe('health pings', () => {
  it('stop an instance that no longer answers; the next call gets a new one', async () => {
    const res = await createServer(stdioServerBody('frozen', { UPSTREAM_TEST_MARKER: 'frozen' }));
    const call = await bound(res.body.id);
    const first = JSON.parse((await call('whoami')).content[0]!.text).pid as number;
    // A stopped process keeps its pipes open and answers nothing, like a hung server.
    process.kill(first, 'SIGSTOP');
    try {
      const failing = await until(
        async () => (await t.call('GET', `/api/v2/upstream-servers/${res.body.id}`, as())).body,
        (b) => b.status === 'failing',
      );
      expect(failing.last_error).toMatch(/ping failed/);
      expect(
        await until(
          () => upstreamChildren().includes(first),
          (alive) => !alive,
        ),
      ).toBe(false);
    } finally {
      // Never leave a frozen process (it is killed by then; this is for a failing run).
      try {
        process.kill(first, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const again = await until(
      () => call('whoami'),
      (r) => r.isError !== true,
    );
    expect(JSON.parse(again.content[0]!.text).pid).not.toBe(first);
    await t.call('DELETE', `/api/v2/upstream-servers/${res.body.id}`, as());
  });
});

describe('names and clashes when attaching a whole server', () => {
  it('caps prefixed names at 64 characters with a hash, and refuses a clash naming it', async () => {
    const res = await createServer(stdioServerBody('names', { UPSTREAM_TEST_MARKER: 'names' }));
    const aei = await t.call('POST', '/api/v2/aeis', { ...as(), body: { name: 'names' } });
    const prefix = 'p'.repeat(32);
    const attached = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
      ...as(),
      body: { upstream_server_id: res.body.id, prefix },
    });
    expect(attached.status, JSON.stringify(attached.body)).toBe(201);
    const names: string[] = attached.body.items.map((b: { tool_name: string }) => b.tool_name);
    expect(names).toContain(`${prefix}_echo`);
    for (const name of names) expect(name.length).toBeLessThanOrEqual(64);
    // Attaching again, or under a prefix whose names are taken, is refused.
    const again = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
      ...as(),
      body: { upstream_server_id: res.body.id },
    });
    expect(again.status).toBe(409);
    const twin = await createServer(stdioServerBody('names twin', { UPSTREAM_TEST_MARKER: 'names' }));
    const clash = await t.call('POST', `/api/v2/aeis/${aei.body.id}/bindings`, {
      ...as(),
      body: { upstream_server_id: twin.body.id, prefix },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.error.message).toMatch(/would clash with 9 tool\(s\)/);
    expect(clash.body.error.details.clashes[0]).toMatchObject({
      tool_name: expect.stringMatching(/^p{32}_/),
    });
  });

  it('a prefixed name over 64 characters is cut and suffixed with a hash', async () => {
    const { prefixedToolName } = await import('../src/kinds/mcp/upstream-names.ts');
    const long = prefixedToolName('server', 'a_tool_with_a_really_long_name_that_goes_on_and_on_forever');
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^server_a_tool_with_a_really_long_name_that_goes_on_and_on_[a-z2-7]{6}$/);
    expect(
      prefixedToolName('server', 'a_tool_with_a_really_long_name_that_goes_on_and_on_forever!'),
    ).not.toBe(long);
    expect(prefixedToolName('s', 'echo')).toBe('s_echo');
  });
});
