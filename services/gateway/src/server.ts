/** Starts the gateway and closes it gracefully on SIGINT/SIGTERM. */
import { buildGateway } from './app.ts';
import { loadGatewayConfig } from './config.ts';

const config = loadGatewayConfig(process.env);
const app = await buildGateway(config);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().then(() => process.exit(0)));
}
await app.listen({ host: config.host, port: config.port });
