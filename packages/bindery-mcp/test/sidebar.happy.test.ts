// Pins `bindery-mcp --sidebar`, the stdio MCP server an agent drives one sidebar session with,
// against a real control plane (no gateway: the sidebar is the control plane's): the SDK's stdio
// Client lists its tools; reads answer at once; a write waits for the person's verdict, given here
// as the console gives it (the person's admin token finds the pending proposal and decides), and
// the tool's answer says approved (the table changed) or rejected with the person's note (it did
// not); a wait that runs out answers the pending proposal and sidebar_proposals tells the verdict
// later. As a process it writes JSON-RPC only to stdout, exits 0 when stdin ends, and never logs
// the session's token.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startStack, type Json, type Stack } from '@bindery/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SERVER = fileURLToPath(new URL('../bin/bindery-mcp.js', import.meta.url));
const DATA = {
  customers: [
    { id: 1, name: 'Ann', tier: 'gold' },
    { id: 2, name: 'Bob', tier: 'silver' },
  ],
};

let stack: Stack;
/** The person's admin token: they open the session and decide on its proposals. */
let person: string;
let tableId: string;
let session: { id: string; token: string };

interface Agent {
  client: Client;
  stderr(): string;
}
const opened: Agent[] = [];

/** `bindery-mcp --sidebar` as a child process, with the SDK's stdio Client on it. */
async function agent(env: Record<string, string> = {}): Promise<Agent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER, '--sidebar', '--verbose'],
    env: sidebarEnv(env),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'sidebar-agent', version: '1.0.0' });
  const opening = { client, stderr: () => stderr };
  opened.push(opening);
  await client.connect(transport);
  return opening;
}

function sidebarEnv(env: Record<string, string> = {}): Record<string, string> {
  return {
    BINDERY_CONTROL_PLANE_URL: stack.controlPlaneUrl,
    BINDERY_SIDEBAR_SESSION: session.id,
    BINDERY_SIDEBAR_TOKEN: session.token,
    BINDERY_SIDEBAR_WAIT_MS: '20000',
    ...env,
  };
}

async function run(agent: Agent, command: string): Promise<CallToolResult> {
  return (await agent.client.callTool({ name: 'sidebar_run', arguments: { command } })) as CallToolResult;
}

const text = (result: CallToolResult) =>
  result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the person sees waiting in the console: the session's pending proposal, once there is one. */
async function pendingProposal(): Promise<Json> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { items } = await stack.admin(
      'GET',
      `/api/v2/sidebar/sessions/${session.id}/proposals?status=pending`,
      undefined,
      person,
    );
    if (items[0]) return items[0];
    if (Date.now() > deadline) throw new Error('no proposal came to the person');
    await sleep(50);
  }
}

const table = async (): Promise<{ version: number; data: typeof DATA }> =>
  stack.admin('GET', `/api/v2/tables/${tableId}`, undefined, person);

beforeAll(async () => {
  stack = await startStack({ gateway: false });
  person = (await stack.admin('POST', '/api/v2/users', { name: 'sidebar-person' })).token;
  tableId = (await stack.admin('POST', '/api/v2/tables', { name: 'crm', data: DATA }, person)).id;
  session = await stack.admin('POST', '/api/v2/sidebar/sessions', {}, person);
  expect(session.token).toMatch(/^bnd_sidebar_/);
});

afterAll(async () => {
  // Closing the client ends the child's stdin, then signals it if it lingers, and waits for it.
  for (const { client } of opened) await client.close().catch(() => undefined);
  await stack?.close();
});

describe('bindery-mcp --sidebar', () => {
  let main: Agent;

  it('lists sidebar_run and sidebar_proposals; reads answer at once', async () => {
    main = await agent();
    const { tools } = await main.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['sidebar_run', 'sidebar_proposals']);
    const runTool = tools[0]!;
    expect(runTool.inputSchema.required).toEqual(['command']);
    expect(runTool.description).toContain('approves or rejects');
    expect(runTool.description).toContain('20 s');
    expect(main.client.getInstructions()).toContain('sidebar_run');

    const use = await run(main, 'use crm /customers');
    expect(use.isError).toBeFalsy();
    expect(text(use)).toMatch(/^crm \/customers \(version \d+\)$/);
    const count = await run(main, "query 'length(@)'");
    expect(count.isError).toBeFalsy();
    expect(text(count)).toBe('2');
    expect(count.structuredContent).toBeUndefined();
    expect(text(await run(main, 'help'))).toContain('query');
  });

  it('a write waits for the person: approved, its answer says so and the table changed', async () => {
    await run(main, 'use crm /customers');
    const before = await table();
    const answering = run(main, 'set 0/name "Anna"');
    const pending = await pendingProposal();
    expect(pending).toMatchObject({ proposed_by: 'agent', command: 'set 0/name "Anna"' });
    // Nothing is written before the person approves.
    expect((await table()).version).toBe(before.version);
    await stack.admin('POST', `/api/v2/sidebar/proposals/${pending.id}/approve`, {}, person);

    const answer = await answering;
    expect(answer.isError).toBeFalsy();
    const output = text(answer);
    expect(output).toContain(`proposal ${pending.id} (pending) on crm`);
    expect(output).toContain('replace /customers/0/name "Anna"');
    expect(output.split('\n').at(-1)).toBe(`approved: applied at version ${before.version + 1}`);
    expect(answer.structuredContent).toMatchObject({
      proposal: { id: pending.id, status: 'applied', applied_version: before.version + 1 },
    });
    const after = await table();
    expect(after.version).toBe(before.version + 1);
    expect(after.data.customers[0]!.name).toBe('Anna');
  });

  it('a write the person rejects: the answer shows their note and the table is unchanged', async () => {
    const before = await table();
    const answering = run(main, 'rm 1');
    const pending = await pendingProposal();
    await stack.admin(
      'POST',
      `/api/v2/sidebar/proposals/${pending.id}/reject`,
      { note: 'keep Bob, he pays' },
      person,
    );

    const answer = await answering;
    expect(answer.isError).toBeFalsy();
    expect(text(answer).split('\n').at(-1)).toBe('rejected: keep Bob, he pays');
    expect(answer.structuredContent).toMatchObject({
      proposal: { id: pending.id, status: 'rejected', note: 'keep Bob, he pays' },
    });
    expect(await table()).toEqual(before);
  });

  it('a wait that runs out answers the pending proposal; sidebar_proposals tells the verdict later', async () => {
    const brief = await agent({ BINDERY_SIDEBAR_WAIT_MS: '200' });
    const before = await table();
    const answer = await run(brief, 'set 1/tier "gold"');
    expect(answer.isError).toBeFalsy();
    expect(text(answer).split('\n').at(-1)).toMatch(/^still waiting for the person/);
    const proposal = (answer.structuredContent as { proposal: Json }).proposal;
    expect(proposal.status).toBe('pending');
    await stack.admin('POST', `/api/v2/sidebar/proposals/${proposal.id}/approve`, {}, person);

    const listed = (await brief.client.callTool({
      name: 'sidebar_proposals',
      arguments: {},
    })) as CallToolResult;
    expect(listed.isError).toBeFalsy();
    const lines = text(listed).split('\n');
    // Newest first: this one, then the rejected and the applied ones of the tests above.
    expect(lines[0]).toBe(`${proposal.id}  applied (version ${before.version + 1})  crm: set 1/tier "gold"`);
    expect(lines[1]).toMatch(/ rejected {2}crm: rm 1 — note: keep Bob, he pays$/);
    expect(lines[2]).toMatch(/ applied \(version \d+\) {2}crm: set 0\/name "Anna"$/);
    const items = (listed.structuredContent as { items: Json[] }).items;
    expect(items.map((p) => p.status)).toEqual(['applied', 'rejected', 'applied']);
    expect((await table()).data.customers[1]!.tier).toBe('gold');
  });

  it('never logs the token; its log names the session and the verbs only', () => {
    const log = main.stderr();
    expect(log).toContain(
      `bindery-mcp: [sidebar] serving sidebar session ${session.id} of ${stack.controlPlaneUrl}`,
    );
    expect(log).toContain('debug: set: applied');
    expect(log).not.toContain(session.token);
    expect(log).not.toContain('Anna');
  });

  it('as a process: JSON-RPC lines only on stdout, exit 0 once stdin ends', async () => {
    const child = spawn(process.execPath, [SERVER, '--sidebar'], {
      env: { PATH: process.env.PATH ?? '', ...sidebarEnv() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // Both answered: nothing more to ask.
      if (stdout.split('\n').length > 2) child.stdin.end();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'sidebar_run', arguments: { command: 'pwd' } },
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    try {
      expect(await exited).toBe(0);
    } finally {
      clearTimeout(timer);
    }
    const messages = stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Json);
    expect(messages.map((m) => [m.jsonrpc, m.id])).toEqual([
      ['2.0', 1],
      ['2.0', 2],
    ]);
    expect(messages[0].result.serverInfo.name).toBe('bindery-sidebar');
    expect(messages[1].result.content[0].text).toMatch(/^crm \/customers \(version \d+\)$/);
    for (const line of stderr.trimEnd().split('\n')) expect(line).toMatch(/^bindery-mcp: \[sidebar\] /);
    expect(stderr).not.toContain(session.token);
  });
});
