/**
 * The two services as processes: where each lives in the repository, and the settings every test
 * start shares. Each binds port 0 unless given a port (a restart on the port it had), and reports
 * the port it got; tests and benchmarks add their own settings over these.
 */
import { fileURLToPath } from 'node:url';
import { startService, type ServiceOptions, type ServiceProcess } from './service-process.ts';

/** The control plane's folder (services/control-plane). */
export const CONTROL_PLANE_DIR = fileURLToPath(new URL('../../../services/control-plane', import.meta.url));
/** The gateway's folder (services/gateway). */
export const GATEWAY_DIR = fileURLToPath(new URL('../../../services/gateway', import.meta.url));

/** Root admin, internal (gateway to control plane) and ops (control plane to gateway) tokens of tests. */
export const ADMIN_TOKEN = 'bnd_admin_test-root-token-0001';
export const INTERNAL_TOKEN = 'test-internal-token-0001';
export const OPS_TOKEN = 'test-ops-token-000000001';

export interface ProcessOptions extends Pick<ServiceOptions, 'nodeArgs' | 'timeoutMs' | 'entry'> {
  /** The port to bind (0, any free one, by default). */
  port?: number;
}

/**
 * `services/control-plane` as a process on the database `env` names (DATABASE_URL or
 * BINDERY_DATA_DIR), with `env` over the tests' tokens, no demo seed and no request log.
 */
export function startControlPlane(
  env: Record<string, string>,
  options: ProcessOptions = {},
): Promise<ServiceProcess> {
  return startService({
    dir: CONTROL_PLANE_DIR,
    entry: options.entry,
    nodeArgs: options.nodeArgs,
    timeoutMs: options.timeoutMs,
    env: {
      PORT: String(options.port ?? 0),
      BINDERY_ADMIN_TOKEN: ADMIN_TOKEN,
      INTERNAL_TOKEN,
      OPS_TOKEN,
      BINDERY_SEED_DEMO: 'false',
      LOG_REQUESTS: 'false',
      ...env,
    },
  });
}

/**
 * `services/gateway` as a process in front of the control plane at `controlPlaneUrl`, with `env`
 * over the tests' tokens and no request log.
 */
export function startGateway(
  controlPlaneUrl: string,
  env: Record<string, string> = {},
  options: ProcessOptions = {},
): Promise<ServiceProcess> {
  return startService({
    dir: GATEWAY_DIR,
    entry: options.entry,
    nodeArgs: options.nodeArgs,
    timeoutMs: options.timeoutMs,
    env: {
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(options.port ?? 0),
      CONTROL_PLANE_URL: controlPlaneUrl,
      INTERNAL_TOKEN,
      OPS_TOKEN,
      LOG_REQUESTS: 'false',
      ...env,
    },
  });
}
