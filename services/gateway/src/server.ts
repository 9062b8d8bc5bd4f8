/** Starts the gateway and closes it gracefully on SIGINT/SIGTERM. */
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
const app = await buildGateway(config);
let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    void app.close().then(() => process.exit(0));
  });
}
await app.listen({ host: config.host, port: config.port });
