/**
 * Starts the control plane: config from the environment, database opened and migrated, root token
 * ensured, then listen; SIGINT/SIGTERM close everything gracefully.
 */
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { openDatabase } from './db/database.ts';
import { ensureRootToken } from './domain/users.ts';

let config: Config;
try {
  config = loadConfig(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`bindery control plane: ${error.message}\n`);
  process.exit(1);
}
const database = await openDatabase(
  config.databaseUrl
    ? { kind: 'postgres', url: config.databaseUrl }
    : { kind: 'pglite', dataDir: config.dataDir },
);
const app = await buildApp({
  config,
  domain: {
    prisma: database.prisma,
    listener: { configChanged: (ids) => app.log.debug({ aei_ids: ids }, 'exposure config changed') },
  },
});
app.log.info(
  {
    database: database.kind,
    ...(database.kind === 'pglite' && { data_dir: config.dataDir }),
    migrated: database.migrated,
  },
  'database ready',
);
const generated = await ensureRootToken(database.prisma, config.adminToken);
if (generated) {
  // Printed once, on the console only (not in the structured log): it is never shown again.
  process.stdout.write(
    `\n  Root admin token (shown once, store it now): ${generated}\n` +
      '  Set BINDERY_ADMIN_TOKEN to choose your own.\n\n',
  );
}

let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    void app
      .close()
      .then(() => database.close())
      .then(() => process.exit(0));
  });
}

await app.listen({ host: config.host, port: config.port });
