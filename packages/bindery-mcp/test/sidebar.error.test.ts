// Pins how `bindery-mcp --sidebar` fails, against a real control plane: a command's own fault is
// an error result with the control plane's words; the control plane's refusals (a session the
// person paused: 403; one they ended: 401; another session's id: 404) and an unreachable control
// plane are error results naming why, and the server keeps serving (a resumed session runs
// commands again); a bad setting exits 2 before anything starts, never printing the token, and an
// admin token in place of the sidebar token is refused.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { freePort, startStack, type Stack } from '@bindery/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SERVER = fileURLToPath(new URL('../bin/bindery-mcp.js', import.meta.url));

let stack: Stack;
let person: string;
const clients: Client[] = [];

type Session = { id: string; token: string };

const openSession = (): Promise<Session> => stack.admin('POST', '/api/v2/sidebar/sessions', {}, person);
const setStatus = (session: Session, status: 'active' | 'paused' | 'ended') =>
  stack.admin('PATCH', `/api/v2/sidebar/sessions/${session.id}`, { status }, person);

function env(session: Session, more: Record<string, string> = {}): Record<string, string> {
  return {
    BINDERY_CONTROL_PLANE_URL: stack.controlPlaneUrl,
    BINDERY_SIDEBAR_SESSION: session.id,
    BINDERY_SIDEBAR_TOKEN: session.token,
    ...more,
  };
}

async function agent(settings: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'sidebar-agent', version: '1.0.0' });
  clients.push(client);
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER, '--sidebar'],
      env: settings,
      stderr: 'ignore',
    }),
  );
  return client;
}

async function run(client: Client, command: string): Promise<{ isError: boolean; text: string }> {
  const result = (await client.callTool({ name: 'sidebar_run', arguments: { command } })) as CallToolResult;
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return { isError: result.isError === true, text };
}

/** The process with `settings`, stdin closed at once: its exit code and what it printed. */
function exit(
  settings: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, '--sidebar'], {
      env: { PATH: process.env.PATH ?? '', ...settings },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

beforeAll(async () => {
  stack = await startStack({ gateway: false });
  person = (await stack.admin('POST', '/api/v2/users', { name: 'sidebar-person' })).token;
  await stack.admin('POST', '/api/v2/tables', { name: 'crm', data: { customers: [] } }, person);
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await stack?.close();
});

describe('bindery-mcp --sidebar failing', () => {
  it("a command's own fault is an error result with the control plane's words", async () => {
    const client = await agent(env(await openSession()));
    expect(await run(client, 'ls')).toEqual({
      isError: true,
      text: 'error: choose a context first: use TABLE [PATH] (tables lists yours)',
    });
    expect(await run(client, 'use nope')).toMatchObject({
      isError: true,
      text: expect.stringContaining('no table "nope"'),
    });
    expect(await run(client, 'frobnicate')).toMatchObject({
      isError: true,
      text: 'error: unknown command "frobnicate"; type help',
    });
    const blank = (await client.callTool({
      name: 'sidebar_run',
      arguments: { command: ' ' },
    })) as CallToolResult;
    expect(blank.isError).toBe(true);
    // A tool it does not have is a protocol error, not a result.
    await expect(client.callTool({ name: 'sidebar_write', arguments: {} })).rejects.toThrow(
      /unknown tool "sidebar_write"/,
    );
  });

  it('a paused session is refused (403) with the reason; resumed, commands run again', async () => {
    const session = await openSession();
    const client = await agent(env(session));
    await setStatus(session, 'paused');
    const refused = await run(client, 'tables');
    expect(refused.isError).toBe(true);
    expect(refused.text).toBe(
      `FORBIDDEN: the person paused sidebar session ${session.id}; wait until they resume it`,
    );
    await setStatus(session, 'active');
    expect(await run(client, 'tables')).toMatchObject({
      isError: false,
      text: expect.stringContaining('crm'),
    });
  });

  it("an ended session's token is refused (401) with the reason", async () => {
    const session = await openSession();
    const client = await agent(env(session));
    await setStatus(session, 'ended');
    expect(await run(client, 'tables')).toEqual({
      isError: true,
      text: `UNAUTHORIZED: sidebar session ${session.id} has ended`,
    });
    const listed = (await client.callTool({ name: 'sidebar_proposals', arguments: {} })) as CallToolResult;
    expect(listed.isError).toBe(true);
  });

  it("another session's id is not found for this token (404)", async () => {
    const mine = await openSession();
    const other = await openSession();
    const client = await agent(env(mine, { BINDERY_SIDEBAR_SESSION: other.id }));
    const refused = await run(client, 'tables');
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^NOT_FOUND: /);
    expect(refused.text).toContain(other.id);
  });

  it('an unreachable control plane is an error result naming it', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const client = await agent(env(await openSession(), { BINDERY_CONTROL_PLANE_URL: closed }));
    expect(await run(client, 'tables')).toEqual({
      isError: true,
      text: `the control plane at ${closed} is unreachable (ECONNREFUSED)`,
    });
  });

  it('a bad setting exits 2 before serving, never printing the token', async () => {
    const session = await openSession();
    const cases: [Record<string, string>, string][] = [
      [{ BINDERY_SIDEBAR_SESSION: '' }, 'BINDERY_SIDEBAR_SESSION is not set'],
      [{ BINDERY_SIDEBAR_TOKEN: '' }, 'BINDERY_SIDEBAR_TOKEN is not set'],
      // The person's own token would let the agent act as them.
      [{ BINDERY_SIDEBAR_TOKEN: person }, "BINDERY_SIDEBAR_TOKEN must be a sidebar session's token"],
      [{ BINDERY_SIDEBAR_SESSION: session.token }, 'BINDERY_SIDEBAR_SESSION holds a token, not a session id'],
      [{ BINDERY_SIDEBAR_WAIT_MS: '120001' }, 'BINDERY_SIDEBAR_WAIT_MS must be a whole number'],
      [
        { BINDERY_CONTROL_PLANE_URL: `${stack.controlPlaneUrl}/api/v2/sidebar` },
        "BINDERY_CONTROL_PLANE_URL must be the control plane's base URL",
      ],
    ];
    for (const [settings, message] of cases) {
      const run = await exit(env(session, settings));
      expect(run.code, message).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`bindery-mcp: ${message}`);
      expect(run.stderr).not.toContain(session.token);
      expect(run.stderr).not.toContain(person);
    }
  });
});
