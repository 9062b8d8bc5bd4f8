/**
 * The real system for end-to-end tests: the control plane as its own process (tsx
 * src/server.ts) on a fresh PostgreSQL database (or, in the suite's `pglite` project, on a fresh
 * embedded data directory), the gateway in this process, real HTTP between
 * them, and the SDK's MCP Client against the gateway. The control plane can be stopped and started
 * again on the same port and database, or frozen (SIGSTOP) and thawed (SIGCONT): a frozen process
 * keeps its connections open and answers nothing, like a hung server. `close()` and
 * `stopControlPlane()` thaw it first; so does an exit hook, should a test never get that far.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildGateway } from '../../src/app.ts';
import { loadGatewayConfig } from '../../src/config.ts';
import type { Json } from './fixtures.ts';

export const ADMIN_TOKEN = 'bnd_admin_e2e-root-token-0001';
export const INTERNAL_TOKEN = 'e2e-internal-token-0001';
export const OPS_TOKEN = 'e2e-ops-token-000000001';
const CONTROL_PLANE_DIR = fileURLToPath(new URL('../../../control-plane', import.meta.url));
const SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
/** The control plane's database engine, set per vitest project. */
export const engine = process.env.BINDERY_TEST_DB === 'pglite' ? 'pglite' : 'postgres';

/** A fresh database for one stack: its environment for the control plane, and how to drop it. */
async function freshDatabase(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (engine === 'pglite') {
    const dir = await mkdtemp(join(tmpdir(), 'bindery-e2e-'));
    return { env: { BINDERY_DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const database = `bindery_e2e_${randomBytes(5).toString('hex')}`;
  await admin(`CREATE DATABASE "${database}"`);
  const dbUrl = new URL(SERVER_URL);
  dbUrl.pathname = `/${database}`;
  return {
    env: { DATABASE_URL: dbUrl.toString() },
    drop: () => admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`),
  };
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface Stack {
  gateway: FastifyInstance;
  gatewayUrl: string;
  controlPlaneUrl: string;
  /** Calls the control plane's admin API as `token` (root by default); throws on >= 400 unless `allowError`. */
  admin(method: string, path: string, body?: unknown, token?: string): Promise<Json>;
  adminRaw(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; body: Json }>;
  stopControlPlane(): Promise<void>;
  /**
   * Starts it (with `env` over the stack's settings, such as another INTERNAL_TOKEN) and waits
   * until the gateway's /readyz says `ready` (its circuit breaker closed).
   */
  startControlPlane(env?: Record<string, string>): Promise<void>;
  /** SIGSTOP: the process stays, its sockets stay open, nothing answers. */
  freezeControlPlane(): void;
  /** SIGCONT: it answers again (what it received meanwhile included). */
  thawControlPlane(): void;
  /** Polls the gateway's /readyz until its body says `status` (throws after `timeoutMs`). */
  waitForReadiness(status: 'ready' | 'degraded' | 'waiting', timeoutMs?: number): Promise<void>;
  /** Everything the control plane process wrote to stdout and stderr so far (its log). */
  controlPlaneOutput(): string;
  /** The control plane process's pid (undefined while it is stopped). */
  controlPlanePid(): number | undefined;
  /**
   * Starts another gateway on the same control plane (on `port`, or any free one), with `env`
   * over the stack's gateway settings; answers its base URL. It closes with the stack. The control
   * plane tells it of changes only when it is in `moreGatewayUrls` or hears Redis (`REDIS_URL`).
   */
  addGateway(env?: Record<string, string>, port?: number): Promise<string>;
  /** A connected MCP client on a gateway URL path such as `/api/v2/mcp/server/<key>`. */
  connect(path: string, options?: { headers?: Record<string, string> }): Promise<Client>;
  close(): Promise<void>;
}

export interface StackOptions {
  gatewayEnv?: Record<string, string>;
  /** Where the gateway's log lines go (JSON lines); none by default. */
  gatewayLogTo?: NodeJS.WritableStream;
  controlPlaneEnv?: Record<string, string>;
  /** The URL the gateway reaches the control plane at, given the control plane's own (a proxy's, say). */
  gatewayControlPlaneUrl?: (controlPlaneUrl: string) => string;
  /** Gateways the control plane invalidates over HTTP besides the stack's (see `addGateway`). */
  moreGatewayUrls?: string[];
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const database = await freshDatabase();
  const cpPort = await freePort();
  const gwPort = await freePort();
  const controlPlaneUrl = `http://127.0.0.1:${cpPort}`;
  const gatewayUrl = `http://127.0.0.1:${gwPort}`;
  let child: ChildProcess | undefined;
  // The control plane's whole log, over restarts: tests search it (for secrets that must not be there).
  let output = '';
  // Whatever happens to the test, no control plane is left stopped or running behind it.
  const reap = () => {
    if (child && child.exitCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  };
  process.once('exit', reap);

  async function waitForReadiness(status: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      const res = await fetch(`${gatewayUrl}/readyz`);
      last = await res.text();
      if ((JSON.parse(last) as { status: string }).status === status) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`gateway readiness did not become "${status}" within ${timeoutMs} ms: ${last}`);
  }

  async function startControlPlane(env: Record<string, string> = {}): Promise<void> {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      cwd: CONTROL_PLANE_DIR,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(cpPort),
        ...database.env,
        BINDERY_ADMIN_TOKEN: ADMIN_TOKEN,
        INTERNAL_TOKEN,
        OPS_TOKEN,
        GATEWAY_URLS: [gatewayUrl, ...(options.moreGatewayUrls ?? [])].join(','),
        // The answers of new api_keys name this gateway, so tests can connect with them as given.
        GATEWAY_PUBLIC_URL: gatewayUrl,
        BINDERY_SEED_DEMO: 'false',
        LOG_LEVEL: 'info',
        LOG_REQUESTS: 'false',
        ...options.controlPlaneEnv,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let started = '';
      const timer = setTimeout(() => reject(new Error(`control plane did not start:\n${started}`)), 60_000);
      const onData = (chunk: Buffer) => {
        started += chunk.toString();
        output += chunk.toString();
        if (started.includes('Server listening at')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', onData);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`control plane exited with ${code}:\n${started}`));
      });
    });
  }

  async function stopControlPlane(): Promise<void> {
    const proc = child;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      // A stopped process would hold SIGTERM until continued.
      proc.kill('SIGCONT');
      proc.kill('SIGTERM');
    });
    child = undefined;
  }

  const gatewayEnv = (port: number): Record<string, string> => ({
    GATEWAY_PORT: String(port),
    CONTROL_PLANE_URL: options.gatewayControlPlaneUrl?.(controlPlaneUrl) ?? controlPlaneUrl,
    INTERNAL_TOKEN,
    OPS_TOKEN,
    LOG_REQUESTS: 'false',
    ...options.gatewayEnv,
  });
  const gateway = await buildGateway(loadGatewayConfig(gatewayEnv(gwPort)), options.gatewayLogTo ?? false);
  await gateway.listen({ host: '127.0.0.1', port: gwPort });
  const moreGateways: FastifyInstance[] = [];
  const startAndWait = async (env?: Record<string, string>) => {
    await startControlPlane(env);
    await waitForReadiness('ready');
  };
  await startAndWait();

  const clients: Client[] = [];
  const adminRaw = async (method: string, path: string, body?: unknown, token = ADMIN_TOKEN) => {
    const res = await fetch(`${controlPlaneUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  return {
    gateway,
    gatewayUrl,
    controlPlaneUrl,
    adminRaw,
    async admin(method, path, body, token) {
      const res = await adminRaw(method, path, body, token);
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    stopControlPlane,
    startControlPlane: startAndWait,
    controlPlanePid: () => (child && child.exitCode === null ? child.pid : undefined),
    freezeControlPlane: () => child?.kill('SIGSTOP'),
    thawControlPlane: () => child?.kill('SIGCONT'),
    waitForReadiness,
    controlPlaneOutput: () => output,
    async addGateway(env = {}, port) {
      const more = await buildGateway(loadGatewayConfig({ ...gatewayEnv(port ?? 0), ...env }), false);
      moreGateways.push(more);
      return more.listen({ host: '127.0.0.1', port: port ?? 0 });
    },
    async connect(path, opts = {}) {
      const client = new Client({ name: 'bindery-e2e', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${gatewayUrl}${path}`), {
        requestInit: { headers: opts.headers ?? {} },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async close() {
      // A client whose session the test already ended may fail to close; that is not under test.
      for (const client of clients) await client.close().catch(() => undefined);
      child?.kill('SIGCONT');
      for (const more of moreGateways) await more.close();
      await gateway.close();
      await stopControlPlane();
      process.off('exit', reap);
      await database.drop();
    },
  };
}
