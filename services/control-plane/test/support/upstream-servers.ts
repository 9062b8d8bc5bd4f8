/**
 * Real upstream MCP servers for tests: the stdio script in ./upstream/mcp-server.mjs (run with
 * `node`), the same server over Streamable HTTP on a loopback port (both of the 2025 era only), a
 * server of the 2026-07-28 era only (./upstream/modern-server.mjs, over stdio and HTTP), a loopback
 * HTTP server that does not speak MCP, and the count of a process's children from the OS (/proc),
 * not from metrics.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
// @ts-expect-error: a plain ES module of test support, without types.
import { createMcpServer } from './upstream/mcp-server.mjs';
// @ts-expect-error: a plain ES module of test support, without types.
import { modernHandler } from './upstream/modern-server.mjs';

export const UPSTREAM_SCRIPT = fileURLToPath(new URL('./upstream/mcp-server.mjs', import.meta.url));
export const MODERN_UPSTREAM_SCRIPT = fileURLToPath(new URL('./upstream/modern-server.mjs', import.meta.url));

/** The body of a stdio upstream server of the 2026-07-28 era only (`node`). */
export function modernStdioServerBody(name: string) {
  return { name, transport: 'stdio', command: 'node', args: [MODERN_UPSTREAM_SCRIPT] };
}

/**
 * The modern-only test server over HTTP (the v2 SDK's handler with `legacy: 'reject'`: no
 * session, an `initialize` refused); `methods` lists the JSON-RPC methods POSTed, in order.
 * `handlerOf`: another modern server's handler (tasks-server.mjs's, say).
 */
export async function modernHttpUpstream(handlerOf: () => unknown = modernHandler): Promise<{
  url: string;
  methods(): string[];
  close(): Promise<void>;
}> {
  const handler = handlerOf() as {
    fetch(request: Request): Promise<Response>;
    close(): Promise<void>;
  };
  const methods: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        if (body.length > 0) {
          const method = (JSON.parse(body.toString('utf8')) as { method?: unknown }).method;
          if (typeof method === 'string') methods.push(method);
        }
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers)) {
          if (typeof value === 'string') headers.set(name, value);
        }
        // A client that goes away ends the exchange (a listen stream's, too).
        const gone = new AbortController();
        res.on('close', () => gone.abort());
        const answer = await handler.fetch(
          new Request(`http://127.0.0.1${req.url ?? '/'}`, {
            method: req.method ?? 'GET',
            headers,
            signal: gone.signal,
            ...(body.length > 0 && { body }),
          }),
        );
        res.writeHead(answer.status, Object.fromEntries(answer.headers));
        // Streamed as it comes: a listen stream answers event by event and does not end.
        if (answer.body) for await (const chunk of answer.body) res.write(chunk);
        res.end();
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods: () => [...methods],
    async close() {
      await handler.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The body of a stdio upstream server running the test script (`node`). */
export function stdioServerBody(name: string, env: Record<string, string> = {}, extra: object = {}) {
  return { name, transport: 'stdio', command: 'node', args: [UPSTREAM_SCRIPT], env, ...extra };
}

/** `parent`'s child processes from /proc: pid, state (`Z`: ended, not yet waited for), command line. */
function childrenOf(parent: number): { pid: number; state: string; cmdline: string }[] {
  const children: { pid: number; state: string; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== parent) continue;
      children.push({
        pid: Number(entry),
        state: fields[0] ?? '',
        cmdline: readFileSync(`/proc/${entry}/cmdline`, 'utf8'),
      });
    } catch {
      // The process ended while being read.
    }
  }
  return children;
}

/** The pids of `parent`'s living children whose command line mentions the test script. */
export function upstreamChildren(parent = process.pid): number[] {
  return childrenOf(parent)
    .filter((c) => c.state !== 'Z' && c.cmdline.includes('mcp-server.mjs'))
    .map((c) => c.pid);
}

/** Zombie children of `parent` (ended, never waited for): there must be none. */
export function zombieChildren(parent = process.pid): number[] {
  return childrenOf(parent)
    .filter((c) => c.state === 'Z')
    .map((c) => c.pid);
}

/** Polls `probe` until `ok` holds of its value or `ms` pass; answers the last value. */
export async function until<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean,
  ms = 10_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until `parent` has `count` living test-upstream children and no zombie; answers both. */
export async function settledChildren(count: number, parent = process.pid) {
  const living = await until(
    () => upstreamChildren(parent).length,
    (n) => n === count,
  );
  const zombies = await until(
    () => zombieChildren(parent),
    (z) => z.length === 0,
  );
  return { living, zombies };
}

export interface HttpUpstream {
  url: string;
  /** Sessions opened so far. */
  sessions(): number;
  close(): Promise<void>;
}

/**
 * The test MCP server over Streamable HTTP (stateful: one server and transport per session);
 * `create` makes another server of the SDK's (transparent-server.mjs, say) for each session.
 */
export async function httpUpstream(
  create: (onCrash: () => void) => {
    connect(transport: StreamableHTTPServerTransport): Promise<void>;
  } = createMcpServer,
): Promise<HttpUpstream> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let opened = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const body = raw === '' ? undefined : (JSON.parse(raw) as unknown);
        const sessionId = req.headers['mcp-session-id'];
        let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
        if (!transport) {
          if (typeof sessionId === 'string') {
            res.writeHead(404).end();
            return;
          }
          const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => {
              transports.set(id, created);
              opened += 1;
            },
          });
          transport = created;
          const mcp = create(() => {
            const id = created.sessionId;
            if (id) transports.delete(id);
            void created.close();
          });
          await mcp.connect(transport);
        }
        await transport.handleRequest(req, res, body);
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessions: () => opened,
    async close() {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The test MCP server over the legacy HTTP+SSE transport only: `GET /sse` opens the event stream,
 * `POST /messages?sessionId=` carries messages, and a POST to `/sse` (what a Streamable HTTP client
 * tries first) is 405, as such servers answer.
 */
export async function sseUpstream(): Promise<{ url: string; streams(): number; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  let opened = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      opened += 1;
      res.on('close', () => transports.delete(transport.sessionId));
      void createMcpServer(() => void transport.close()).connect(transport);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const transport = transports.get(url.searchParams.get('sessionId') ?? '');
      if (!transport) return void res.writeHead(404).end();
      void transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(405, { allow: 'GET' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    streams: () => opened,
    async close() {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback HTTP server that answers every request with a web page: not an MCP server. */
export async function notMcpServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>hello</body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** How a flooding server misbehaves: what it answers without end. */
export type FloodMode =
  /** `tools/call` answers an event stream whose one line never ends. */
  | 'call-sse-line'
  /** `tools/call` answers an event stream of small, well-formed log notifications without end. */
  | 'call-sse-events'
  /** `initialize` answers an event stream whose one line never ends. */
  | 'init-sse-line'
  /** `initialize` answers a JSON body that never ends (chunked, no length). */
  | 'init-json'
  /** `initialize` answers a JSON body whose Content-Length says 2 GB. */
  | 'init-json-length'
  /** `initialize` is never answered (the request stays open). */
  | 'init-silent';

export interface FloodingUpstream {
  url: string;
  /** Bytes written to flooding answers so far. */
  sent(): number;
  /** Flooding answers started, and those whose connection the client closed. */
  floods(): { started: number; closed: number };
  /** The method of every JSON-RPC message received, in order. */
  methods(): string[];
  close(): Promise<void>;
}

/**
 * A loopback HTTP server speaking just enough MCP (JSON-RPC over POST, JSON answers) to complete
 * the handshake and list one tool, `flood`, then answering the request `mode` names without end,
 * as fast as the connection takes it, until the client closes the connection.
 */
export async function floodingUpstream(mode: FloodMode): Promise<FloodingUpstream> {
  let sent = 0;
  let started = 0;
  let closed = 0;
  const methods: string[] = [];
  const line = Buffer.alloc(64 * 1024, 'x');
  const event = Buffer.from(
    `event: message\ndata: ${JSON.stringify({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', data: 'y'.repeat(1000) },
    })}\n\n`,
  );
  /** Writes `head`, then `chunk` again and again while the connection lasts (waiting for drain). */
  const flood = (
    res: ServerResponse,
    status: number,
    headers: Record<string, string>,
    head: string,
    chunk: Buffer,
  ) => {
    started += 1;
    res.on('close', () => (closed += 1));
    res.writeHead(status, headers);
    res.write(head);
    const pump = () => {
      while (!res.destroyed && !res.writableEnded) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    pump();
  };
  const json = (res: ServerResponse, body: unknown) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number; method?: string };
      methods.push(message.method ?? '(response)');
      if (message.id === undefined) return void res.writeHead(202).end();
      const sse = { 'content-type': 'text/event-stream' };
      switch (message.method) {
        case 'initialize':
          if (mode === 'init-silent') return;
          if (mode === 'init-sse-line') return flood(res, 200, sse, 'event: message\ndata: ', line);
          if (mode === 'init-json') {
            return flood(
              res,
              200,
              { 'content-type': 'application/json' },
              '{"jsonrpc":"2.0","id":0,"result":"',
              line,
            );
          }
          if (mode === 'init-json-length') {
            const headers = { 'content-type': 'application/json', 'content-length': String(2 * 1024 ** 3) };
            return flood(res, 200, headers, '{"jsonrpc":"2.0","id":0,"result":"', line);
          }
          return json(res, {
            jsonrpc: '2.0',
            id: message.id,
            result: {
              protocolVersion: '2025-06-18',
              capabilities: { tools: {}, logging: {} },
              serverInfo: { name: 'flooding-upstream', version: '1.0.0' },
            },
          });
        case 'tools/list':
          return json(res, {
            jsonrpc: '2.0',
            id: message.id,
            result: {
              tools: [
                { name: 'flood', description: 'Answers without end.', inputSchema: { type: 'object' } },
              ],
            },
          });
        case 'tools/call':
          if (mode === 'call-sse-events') return flood(res, 200, sse, '', event);
          return flood(res, 200, sse, 'event: message\ndata: ', line);
        default:
          return json(res, { jsonrpc: '2.0', id: message.id, result: {} });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sent: () => sent,
    floods: () => ({ started, closed }),
    methods: () => [...methods],
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A process's resident memory now and at its peak since the last reset, in bytes (from /proc). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Resets a process's peak resident memory to what it holds now (`/proc/PID/clear_refs`). */
export function resetPeakMemory(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/**
 * Asks `url` every `everyMs` from a process of its own, so the time it measures is the server's
 * alone, not the test process's (which may itself be busy, e.g. pumping a flood at the server).
 * `ready` settles once it asks (its first request, which sets up its HTTP client, is not counted);
 * `stop()` ends it and answers the slowest answer seen, in ms (a failed one counts as Infinity),
 * and how many it counted.
 */
export function healthProber(
  url: string,
  everyMs = 25,
): { ready: Promise<void>; stop(): Promise<{ slowestMs: number; probes: number }> } {
  const script = `
    let slowest = 0, probes = 0, stopping = false;
    process.stdin.on('data', () => { stopping = true; });
    process.stdin.on('end', () => { stopping = true; });
    (async () => {
      await fetch(${JSON.stringify(url)}).then((res) => res.arrayBuffer()).catch(() => {});
      process.stdout.write('ready\\n');
      while (!stopping) {
        const started = performance.now();
        try {
          const res = await fetch(${JSON.stringify(url)});
          await res.arrayBuffer();
          slowest = Math.max(slowest, res.ok ? performance.now() - started : Infinity);
        } catch { slowest = Infinity; }
        probes += 1;
        await new Promise((r) => setTimeout(r, ${everyMs}));
      }
      process.stdout.write(JSON.stringify({ slowest: Number.isFinite(slowest) ? slowest : -1, probes }));
    })();
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('ready\n')) onReady();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    ready,
    async stop() {
      child.stdin.end('stop');
      await exited;
      const { slowest, probes } = JSON.parse(out.slice(out.indexOf('ready\n') + 6)) as {
        slowest: number;
        probes: number;
      };
      return { slowestMs: slowest < 0 ? Infinity : slowest, probes };
    },
  };
}
