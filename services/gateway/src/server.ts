/**
 * Starts the gateway and closes it gracefully on SIGINT/SIGTERM: standing SSE streams end, tool
 * calls in flight are answered (for up to SHUTDOWN_GRACE_MS), then sessions and connections close.
 */
import type { AddressInfo } from 'node:net';
import { closeOnSignals, startTracing, tellLauncher } from '@bindery/service-kit';
import { localUrl, unknownSettingWarnings } from '@bindery/service-kit/settings';
import { buildGateway } from './app.ts';
import { GatewayConfigError, loadGatewayConfig, type GatewayConfig } from './config.ts';

let config: GatewayConfig;
try {
  config = loadGatewayConfig(process.env);
} catch (error) {
  if (!(error instanceof GatewayConfigError)) throw error;
  process.stderr.write(`bindery gateway: ${error.message}\n`);
  process.exit(1);
}
// Before the app: its logger names the trace of each line once traces are on.
const tracing = await startTracing(config.tracing, {
  publicEntry: true,
  log: { warn: (details, message) => app.log.warn(details, message) },
});
const app = await buildGateway(config);
app.addHook('onClose', () => tracing.shutdown());
for (const warning of unknownSettingWarnings(process.env)) app.log.warn(warning);
closeOnSignals(app, { graceMs: config.shutdownGraceMs });
await app.listen({ host: config.host, port: config.port });
tellLauncher({ service: 'gateway', url: localUrl(config.host, (app.server.address() as AddressInfo).port) });
