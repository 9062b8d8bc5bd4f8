/**
 * A real control plane for the browser tests (and, when asked, a real gateway beside it):
 * @bindery/test-support's stack, each service its own process; the control plane on a fresh
 * PostgreSQL database (or, with BINDERY_TEST_DB=pglite, a fresh embedded data directory), serving
 * the console's build at /console/. The admin API is driven with fetch for the set-up.
 */
import { startStack, type Json } from '@bindery/test-support';

/** The root admin token, and the gateways' token (tests call tools through its internal executor route). */
export { ADMIN_TOKEN, INTERNAL_TOKEN, type Json } from '@bindery/test-support';

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
  /** Everything the control plane and the gateway process wrote so far (their logs). */
  logs(): string;
  /** Calls the admin API as `token` (root by default); throws on an error status. */
  adminAs(method: string, path: string, body?: unknown, token?: string): Promise<Json>;
  close(): Promise<void>;
}

/**
 * A control plane on a fresh database; with `gateway: true`, a real gateway process beside it
 * (the console's playground calls tools through it).
 */
export async function startControlPlane(
  options: { gateway?: boolean; env?: Record<string, string>; gatewayEnv?: Record<string, string> } = {},
): Promise<ControlPlane> {
  const stack = await startStack({
    purpose: 'console',
    ...(!options.gateway && { gateway: false }),
    controlPlaneEnv: {
      // Users' secrets are encrypted with this key (64 hex digits), on both engines alike.
      BINDERY_SECRET_KEY: '07'.repeat(32),
      // Upstream MCP servers over stdio may run node (the sources test starts one).
      UPSTREAM_STDIO_COMMANDS: 'node',
      ...options.env,
    },
    ...(options.gatewayEnv && { gatewayEnv: options.gatewayEnv }),
  });
  return {
    url: stack.controlPlaneUrl,
    gatewayUrl: stack.gatewayUrl,
    async admin(method, path, body, allowError = false) {
      const answer = await stack.adminRaw(method, path, body);
      if (answer.status >= 400 && !allowError) {
        throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
      return answer;
    },
    adminAs: (method, path, body, token) => stack.admin(method, path, body, token),
    logs: () =>
      stack.controlPlaneOutput() +
      ((stack.gateway as { output?: () => string } | undefined)?.output?.() ?? ''),
    close: () => stack.close(),
  };
}
