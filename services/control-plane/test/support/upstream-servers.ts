/**
 * Real upstream MCP servers for tests: the stdio script in ./upstream/mcp-server.mjs (run with
 * `node`), the same server over Streamable HTTP on a loopback port, a loopback HTTP server that
 * does not speak MCP, and the count of a process's children from the OS (/proc), not from metrics.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
// @ts-expect-error: a plain ES module of test support, without types.
import { createMcpServer } from './upstream/mcp-server.mjs';

export const UPSTREAM_SCRIPT = fileURLToPath(new URL('./upstream/mcp-server.mjs', import.meta.url));

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

/** The test MCP server over Streamable HTTP (stateful: one server and transport per session). */
export async function httpUpstream(): Promise<HttpUpstream> {
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
          const mcp = createMcpServer(() => {
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
