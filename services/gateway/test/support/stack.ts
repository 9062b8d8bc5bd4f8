/**
 * The real system for the gateway's end-to-end tests: @bindery/test-support's stack (the control
 * plane as its own process on a fresh database of the run's engine, PostgreSQL or, in the suite's
 * `pglite` project, embedded PGlite) with the gateway in this process, so tests can reach into it
 * (its sessions, its metrics), real HTTP between them, and the SDK's MCP Client against the
 * gateway. The control plane can be stopped and started again on the same port and database, or
 * frozen (SIGSTOP) and thawed (SIGCONT); `close()` thaws it first.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack as startTestStack, type Stack as TestStack } from '@bindery/test-support';
import type { FastifyInstance } from 'fastify';
import { buildGateway } from '../../src/app.ts';
import { loadGatewayConfig } from '../../src/config.ts';

export { ADMIN_TOKEN, INTERNAL_TOKEN, OPS_TOKEN, freePort } from '@bindery/test-support';

export interface Stack extends Omit<TestStack<FastifyInstance>, 'gateway' | 'database' | 'gatewayEnv'> {
  gateway: FastifyInstance;
  /**
   * Starts another gateway on the same control plane (on `port`, or any free one), with `env`
   * over the stack's gateway settings; answers its base URL. It closes with the stack. The control
   * plane tells it of changes only when it is in `moreGatewayUrls` or hears Redis (`REDIS_URL`).
   */
  addGateway(env?: Record<string, string>, port?: number): Promise<string>;
  /** A connected MCP client on a gateway URL path such as `/api/v2/mcp/server/<key>`. */
  connect(path: string, options?: { headers?: Record<string, string> }): Promise<Client>;
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
  const { gatewayLogTo, ...stackOptions } = options;
  const stack = await startTestStack<FastifyInstance>({
    ...stackOptions,
    purpose: 'e2e',
    async gateway({ env, port, release }) {
      const gateway = await buildGateway(loadGatewayConfig(env), gatewayLogTo ?? false);
      await release();
      await gateway.listen({ host: '127.0.0.1', port });
      return { gateway, close: async () => void (await gateway.close()) };
    },
  });
  const moreGateways: FastifyInstance[] = [];
  const clients: Client[] = [];
  return {
    ...stack,
    gateway: stack.gateway!,
    async addGateway(env = {}, port) {
      const more = await buildGateway(loadGatewayConfig({ ...stack.gatewayEnv(port ?? 0), ...env }), false);
      moreGateways.push(more);
      return more.listen({ host: '127.0.0.1', port: port ?? 0 });
    },
    async connect(path, opts = {}) {
      const client = new Client({ name: 'bindery-e2e', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}${path}`), {
        requestInit: { headers: opts.headers ?? {} },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async close() {
      // A client whose session the test already ended may fail to close; that is not under test.
      for (const client of clients) await client.close().catch(() => undefined);
      stack.thawControlPlane();
      for (const more of moreGateways) await more.close();
      await stack.close();
    },
  };
}
