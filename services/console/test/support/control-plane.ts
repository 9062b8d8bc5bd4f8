/**
 * A real control plane for the browser tests (and, when asked, a real gateway beside it): each
 * `tsx src/server.ts` as its own process; the control plane on a fresh
 * PostgreSQL database (or, with BINDERY_TEST_DB=pglite, a fresh embedded data directory), serving
 * the console's build at /console/. The admin API is driven with fetch for the set-up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ADMIN_TOKEN = 'bnd_admin_console-test-root-token-01';
/** The gateways' token of the control plane: tests call tools through its internal executor route. */
export const INTERNAL_TOKEN = 'console-test-internal-token-01';
/** The control plane's token for a gateway's cache invalidation. */
const OPS_TOKEN = 'console-test-ops-token-000001';
const CONTROL_PLANE_DIR = fileURLToPath(new URL('../../../control-plane', import.meta.url));
const GATEWAY_DIR = fileURLToPath(new URL('../../../gateway', import.meta.url));
const SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const engine = process.env.BINDERY_TEST_DB === 'pglite' ? 'pglite' : 'postgres';

// Answers are arbitrary JSON; tests read the fields they need.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface ControlPlane {
  url: string;
  /** The gateway's URL (a process only when started with `gateway: true`). */
  gatewayUrl: string;
  /** Calls the admin API as root; throws on an error status unless `allowError`. */
  admin(
    method: string,
    path: string,
    body?: unknown,
    allowError?: boolean,
  ): Promise<{ status: number; body: Json }>;
  close(): Promise<void>;
}

async function sql(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

async function freshDatabase(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (engine === 'pglite') {
    const dir = await mkdtemp(join(tmpdir(), 'bindery-console-'));
    return { env: { BINDERY_DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const database = `bindery_console_${randomBytes(5).toString('hex')}`;
  await sql(`CREATE DATABASE "${database}"`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  return {
    env: { DATABASE_URL: url.toString() },
    drop: () => sql(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`),
  };
}

async function freePort(): Promise<number> {
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

interface Service {
  close(): Promise<void>;
}

/**
 * `tsx src/server.ts` of a service as its own process, ready once `{url}/readyz` answers (the log
 * level keeps "listening" lines out); killed if the test process exits first.
 */
async function spawnService(dir: string, url: string, env: Record<string, string>): Promise<Service> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', LOG_REQUESTS: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const reap = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', reap);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${dir} exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      reap();
      throw new Error(`${dir} did not start:\n${output}`);
    }
    const ready = await fetch(`${url}/readyz`).then(
      (answer) => answer.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    async close() {
      process.removeListener('exit', reap);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/**
 * A control plane on a fresh database; with `gateway: true`, a real gateway process beside it
 * (the console's playground calls tools through it).
 */
export async function startControlPlane(options: { gateway?: boolean } = {}): Promise<ControlPlane> {
  const database = await freshDatabase();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gatewayPort = options.gateway ? await freePort() : 4100;
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const controlPlane = await spawnService(CONTROL_PLANE_DIR, url, {
    PORT: String(port),
    ...database.env,
    BINDERY_ADMIN_TOKEN: ADMIN_TOKEN,
    INTERNAL_TOKEN,
    GATEWAY_PUBLIC_URL: gatewayUrl,
    ...(options.gateway && { GATEWAY_URLS: gatewayUrl, OPS_TOKEN }),
    BINDERY_SEED_DEMO: 'false',
    // Users' secrets are encrypted with this key (64 hex digits), on both engines alike.
    BINDERY_SECRET_KEY: '07'.repeat(32),
    // Upstream MCP servers over stdio may run node (the sources test starts one).
    UPSTREAM_STDIO_COMMANDS: 'node',
  });
  let gateway: Service | undefined;
  try {
    gateway = options.gateway
      ? await spawnService(GATEWAY_DIR, gatewayUrl, {
          GATEWAY_HOST: '127.0.0.1',
          GATEWAY_PORT: String(gatewayPort),
          CONTROL_PLANE_URL: url,
          INTERNAL_TOKEN,
          OPS_TOKEN,
        })
      : undefined;
  } catch (error) {
    // A gateway that did not start leaves nothing behind: its control plane and database go too.
    await controlPlane.close();
    await database.drop();
    throw error;
  }
  return {
    url,
    async admin(method, path, body, allowError = false) {
      const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const answer = await fetch(`${url}${path}`, {
        method,
        headers,
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await answer.text();
      const parsed = text === '' ? undefined : JSON.parse(text);
      if (answer.status >= 400 && !allowError) {
        throw new Error(`${method} ${path} answered ${answer.status}: ${text}`);
      }
      return { status: answer.status, body: parsed };
    },
    gatewayUrl,
    async close() {
      await gateway?.close();
      await controlPlane.close();
      await database.drop();
    },
  };
}
