/**
 * The gateway's configuration, read from the environment once at start and passed down.
 */
export interface GatewayConfig {
  host: string;
  port: number;
  /** Where the control plane's internal API lives. */
  controlPlaneUrl: string;
  logLevel: string;
}

/** Builds the config from an environment (normally `process.env`); throws on bad values. */
export function loadGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const port = Number(env.GATEWAY_PORT || 4100);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`GATEWAY_PORT must be an integer from 0 to 65535, got "${env.GATEWAY_PORT}"`);
  }
  return {
    host: env.GATEWAY_HOST || env.HOST || '127.0.0.1',
    port,
    controlPlaneUrl: env.CONTROL_PLANE_URL || 'http://127.0.0.1:4000',
    logLevel: env.LOG_LEVEL || 'info',
  };
}
