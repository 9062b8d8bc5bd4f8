/**
 * A stack for end-to-end tests: the control plane as its own process on a fresh database of the
 * run's engine, and a gateway in front of it (a process of its own, or one the caller starts, in
 * its own process say), each told of the other. The control plane binds any free port and says
 * which; the gateway's port is held from the moment it is chosen until the gateway binds it, so
 * test files running side by side never race for a port (should one be taken all the same, the
 * stack starts again on new ports). The control plane can be stopped and started again on the
 * same port and database, or frozen (SIGSTOP) and thawed (SIGCONT), like a hung server.
 */
import { adminCall, type Json } from './admin.ts';
import { freshDatabase, type TestDatabase } from './database.ts';
import { reservePort } from './ports.ts';
import type { ServiceProcess } from './service-process.ts';
import { ADMIN_TOKEN, INTERNAL_TOKEN, OPS_TOKEN, startControlPlane, startGateway } from './services.ts';

/** Where a gateway a stack starts listens, and its settings (GATEWAY_PORT, CONTROL_PLANE_URL, tokens). */
export interface GatewaySettings {
  port: number;
  env: Record<string, string>;
  /** Lets the port go: call it right before the gateway listens on it. */
  release(): Promise<void>;
}

/** Starts a stack's gateway and answers it with a way to close it. */
export type GatewayStarter<G> = (
  settings: GatewaySettings,
) => Promise<{ gateway: G; close(): Promise<void> }>;

/** The gateway as a process of services/gateway: the default of `startStack`. */
export const gatewayProcess: GatewayStarter<ServiceProcess> = async ({ env, port, release }) => {
  await release();
  const gateway = await startGateway(env.CONTROL_PLANE_URL ?? '', env, { port });
  return { gateway, close: async () => void (await gateway.stop()) };
};

export interface StackOptions<G> {
  /** How the gateway runs: `gatewayProcess` by default; `false` for none. */
  gateway?: GatewayStarter<G> | false;
  /** The gateway's settings over the stack's. */
  gatewayEnv?: Record<string, string>;
  /** The control plane's settings over the stack's. */
  controlPlaneEnv?: Record<string, string>;
  /** The URL the gateway reaches the control plane at, given the control plane's own (a proxy's, say). */
  gatewayControlPlaneUrl?: (controlPlaneUrl: string) => string;
  /** Gateways the control plane invalidates over HTTP besides the stack's. */
  moreGatewayUrls?: string[];
  /** A word in the database's name (see `freshDatabase`). */
  purpose?: string;
}

export interface Stack<G = ServiceProcess> {
  /** The gateway (undefined when started with `gateway: false`). */
  gateway: G | undefined;
  /**
   * The gateway's URL; without a gateway, the one the control plane names in its answers (its
   * GATEWAY_PUBLIC_URL), where nothing listens.
   */
  gatewayUrl: string;
  controlPlaneUrl: string;
  database: TestDatabase;
  /** Calls the control plane's admin API as `token` (root by default); throws on >= 400. */
  admin(method: string, path: string, body?: unknown, token?: string): Promise<Json>;
  /** Calls the admin API as `token` (root by default), whatever the status. */
  adminRaw(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; body: Json }>;
  /** The settings of another gateway on this stack's control plane, on `port`. */
  gatewayEnv(port: number): Record<string, string>;
  /** SIGTERM to the control plane; resolves once it is gone. */
  stopControlPlane(): Promise<void>;
  /**
   * Starts it again on its port and database (with `env` over the stack's settings) and, with a
   * gateway, waits until the gateway's /readyz says `ready` (its circuit breaker closed).
   */
  startControlPlane(env?: Record<string, string>): Promise<void>;
  /** SIGSTOP: the process stays, its sockets stay open, nothing answers. */
  freezeControlPlane(): void;
  /** SIGCONT: it answers again (what it received meanwhile included). */
  thawControlPlane(): void;
  /** The control plane's pid (undefined while it is stopped). */
  controlPlanePid(): number | undefined;
  /** Everything the control plane wrote to stdout and stderr so far, over restarts (its log). */
  controlPlaneOutput(): string;
  /** Polls the gateway's /readyz until its body says `status` (throws after `timeoutMs`). */
  waitForReadiness(status: 'ready' | 'degraded' | 'waiting', timeoutMs?: number): Promise<void>;
  /** Closes the gateway, stops the control plane and drops the database. */
  close(): Promise<void>;
}

const ATTEMPTS = 3;

function addressInUse(error: unknown): boolean {
  return (
    (error as { code?: unknown }).code === 'EADDRINUSE' ||
    (error instanceof Error && error.message.includes('EADDRINUSE'))
  );
}

/** Polls `${gatewayUrl}/readyz` until its body says `status`. */
export async function waitForReadiness(
  gatewayUrl: string,
  status: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = await fetch(`${gatewayUrl}/readyz`).then(
      (res) => res.text(),
      (error: unknown) => String(error),
    );
    try {
      if ((JSON.parse(last) as { status?: unknown }).status === status) return;
    } catch {
      // Not JSON yet (nothing listening): poll again.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`gateway readiness did not become "${status}" within ${timeoutMs} ms: ${last}`);
}

/**
 * Starts a stack: a fresh database, the control plane on it, and the gateway, ready (its /readyz
 * says `ready`) before this resolves.
 */
export async function startStack<G = ServiceProcess>(options: StackOptions<G> = {}): Promise<Stack<G>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= ATTEMPTS || !addressInUse(error)) throw error;
    }
  }
}

async function startOnce<G>(options: StackOptions<G>): Promise<Stack<G>> {
  const starter =
    options.gateway === undefined ? (gatewayProcess as GatewayStarter<unknown>) : options.gateway;
  const database = await freshDatabase({ purpose: options.purpose ?? 'stack' });
  const reserved = starter ? await reservePort() : undefined;
  const gatewayUrl = reserved
    ? `http://127.0.0.1:${reserved.port}`
    : (options.controlPlaneEnv?.GATEWAY_PUBLIC_URL ?? 'http://127.0.0.1:4100');
  const controlPlaneEnv: Record<string, string> = {
    ...database.env,
    ...(reserved && {
      GATEWAY_URLS: [gatewayUrl, ...(options.moreGatewayUrls ?? [])].join(','),
      // The answers of new api_keys name this gateway, so tests can connect with them as given.
      GATEWAY_PUBLIC_URL: gatewayUrl,
    }),
    ...(!reserved && options.moreGatewayUrls && { GATEWAY_URLS: options.moreGatewayUrls.join(',') }),
    ...options.controlPlaneEnv,
  };
  // Every start of the control plane, the one running last: tests read the log of all of them.
  const started: ServiceProcess[] = [];
  let port = 0;
  let gateway: { gateway: unknown; close(): Promise<void> } | undefined;
  const current = () => started.at(-1);
  const stopControlPlane = async () => {
    await current()?.stop();
  };
  const cleanUp = async () => {
    await reserved?.release();
    await gateway?.close();
    await stopControlPlane();
    await database.drop();
  };

  try {
    const first = await startControlPlane(controlPlaneEnv);
    started.push(first);
    port = first.port;
  } catch (error) {
    await cleanUp();
    throw error;
  }
  const controlPlaneUrl = `http://127.0.0.1:${port}`;
  const gatewayEnv = (gatewayPort: number): Record<string, string> => ({
    GATEWAY_PORT: String(gatewayPort),
    CONTROL_PLANE_URL: options.gatewayControlPlaneUrl?.(controlPlaneUrl) ?? controlPlaneUrl,
    INTERNAL_TOKEN,
    OPS_TOKEN,
    LOG_REQUESTS: 'false',
    ...options.gatewayEnv,
  });
  try {
    if (starter && reserved) {
      gateway = await starter({
        port: reserved.port,
        env: gatewayEnv(reserved.port),
        release: reserved.release,
      });
      await waitForReadiness(gatewayUrl, 'ready');
    }
  } catch (error) {
    await cleanUp();
    throw error;
  }

  const adminRaw = (method: string, path: string, body?: unknown, token = ADMIN_TOKEN) =>
    adminCall(controlPlaneUrl, token, method, path, body);
  return {
    gateway: gateway?.gateway as G | undefined,
    gatewayUrl,
    controlPlaneUrl,
    database,
    adminRaw,
    async admin(method, path, body, token) {
      const res = await adminRaw(method, path, body, token);
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    gatewayEnv,
    stopControlPlane,
    async startControlPlane(env = {}) {
      started.push(await startControlPlane({ ...controlPlaneEnv, ...env }, { port }));
      if (gateway) await waitForReadiness(gatewayUrl, 'ready');
    },
    freezeControlPlane: () => current()?.freeze(),
    thawControlPlane: () => current()?.thaw(),
    controlPlanePid: () => {
      const running = current();
      return running?.running() ? running.pid : undefined;
    },
    controlPlaneOutput: () => started.map((p) => p.output()).join(''),
    waitForReadiness: (status, timeoutMs) => waitForReadiness(gatewayUrl, status, timeoutMs),
    async close() {
      // A frozen control plane would answer the gateway's goodbye never.
      current()?.thaw();
      await cleanUp();
    },
  };
}
