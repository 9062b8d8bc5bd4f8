// The stdio relay `bindery-mcp vscode` (packages/bindery-mcp) between the SDK's stdio Client and a
// real gateway, with a personal key whose caller `vscode` maps to an exposure (the caller entry,
// /api/v2/mcp/caller/vscode): it lists the same tools as the gateway answers directly, relays prompts, completions, resources
// and their subscriptions; an admin change reaches the stdio client as tools/list_changed;
// logging/setLevel decides which notifications/message the client gets. When the gateway drops
// the session, the relay starts a new one by itself, replaying the level and the subscriptions,
// and tells the client its lists may have changed. While the gateway is stopped a call fails at
// once with an error naming it; once it is started again on the same port, calls succeed and
// notifications arrive again, without restarting the relay. stdout carries JSON-RPC lines only;
// closing stdin ends the relay with code 0; without BINDERY_KEY it exits 2. With a personal key
// it relays to the caller entry (`/api/v2/mcp/caller/{caller}`, or without a caller the client's
// name), and `--check` names the profile (and the key's kind, with a caller or without). A
// stand-in MCP server (the SDK's) covers what the gateway never sends: requests to the client,
// progress, 404 for a request of a lost session, and a connection lost during a tools/call (not
// sent again unless it carries an idempotency key).
// Both eras: a modern stdio client (the v2 SDK's, negotiating with server/discover) and a legacy
// one list and call the tools through the relay, the modern one's requests reaching the gateway as
// stateless 2026-07-28 POSTs (their MCP-Protocol-Version header), the legacy one's on a session;
// on the wire the relay answers server/discover and the modern refusals as the gateway does; and
// a modern client against the stand-in (a server of the 2025 era only) is served modern over a
// legacy session, its cancel reaching the server.
//
// The relay talks to a gateway of this file (restarted in the middle), which the control plane
// tells of admin changes (GATEWAY_URLS); the stack starts no gateway of its own.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListRootsRequestSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  LATEST_PROTOCOL_VERSION,
  isInitializeRequest,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import {
  freePort,
  reservePort,
  resultJson,
  startStack,
  twoTableExposure,
  unusedApiKey,
  type Exposed,
  type Json,
  type ReservedPort,
  type Stack,
} from '@bindery/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The gateway runs in this process: the tests reach into its sessions (to drop the relay's, and to
// see its standing stream open and its subscriptions replayed).
import { buildGateway } from '@bindery/gateway/src/app.ts';
import { loadGatewayConfig } from '@bindery/gateway/src/config.ts';

type Gateway = Awaited<ReturnType<typeof buildGateway>>;

const RELAY = fileURLToPath(new URL('../bin/bindery-mcp.js', import.meta.url));
const CONTEXT = 'bindery://tools/find_customers/context';
/** Long enough for a notification that was going to come to have come (they take milliseconds). */
const QUIET_MS = 400;
const REVIEW = {
  name: 'review_customer',
  description: 'Asks for a review of one customer',
  arguments: [
    { name: 'customer', required: true },
    { name: 'tone', choices: ['friendly', 'formal'] },
  ],
  messages: [{ role: 'user', text: 'Review customer {{customer}} in a {{tone}} tone.' }],
};

let stack: Stack;
let exposed: Exposed;
/** A personal key of the exposure's owner, whose caller `vscode` maps to the exposure. */
let personalKey: string;
/** The gateway's port, held from the start of the stack (which names it) until it first listens. */
let reserved: ReservedPort;
let port: number;
let gatewayUrl: string;
let gateway: Gateway | undefined;
/** Session ids of the GET streams the relay opened on the current gateway. */
let relayStreams: string[] = [];
/** The MCP headers of every POST the current gateway received. */
let gatewayPosts: {
  version?: string;
  method?: string;
  session?: string;
  /** Its Mcp-Param-* headers, by lowercase name. */
  params: Record<string, string>;
}[] = [];

async function startGateway(): Promise<void> {
  const started = await buildGateway(loadGatewayConfig(stack.gatewayEnv(port)), false);
  relayStreams = [];
  gatewayPosts = [];
  started.server.on('request', (request) => {
    const id = request.headers['mcp-session-id'];
    if (request.method === 'GET' && request.url?.startsWith('/api/v2/mcp/') && typeof id === 'string') {
      relayStreams.push(id);
    }
    if (request.method === 'POST' && request.url?.startsWith('/api/v2/mcp/')) {
      const header = (name: string) => {
        const value = request.headers[name];
        return typeof value === 'string' ? value : undefined;
      };
      gatewayPosts.push({
        version: header('mcp-protocol-version'),
        method: header('mcp-method'),
        session: header('mcp-session-id'),
        params: Object.fromEntries(
          Object.entries(request.headers).filter(
            (entry): entry is [string, string] =>
              entry[0].startsWith('mcp-param-') && typeof entry[1] === 'string',
          ),
        ),
      });
    }
  });
  await reserved.release();
  await started.listen({ host: '127.0.0.1', port });
  gateway = started;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const sessions = () => gateway!.gateway.sessions;

/** The relay's session on the gateway once its standing stream is open (not `except`). */
async function relaySession(except?: string): Promise<string> {
  let found: string | undefined;
  await until('the relay’s standing stream', () => {
    found = [...relayStreams]
      .reverse()
      .find((id) => id !== except && sessions().peek(id)?.standing !== undefined);
    return found !== undefined;
  });
  return found!;
}

type Line = LoggingMessageNotification['params'];

interface Relayed {
  client: Client;
  transport: StdioClientTransport;
  /** Errors the client's transport met: a stdout line that is not a JSON-RPC message would be one. */
  errors: Error[];
  stderr(): string;
  seen: { tools: number; prompts: number; resources: number };
  logs: Line[];
  updates: string[];
}

const opened: Relayed[] = [];

/** The relay as a child process (`bindery-mcp vscode`), with the SDK's stdio Client on it. */
async function relay(
  env: Record<string, string> = {},
  capabilities = {},
  args = ['vscode'],
): Promise<Relayed> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [RELAY, ...args],
    env: { BINDERY_URL: gatewayUrl, BINDERY_KEY: personalKey, ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'relay-e2e', version: '1.0.0' }, { capabilities });
  const relayed: Relayed = {
    client,
    transport,
    errors: [],
    stderr: () => stderr,
    seen: { tools: 0, prompts: 0, resources: 0 },
    logs: [],
    updates: [],
  };
  client.onerror = (error) => relayed.errors.push(error);
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (relayed.seen.tools += 1));
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void (relayed.seen.prompts += 1));
  client.setNotificationHandler(
    ResourceListChangedNotificationSchema,
    () => void (relayed.seen.resources += 1),
  );
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void relayed.logs.push(n.params));
  client.setNotificationHandler(
    ResourceUpdatedNotificationSchema,
    (n) => void relayed.updates.push(n.params.uri),
  );
  opened.push(relayed);
  await client.connect(transport);
  return relayed;
}

interface ModernRelayed {
  client: ModernClient;
  stderr(): string;
}

/**
 * The relay as a child process with the v2 SDK's stdio Client on it, negotiating the era ('auto':
 * server/discover first, on a probe process of its own, then the session's process).
 */
async function modernRelay(env: Record<string, string> = {}, args = ['vscode']): Promise<ModernRelayed> {
  const transport = new ModernStdioTransport({
    command: process.execPath,
    args: [RELAY, ...args],
    env: { BINDERY_URL: gatewayUrl, BINDERY_KEY: personalKey, ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new ModernClient(
    { name: 'relay-modern', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** An SDK client on the gateway itself, to compare with. */
async function direct(): Promise<Client> {
  const client = new Client({ name: 'direct-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gatewayUrl}/api/v2/mcp/server/${exposed.apiKey}`)),
  );
  return client;
}

async function closeDirect(client: Client): Promise<void> {
  await (client.transport as StreamableHTTPClientTransport).terminateSession().catch(() => undefined);
  await client.close();
}

const admin = (method: string, path: string, body?: unknown) =>
  stack.admin(method, path, body, exposed.token);
const count = { query: 'length(@)' };
const events = (lines: Line[]) => lines.map((l) => [l.level, (l.data as Json).event]);

let serial = 0;
/** Renames the orders tool (an admin change every session of the exposure hears of). */
async function renameOrders(): Promise<string> {
  const name = `peek_orders_${++serial}`;
  await admin('PATCH', `/api/v2/aeis/${exposed.aeiId}/bindings/${exposed.bindings.peek_orders}`, {
    tool_name: name,
  });
  return name;
}

beforeAll(async () => {
  reserved = await reservePort();
  port = reserved.port;
  gatewayUrl = `http://127.0.0.1:${port}`;
  stack = await startStack({
    gateway: false,
    controlPlaneEnv: { GATEWAY_URLS: gatewayUrl, GATEWAY_PUBLIC_URL: gatewayUrl },
  });
  exposed = await twoTableExposure(stack);
  const addCustomer = await admin('POST', '/api/v2/adis', {
    table_id: exposed.tables.customers,
    json_path: '/list',
    operation_type: 'create',
  });
  await admin('POST', `/api/v2/aeis/${exposed.aeiId}/bindings`, {
    adi_id: addCustomer.id,
    tool_name: 'add_customer',
  });
  await admin('POST', `/api/v2/aeis/${exposed.aeiId}/prompts`, REVIEW);
  personalKey = (await admin('POST', '/api/v2/mcp-keys', { name: 'laptop' })).key;
  await admin('PUT', '/api/v2/callers/vscode', { aei_id: exposed.aeiId });
  await startGateway();
});

afterAll(async () => {
  for (const { client } of opened) await client.close().catch(() => undefined);
  await gateway?.close();
  await stack?.close();
  await reserved?.release();
});

describe('bindery-mcp relaying to the gateway', () => {
  let main: Relayed;
  let session: string;

  it('lists the same tools as the gateway, and relays prompts, completions and resources', async () => {
    main = await relay();
    session = await relaySession();
    const gatewayItself = await direct();
    try {
      expect(main.client.getServerCapabilities()).toEqual(gatewayItself.getServerCapabilities());
      expect(main.client.getServerVersion()).toEqual(gatewayItself.getServerVersion());
      const tools = await main.client.listTools();
      expect(tools.tools.map((t) => t.name)).toEqual(['find_customers', 'peek_orders', 'add_customer']);
      expect(tools).toEqual(await gatewayItself.listTools());

      expect(resultJson(await main.client.callTool({ name: 'find_customers', arguments: count }))).toBe(2);
      const prompt = { name: REVIEW.name, arguments: { customer: 'c-7', tone: 'formal' } };
      expect(await main.client.getPrompt(prompt)).toEqual(await gatewayItself.getPrompt(prompt));
      expect((await main.client.getPrompt(prompt)).messages[0]?.content).toEqual({
        type: 'text',
        text: 'Review customer c-7 in a formal tone.',
      });
      const complete = {
        ref: { type: 'ref/prompt' as const, name: REVIEW.name },
        argument: { name: 'tone', value: 'f' },
      };
      expect((await main.client.complete(complete)).completion.values).toEqual(['friendly', 'formal']);
      expect(await main.client.listPrompts()).toEqual(await gatewayItself.listPrompts());
      expect(await main.client.listResources()).toEqual(await gatewayItself.listResources());
      const read = await main.client.readResource({ uri: CONTEXT });
      expect(read).toEqual(await gatewayItself.readResource({ uri: CONTEXT }));
      expect(JSON.parse(String((read.contents[0] as { text: string }).text))).toEqual([
        { id: 1, name: 'Ada' },
        { id: 2, name: 'Grace' },
      ]);
      // An error answer comes through as the gateway sent it.
      const error = await main.client.getPrompt({ name: 'review_customers' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).message).toContain('did you mean "review_customer"?');
    } finally {
      await closeDirect(gatewayItself);
    }
  });

  it('subscribes: a write to the table reaches the stdio client as resources/updated', async () => {
    await main.client.subscribeResource({ uri: CONTEXT });
    expect(sessions().subscriptions.count(session)).toBe(1);
    const written = await main.client.callTool({
      name: 'add_customer',
      arguments: { value: { id: 3, name: 'Linus' } },
    });
    expect(written.isError).toBeFalsy();
    await until('resources/updated', () => main.updates.includes(CONTEXT));
  });

  it('an admin change reaches the stdio client as tools/list_changed', async () => {
    const before = main.seen.tools;
    const renamed = await renameOrders();
    await until('tools/list_changed', () => main.seen.tools === before + 1);
    expect((await main.client.listTools()).tools.map((t) => t.name)).toContain(renamed);
  });

  it('logging/setLevel decides which notifications/message the client gets', async () => {
    // At the gateway's default (warning): a success says nothing, a refusal is a warning.
    await main.client.callTool({ name: 'find_customers', arguments: count });
    const refused = await main.client.callTool({ name: 'find_customers', arguments: { query: '[?' } });
    expect(refused.isError).toBe(true);
    await until('the refusal’s warning', () => main.logs.length === 1);
    expect(events(main.logs)).toEqual([['warning', 'refused']]);

    await main.client.setLoggingLevel('error');
    await main.client.callTool({ name: 'find_customers', arguments: { query: '[?' } });
    await sleep(QUIET_MS);
    expect(main.logs).toHaveLength(1);

    await main.client.setLoggingLevel('debug');
    await main.client.callTool({ name: 'find_customers', arguments: count });
    await until('started and finished', () => main.logs.length === 3);
    expect(events(main.logs).slice(1)).toEqual([
      ['debug', 'started'],
      ['debug', 'finished'],
    ]);
  });

  it('when the gateway drops the session, a new one replays the level and the subscriptions', async () => {
    const seen = { ...main.seen };
    // What the gateway does to a session it closes (idle, or evicted for room).
    const dropped = sessions().peek(session)!;
    sessions().remove(session);
    await dropped.transport.close();

    await until(
      'the three list_changed notifications',
      () =>
        main.seen.tools === seen.tools + 1 &&
        main.seen.prompts === seen.prompts + 1 &&
        main.seen.resources === seen.resources + 1,
    );
    const renewed = await relaySession(session);
    expect(renewed).not.toBe(session);
    expect(sessions().subscriptions.count(renewed)).toBe(1);
    expect(main.stderr()).toContain(
      'bindery-mcp: [vscode] the gateway dropped the session; starting a new one',
    );

    // The level (debug) came along: a call's start and finish are logged again.
    const logged = main.logs.length;
    expect(resultJson(await main.client.callTool({ name: 'find_customers', arguments: count }))).toBe(3);
    await until('started and finished', () => main.logs.length === logged + 2);
    session = renewed;
  });

  it('the gateway stopped: calls fail at once naming it; started again: calls and notifications work again', async () => {
    await gateway!.close();
    gateway = undefined;

    const started = Date.now();
    const failed = await main.client
      .callTool({ name: 'find_customers', arguments: count })
      .catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(failed).toBeInstanceOf(McpError);
    expect((failed as McpError).code).toBe(-32000);
    expect((failed as McpError).message).toContain(`the Bindery gateway at ${gatewayUrl} is unreachable`);
    expect(took).toBeLessThan(2_500);
    // A listing fails the same way: every request is answered, none hangs.
    await expect(main.client.listPrompts()).rejects.toThrow(/is unreachable/);

    await startGateway();
    const seen = { ...main.seen };
    expect(resultJson(await main.client.callTool({ name: 'find_customers', arguments: count }))).toBe(3);
    // The new session told the client to list again (the lists may have changed meanwhile).
    await until(
      'the list_changed notifications of the new session',
      () => main.seen.tools === seen.tools + 1,
    );
    expect(main.seen.prompts).toBe(seen.prompts + 1);
    expect(main.stderr()).toMatch(/the gateway is back after \d+\.\d s/);

    // The new session's stream carries notifications: an admin change, and a write.
    session = await relaySession();
    expect(sessions().subscriptions.count(session)).toBe(1);
    const before = main.seen.tools;
    const renamed = await renameOrders();
    await until('tools/list_changed after the restart', () => main.seen.tools === before + 1);
    expect((await main.client.listTools()).tools.map((t) => t.name)).toContain(renamed);
    const updates = main.updates.length;
    await main.client.callTool({ name: 'add_customer', arguments: { value: { id: 4, name: 'Edsger' } } });
    await until('resources/updated after the restart', () => main.updates.length > updates);
  });

  it('met no stdout line that is not JSON-RPC, and ends within the bound when its stdin closes', async () => {
    expect(main.errors).toEqual([]);
    const started = Date.now();
    await main.client.close();
    // The SDK transport ends stdin and would signal the process only after 2 s.
    expect(Date.now() - started).toBeLessThan(2_000);
    await until('the session closed (DELETE)', () => sessions().peek(session) === undefined, 5_000);
  });
});

/** Runs the relay with `input` lines on stdin (then closes it): its exit code and output. */
function runRelay(
  env: Record<string, string>,
  args: string[],
  input: unknown[],
  waitFor?: (stdoutLines: string[]) => boolean,
): Promise<{ code: number | null; stdout: string[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RELAY, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const lines = () => stdout.split('\n').filter((line, i, all) => i < all.length - 1 || line !== '');
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (waitFor?.(lines())) child.stdin.end();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: lines(), stderr }));
    for (const message of input) child.stdin.write(`${JSON.stringify(message)}\n`);
    if (!waitFor) child.stdin.end();
  });
}

const MODERN = '2026-07-28';
/** What a modern client puts in every request's `_meta`, for the raw-wire tests. */
const envelope = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};
/** A raw modern request of `method`, with `meta` as its `_meta`. */
const request = (id: number, method: string, meta: object = envelope) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { _meta: meta },
});

describe('bindery-mcp for both protocol eras', () => {
  it('a modern stdio client and a legacy one list and call the tools; the modern one’s requests reach the gateway modern', async () => {
    const posts = gatewayPosts.length;
    const modern = await modernRelay();
    const legacy = await relay();
    try {
      expect(modern.client.getProtocolEra()).toBe('modern');
      const [modernTools, legacyTools] = await Promise.all([
        modern.client.listTools(),
        legacy.client.listTools(),
      ]);
      const names = modernTools.tools.map((t) => t.name);
      expect(names).toContain('find_customers');
      expect(names).toEqual(legacyTools.tools.map((t) => t.name));
      const [modernCall, legacyCall] = await Promise.all([
        modern.client.callTool({ name: 'find_customers', arguments: count }),
        legacy.client.callTool({ name: 'find_customers', arguments: count }),
      ]);
      expect(modernCall.isError).toBeFalsy();
      expect(resultJson(modernCall)).toEqual(expect.any(Number));
      expect(resultJson(modernCall)).toEqual(resultJson(legacyCall));

      // The modern client's relay probed once and then sent its requests statelessly, modern.
      const seen = gatewayPosts.slice(posts);
      const modernPosts = seen.filter((post) => post.version === MODERN);
      expect(modernPosts.map((post) => post.method)).toEqual(
        expect.arrayContaining(['server/discover', 'tools/list', 'tools/call']),
      );
      expect(modernPosts.every((post) => post.session === undefined)).toBe(true);
      expect(modern.stderr()).toContain('the gateway speaks MCP 2026-07-28');
      // The legacy client's went on a session, as before.
      expect(seen.some((post) => post.session !== undefined && post.version !== MODERN)).toBe(true);
      expect(legacy.errors).toEqual([]);
    } finally {
      await Promise.all([modern.client.close(), legacy.client.close()]);
    }
  });

  it('a modern stdio client calls a tool that wants an argument in a header: the relay, its HTTP client, sends it', async () => {
    const tenantSchema = (mark: string) => ({
      type: 'object',
      properties: { tenant: { type: 'string', 'x-mcp-header': mark } },
      required: ['tenant'],
    });
    const tool = await admin('POST', '/api/v2/adis', {
      kind: 'custom',
      name: 'tenant_echo',
      code: 'export default (args) => "tenant " + args.tenant',
      input_schema: tenantSchema('Tenant'),
    });
    const aei = await admin('POST', '/api/v2/aeis', { name: 'marked' });
    await admin('POST', `/api/v2/aeis/${String(aei.id)}/bindings`, { adi_id: tool.id });
    const posts = gatewayPosts.length;
    const modern = await modernRelay({ BINDERY_KEY: String(aei.api_key) }, []);
    const calls = () => gatewayPosts.slice(posts).filter((post) => post.method === 'tools/call');
    const lists = () => gatewayPosts.slice(posts).filter((post) => post.method === 'tools/list').length;
    try {
      expect(modern.client.getProtocolEra()).toBe('modern');
      // The relay knows no marks yet: two calls at once go without, are refused before they run,
      // and the relay reads the gateway's tools once and sends each again with its header.
      const [first, second] = await Promise.all([
        modern.client.callTool({ name: 'tenant_echo', arguments: { tenant: 'acme ' } }),
        modern.client.callTool({ name: 'tenant_echo', arguments: { tenant: 'initech' } }),
      ]);
      expect([resultJson(first), resultJson(second)]).toEqual(['tenant acme ', 'tenant initech']);
      const sent = (from: number) =>
        calls()
          .slice(from)
          .map((post) => JSON.stringify(post.params));
      expect(sent(0).sort()).toEqual(
        ['{}', '{}', '{"mcp-param-tenant":"=?base64?YWNtZSA=?="}', '{"mcp-param-tenant":"initech"}'].sort(),
      );
      expect(lists()).toBe(1);
      // Known now: one POST, with its header.
      await modern.client.callTool({ name: 'tenant_echo', arguments: { tenant: 'globex' } });
      expect(sent(4)).toEqual(['{"mcp-param-tenant":"globex"}']);
      expect(lists()).toBe(1);

      // The tool now wants another header: the gateway refuses what the relay learnt, and the
      // relay learns again and sends the call once more (refused, it had not run).
      await admin('PATCH', `/api/v2/adis/${String(tool.id)}`, { input_schema: tenantSchema('Org') });
      const watcher = new Client({ name: 'watcher', version: '1.0.0' });
      await watcher.connect(
        new StreamableHTTPClientTransport(new URL(`${gatewayUrl}/api/v2/mcp/server/${String(aei.api_key)}`)),
      );
      try {
        let marked: unknown;
        for (let tries = 0; tries < 100 && marked !== 'Org'; tries += 1) {
          const listed = (await watcher.listTools()).tools[0]?.inputSchema.properties as
            Record<string, Record<string, unknown>> | undefined;
          marked = listed?.tenant?.['x-mcp-header'];
          if (marked !== 'Org') await sleep(100);
        }
        expect(marked).toBe('Org');
      } finally {
        await watcher.close();
      }
      const third = await modern.client.callTool({ name: 'tenant_echo', arguments: { tenant: 'initech' } });
      expect(resultJson(third)).toBe('tenant initech');
      expect(sent(5)).toEqual(['{"mcp-param-tenant":"initech"}', '{"mcp-param-org":"initech"}']);
      expect(lists()).toBe(2);
    } finally {
      await modern.client.close();
    }
  });

  it('on the wire: server/discover and results as the modern era has them, and its refusals', async () => {
    const run = await runRelay(
      { BINDERY_URL: gatewayUrl, BINDERY_KEY: exposed.apiKey },
      ['vscode'],
      [
        request(1, 'server/discover'),
        request(2, 'tools/list'),
        request(3, 'ping'),
        request(4, 'tools/list', { ...envelope, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }),
      ],
      (lines) => lines.length === 4,
    );
    expect(run.code).toBe(0);
    const answers = new Map(run.stdout.map((line) => JSON.parse(line) as Json).map((m) => [m.id, m]));
    expect(answers.get(1).result).toMatchObject({
      supportedVersions: [MODERN],
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'bindery-gateway' } },
    });
    expect(answers.get(2).result.resultType).toBe('complete');
    expect(answers.get(2).result.tools).toHaveLength(3);
    expect(answers.get(3).error.code).toBe(-32601);
    expect(answers.get(4).error).toMatchObject({
      code: -32022,
      data: { supported: [MODERN], requested: '2099-01-01' },
    });

    // Piped with stdin closed at once, a modern request is still answered before the relay exits.
    const piped = await runRelay(
      { BINDERY_URL: gatewayUrl, BINDERY_KEY: exposed.apiKey },
      ['vscode'],
      [request(5, 'tools/list')],
    );
    expect(piped.code).toBe(0);
    expect(piped.stdout.map((line) => (JSON.parse(line) as Json).result?.resultType)).toEqual(['complete']);
  });
});

describe('bindery-mcp as a process', () => {
  it('writes JSON-RPC lines only to stdout and exits 0 once stdin ends, closing its session', async () => {
    const before = gateway!.gateway.sessions.size;
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const started = Date.now();
    const run = await runRelay(
      { BINDERY_URL: gatewayUrl, BINDERY_KEY: exposed.apiKey },
      ['vscode'],
      [
        initialize,
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { jsonrpc: '2.0', id: 3, method: 'ping' },
      ],
      (lines) => lines.length === 3,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toHaveLength(3);
    const messages = run.stdout.map((line) => JSON.parse(line) as Json);
    for (const message of messages) expect(message.jsonrpc).toBe('2.0');
    expect(messages.map((m) => m.id).sort()).toEqual([1, 2, 3]);
    expect(messages.find((m) => m.id === 2).result.tools).toHaveLength(3);
    // Its log is on stderr, every line prefixed.
    expect(run.stderr).not.toBe('');
    for (const line of run.stderr.trimEnd().split('\n')) expect(line).toMatch(/^bindery-mcp: \[vscode\] /);
    expect(run.stderr).not.toContain(exposed.apiKey);
    expect(Date.now() - started).toBeLessThan(15_000);
    // The session was closed (DELETE) before the exit.
    expect(gateway!.gateway.sessions.size).toBe(before);
  });

  it('answers initialize with the gateway’s own refusal of an unknown key', async () => {
    const run = await runRelay(
      { BINDERY_URL: gatewayUrl, BINDERY_KEY: unusedApiKey() },
      [],
      [
        {
          jsonrpc: '2.0',
          id: 'init',
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'raw', version: '1' },
          },
        },
      ],
      (lines) => lines.length === 1,
    );
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout[0]!) as Json;
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 'init', error: { code: -32001 } });
    expect(answer.error.message).toMatch(/api_key/);
  });

  it('exits 2 without BINDERY_KEY, or with a caller that is not a caller name', async () => {
    const missing = await runRelay({ BINDERY_URL: gatewayUrl }, ['vscode'], []);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toEqual([]);
    expect(missing.stderr).toContain('BINDERY_KEY is not set');
    const badCaller = await runRelay(
      { BINDERY_URL: gatewayUrl, BINDERY_KEY: exposed.apiKey },
      ['VS Code'],
      [],
    );
    expect(badCaller.code).toBe(2);
    expect(badCaller.stdout).toEqual([]);
    expect(badCaller.stderr).toContain('"VS Code" is not a caller name');
  });

  it('--check: exit 1 when the gateway does not answer', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const run = await runRelay({ BINDERY_URL: closed, BINDERY_KEY: exposed.apiKey }, ['--check'], []);
    expect(run.code).toBe(1);
    expect(run.stdout[0]).toBe(`gateway:  ${closed} is unreachable (ECONNREFUSED)`);
    expect(run.stdout.at(-1)).toMatch(/^profile: {2}unknown: /);
  });
});

// Needs the caller entry (personal keys, the caller map, /api/v2/mcp/caller), being added alongside.
describe('bindery-mcp with a personal key (the caller entry)', () => {
  beforeAll(async () => {
    // Without a caller argument the gateway goes by the client's name: the test client's.
    await admin('PUT', '/api/v2/callers/relay-e2e', { aei_id: exposed.aeiId });
  });

  it('bindery-mcp vscode relays to /api/v2/mcp/caller/vscode: the profile vscode maps to', async () => {
    const stdio = await relay({ BINDERY_KEY: personalKey });
    expect(stdio.stderr()).toContain(`relaying stdio to ${gatewayUrl}/api/v2/mcp/caller/vscode`);
    expect((await stdio.client.listTools()).tools.map((t) => t.name)).toContain('find_customers');
    expect(resultJson(await stdio.client.callTool({ name: 'find_customers', arguments: count }))).toEqual(
      expect.any(Number),
    );
    expect(stdio.stderr()).not.toContain(personalKey);
    await stdio.client.close();
  });

  it('bindery-mcp nobody (a caller mapped to nothing) gets the default profile', async () => {
    const stdio = await relay({}, {}, ['nobody']);
    expect(stdio.stderr()).toContain(`relaying stdio to ${gatewayUrl}/api/v2/mcp/caller/nobody`);
    const callers = await admin('GET', '/api/v2/callers');
    const profile = await admin('GET', `/api/v2/aeis/${callers.default_profile.aei_id}`);
    expect(profile.default_profile).toBe(true);
    // The default profile binds nothing yet: no tools, where vscode's profile has several.
    expect((await stdio.client.listTools()).tools).toEqual([]);
    await stdio.client.close();
  });

  it('bindery-mcp without a caller relays to /api/v2/mcp/caller: the gateway goes by the client’s name', async () => {
    const stdio = await relay({ BINDERY_KEY: personalKey }, {}, []);
    expect(stdio.stderr()).toContain(`relaying stdio to ${gatewayUrl}/api/v2/mcp/caller\n`);
    expect((await stdio.client.listTools()).tools.map((t) => t.name)).toContain('find_customers');
    await stdio.client.close();
  });

  it('--check names the profile the caller maps to, and the default one for a caller not mapped', async () => {
    const env = { BINDERY_URL: gatewayUrl, BINDERY_KEY: personalKey };
    const mapped = await runRelay(env, ['vscode', '--check'], []);
    expect(mapped.code).toBe(0);
    expect(mapped.stdout).toContain(`profile:  agent (${exposed.aeiId}), mapped to caller "vscode"`);
    const unmapped = await runRelay(env, ['cursor', '--check'], []);
    expect(unmapped.code).toBe(0);
    expect(unmapped.stdout.join('\n')).toMatch(
      /profile: {2}.+, your default profile \(caller "cursor" is not mapped\)/,
    );
    const none = await runRelay(env, ['--check'], []);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain(`endpoint: ${gatewayUrl}/api/v2/mcp/caller`);
    expect(none.stdout).toContain('key:      a personal key');
    expect(none.stdout.join('\n')).toMatch(/profile: {2}.+, your default profile \(no caller given; /);
  });
});

// Needs the gateway's REST entry (GET /api/v2/rest/tools), being added alongside.
describe('bindery-mcp --check (needs the REST entry)', () => {
  it('says the gateway answers and which profile the key gets; exit 0', async () => {
    const run = await runRelay(
      { BINDERY_URL: gatewayUrl, BINDERY_KEY: exposed.apiKey },
      ['vscode', '--check'],
      [],
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout[0]).toBe(`gateway:  ${gatewayUrl} answers (GET /healthz: 200)`);
    expect(run.stdout.join('\n')).toContain(`profile:  agent (${exposed.aeiId})`);
    expect(run.stdout.join('\n')).toMatch(/tools: {4}3$/m);
    expect(run.stdout).toContain("key:      an exposure's api_key");
    expect(run.stdout.join('\n')).toContain(
      "the exposure of this api_key (the caller only labels the relay's log)",
    );
    const none = await runRelay({ BINDERY_URL: gatewayUrl, BINDERY_KEY: exposed.apiKey }, ['--check'], []);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain(`endpoint: ${gatewayUrl}/api/v2/mcp/server`);
    expect(none.stdout).toContain(`profile:  agent (${exposed.aeiId}), the exposure of this api_key`);
  });
});

/**
 * A stand-in MCP server (the SDK's own, on loopback) for what the gateway never does: requests to
 * the client (roots/list), progress, answering a request of a session it dropped with 404, and
 * dropping the connection of a call (the tool `break`).
 * It offers no standalone stream (GET: 405), so a dropped session shows on the next request.
 */
describe('bindery-mcp with a stand-in MCP server', () => {
  const KEY = 'bnd_key_stand-in';
  let http: HttpServer;
  let url: string;
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const seen = { initializes: 0, cancelled: 0, breaks: 0, headers: [] as IncomingMessage['headers'][] };

  function mcpServer(): Server {
    const server = new Server(
      { name: 'stand-in', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: ['work', 'wait', 'echo'].map((name) => ({ name, inputSchema: { type: 'object' as const } })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      if (request.params.name === 'break') return { content: [] };
      if (request.params.name === 'echo') {
        return { content: [{ type: 'text' as const, text: JSON.stringify(request.params.arguments ?? {}) }] };
      }
      if (request.params.name === 'wait') {
        await new Promise((resolve) => extra.signal.addEventListener('abort', resolve));
        seen.cancelled += 1;
        return { content: [] };
      }
      const progressToken = request.params._meta?.progressToken;
      if (progressToken !== undefined) {
        for (let progress = 1; progress <= 3; progress += 1) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 3, message: `step ${progress}` },
          });
        }
      }
      // A request to the client, on the answer stream of this call. (Its round trip also keeps
      // the answer from sharing a stdout read with the progress: the SDK Client handles
      // notifications a microtask late, and drops progress that comes after its answer.)
      const { roots } = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
      return { content: [{ type: 'text' as const, text: JSON.stringify(roots) }] };
    });
    return server;
  }

  beforeAll(async () => {
    http = createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      req.on('end', async () => {
        seen.headers.push(req.headers);
        if (req.method === 'GET') {
          res.writeHead(405).end();
          return;
        }
        const body = raw === '' ? undefined : (JSON.parse(raw) as unknown);
        // A call of `break` loses its connection; with an idempotency key, only every other one.
        const call = body as { method?: string; params?: { name?: string; _meta?: object } } | undefined;
        if (call?.method === 'tools/call' && call.params?.name === 'break') {
          seen.breaks += 1;
          if (!call.params._meta || seen.breaks % 2 === 0) {
            req.socket.destroy();
            return;
          }
        }
        const id = req.headers['mcp-session-id'];
        let transport = typeof id === 'string' ? transports.get(id) : undefined;
        if (!transport && isInitializeRequest(body)) {
          seen.initializes += 1;
          const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (sessionId) => void transports.set(sessionId, created),
          });
          await mcpServer().connect(created);
          transport = created;
        }
        if (!transport) {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'no such session' } }),
          );
          return;
        }
        await transport.handleRequest(req, res, body);
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const transport of transports.values()) await transport.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });

  it('relays requests to the client and their answers, progress and cancellation; sends the negotiated version', async () => {
    const stdio = await relay({ BINDERY_URL: url, BINDERY_KEY: KEY }, { roots: {} });
    stdio.client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: 'file:///home/ada/project', name: 'project' }],
    }));
    const progress: unknown[] = [];
    const done = await stdio.client.callTool({ name: 'work', arguments: {} }, undefined, {
      onprogress: (p) => void progress.push(p),
    });
    expect(resultJson(done)).toEqual([{ uri: 'file:///home/ada/project', name: 'project' }]);
    expect(progress).toEqual([1, 2, 3].map((p) => ({ progress: p, total: 3, message: `step ${p}` })));

    const controller = new AbortController();
    const waiting = stdio.client.callTool({ name: 'wait', arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await sleep(200);
    controller.abort('changed my mind');
    await expect(waiting).rejects.toThrow();
    await until('notifications/cancelled at the server', () => seen.cancelled === 1);

    // Every request after initialize names the negotiated version; every one carries the key.
    const posts = seen.headers.filter((h) => h['mcp-session-id'] !== undefined);
    expect(posts.length).toBeGreaterThan(3);
    // Both ends are this SDK: they agree on its latest version.
    for (const headers of posts) expect(headers['mcp-protocol-version']).toBe(LATEST_PROTOCOL_VERSION);
    for (const headers of seen.headers) expect(headers.authorization).toBe(`Bearer ${KEY}`);
    expect(stdio.errors).toEqual([]);
    await stdio.client.close();
  });

  it('a request the server answers 404 (session dropped): a new session, the request retried, tools/list_changed', async () => {
    const stdio = await relay({ BINDERY_URL: url, BINDERY_KEY: KEY }, { roots: {} });
    stdio.client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [] }));
    expect((await stdio.client.listTools()).tools).toHaveLength(3);
    const initializes = seen.initializes;
    for (const [id, transport] of transports) {
      transports.delete(id);
      await transport.close();
    }
    expect(resultJson(await stdio.client.callTool({ name: 'work', arguments: {} }))).toEqual([]);
    expect(seen.initializes).toBe(initializes + 1);
    // Only the lists the server declares: tools.
    await until('tools/list_changed', () => stdio.seen.tools === 1);
    await sleep(QUIET_MS);
    expect(stdio.seen).toEqual({ tools: 1, prompts: 0, resources: 0 });
    expect(stdio.errors).toEqual([]);
    await stdio.client.close();
  });

  it('a tools/call whose connection breaks is answered, not sent again (it may have run); one with an idempotency key is', async () => {
    const stdio = await relay({ BINDERY_URL: url, BINDERY_KEY: KEY });
    const broken = await stdio.client.callTool({ name: 'break', arguments: {} }).catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(McpError);
    expect((broken as McpError).message).toContain('it may have been carried out, so it was not sent again');
    expect(seen.breaks).toBe(1);
    const keyed = await stdio.client.callTool({
      name: 'break',
      arguments: {},
      _meta: { 'bindery/idempotency_key': 'k-1' },
    });
    expect(keyed.isError).toBeFalsy();
    expect(seen.breaks).toBe(3);
    expect(stdio.errors).toEqual([]);
    await stdio.client.close();
  });

  it('on the wire, the server of the 2025 era: server/discover from the session, the modern refusals', async () => {
    const run = await runRelay(
      { BINDERY_URL: url, BINDERY_KEY: KEY },
      [],
      [
        request(1, 'server/discover'),
        request(2, 'tools/list'),
        request(3, 'ping'),
        request(4, 'resources/subscribe', envelope),
        request(5, 'tools/list', { ...envelope, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }),
      ],
      (lines) => lines.length === 5,
    );
    expect(run.code).toBe(0);
    const answers = new Map(run.stdout.map((line) => JSON.parse(line) as Json).map((m) => [m.id, m]));
    expect(answers.get(1).result).toEqual({
      supportedVersions: [MODERN],
      capabilities: { tools: {} },
      resultType: 'complete',
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'stand-in', version: '1.0.0' } },
    });
    expect(answers.get(2).result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    expect(answers.get(2).result.tools).toHaveLength(3);
    expect(answers.get(3).error.code).toBe(-32601);
    expect(answers.get(4).error.code).toBe(-32601);
    expect(answers.get(5).error).toMatchObject({
      code: -32022,
      data: { supported: [MODERN], requested: '2099-01-01' },
    });
  });

  it('a modern client, the server of the 2025 era: its requests go on a legacy session, answered modern', async () => {
    const initializes = seen.initializes;
    const cancelled = seen.cancelled;
    const modern = await modernRelay({ BINDERY_URL: url, BINDERY_KEY: KEY }, []);
    try {
      // The relay answered server/discover from the session it opened.
      expect(modern.client.getProtocolEra()).toBe('modern');
      expect(modern.client.getServerVersion()).toMatchObject({ name: 'stand-in' });
      expect(seen.initializes).toBeGreaterThan(initializes);
      expect((await modern.client.listTools()).tools.map((t) => t.name)).toEqual(['work', 'wait', 'echo']);
      const echoed = await modern.client.callTool({ name: 'echo', arguments: { say: 'hi' } });
      expect(resultJson(echoed)).toEqual({ say: 'hi' });

      // A cancel (notifications/cancelled on stdio) reaches the server on the session.
      const controller = new AbortController();
      const waiting = modern.client.callTool({ name: 'wait', arguments: {} }, { signal: controller.signal });
      await sleep(200);
      controller.abort('changed my mind');
      await expect(waiting).rejects.toThrow();
      await until('notifications/cancelled at the server', () => seen.cancelled === cancelled + 1);
      expect(modern.stderr()).toContain('the gateway does not speak MCP 2026-07-28');
    } finally {
      await modern.client.close();
    }
  });
});
