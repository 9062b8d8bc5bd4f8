/**
 * Starts the control plane: config from the environment, database opened and migrated, root token
 * ensured, the demo seeded on a fresh database, then listen; SIGINT/SIGTERM close everything
 * gracefully (requests in flight first, for up to SHUTDOWN_GRACE_MS).
 */
import type { AddressInfo } from 'node:net';
import { redactUrlPassword } from '@bindery/contracts';
import {
  closeOnSignals,
  startTracing,
  tellLauncher,
  underLauncher,
  type ControlPlaneStarted,
  type Tracing,
} from '@bindery/service-kit';
import { localUrl, unknownSettingWarnings } from '@bindery/service-kit/settings';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { DataDirLockedError } from './db/data-dir-lock.ts';
import { openDatabase, type Database } from './db/database.ts';
import { openSecretKeyring } from './secrets/secret-key-file.ts';
import { mcpUrl } from './exposure/client-configs.ts';
import { existingDemo, seedDemo, wantsDemo } from './demo.ts';
import { ensureRootToken } from './accounts/users.ts';
import { ExposureInvalidation } from './exposure/exposure-invalidation.ts';

// Start-up refusals (a bad setting, a data directory another process owns) are one line on
// stderr and exit code 1, no stack trace.
let config: Config;
let database: Database;
let secretKeys: Awaited<ReturnType<typeof openSecretKeyring>>;
let tracing: Tracing;
try {
  config = loadConfig(process.env);
  // Before the database and the app: Prisma's queries and the app's log lines join the traces.
  tracing = await startTracing(config.tracing, {
    outgoingRequests: true,
    log: { warn: (details, message) => app.log.warn(details, message) },
    instrumentations: async () => {
      const { PrismaInstrumentation } = await import('@prisma/instrumentation');
      return [new PrismaInstrumentation()];
    },
  });
  database = await openDatabase(
    config.databaseUrl
      ? { kind: 'postgres', url: config.databaseUrl }
      : { kind: 'pglite', dataDir: config.dataDir },
  );
  // After the database: the data directory is this process's now (its lock is held).
  secretKeys = await openSecretKeyring({
    secretKey: config.secretKey,
    secretOldKeys: config.secretOldKeys,
    dataDir: config.databaseUrl ? undefined : config.dataDir,
  }).catch(async (error: unknown) => {
    await database.close();
    throw error;
  });
} catch (error) {
  if (!(error instanceof ConfigError || error instanceof DataDirLockedError)) throw error;
  process.stderr.write(`bindery control plane: ${error.message}\n`);
  process.exit(1);
}
const app = await buildApp({
  config,
  engine: database.kind,
  pool: database.pool,
  sql: database.sql,
  // The first long query should not wait for a worker thread to start.
  warmQueryWorkers: true,
  warmCustomToolWorkers: true,
  domain: {
    prisma: database.prisma,
    // Forwards to the invalidation below, which logs through this app's logger. Nothing changes an
    // exposure, and nothing writes a table's data, before it exists: the app does not listen yet
    // and the demo seed tells no one.
    listener: {
      configChanged: (ids) => invalidation.configChanged(ids),
      tableChanged: (tableId, version) => invalidation.tableChanged(tableId, version),
      secretsChanged: (userId) => invalidation.secretsChanged(userId),
      resourceUpdated: (serverId, uri) => invalidation.resourceUpdated(serverId, uri),
    },
    keyring: secretKeys.keyring,
  },
});
for (const warning of unknownSettingWarnings(process.env)) app.log.warn(warning);
app.addHook('onClose', () => tracing.shutdown());
const invalidation = new ExposureInvalidation({
  gatewayUrls: config.gatewayUrls,
  opsToken: config.opsToken,
  redisUrl: config.redisUrl,
  log: app.log.child({ component: 'invalidation' }),
});
if (config.gatewayUrls.length > 0 || config.redisUrl !== undefined) {
  app.log.info(invalidation.targets, 'gateways are told about exposure changes');
} else {
  app.log.info('no GATEWAY_URLS or REDIS_URL: gateways see exposure changes only when their cache expires');
}
app.log.info(
  {
    database: database.kind,
    ...(database.kind === 'pglite' && { data_dir: config.dataDir }),
    migrated: database.migrated,
  },
  'database ready',
);
if (secretKeys.generated) {
  app.log.info(
    { key_file: secretKeys.keyFile },
    'secret key generated (BINDERY_SECRET_KEY unset); back it up',
  );
} else if (!secretKeys.keyring) {
  app.log.warn('no BINDERY_SECRET_KEY: secrets cannot be stored or used until it is set');
}
const generated = await ensureRootToken(database.prisma, config.adminToken);
// Under `pnpm start` the launcher prints the root token and the demo's URL in its banner (once);
// started any other way, this process prints them itself, on the console only (never in the
// structured log): neither is ever shown again.
const launched = underLauncher();
if (generated && !launched) {
  process.stdout.write(
    `\n  Root admin token (shown once, store it now): ${generated}\n` +
      '  Set BINDERY_ADMIN_TOKEN to choose your own.\n\n',
  );
}
let demo: ControlPlaneStarted['demo'];
if (wantsDemo(config.seedDemo, database.kind)) {
  // A brand-new exposure is in no gateway's cache yet, so the seed has nothing to invalidate (and
  // the gateways may still be starting).
  const seeded = await seedDemo({ ...app.domain, listener: { configChanged: () => {} } });
  if (seeded) {
    app.log.info({ aei_id: seeded.aeiId, tools: seeded.toolNames }, 'demo exposure seeded');
    const url = mcpUrl(config.gatewayPublicUrl, seeded.apiKey);
    demo = { aeiId: seeded.aeiId, tools: seeded.toolNames.length, mcpUrl: url };
    if (!launched) {
      process.stdout.write(
        `  Demo MCP server "Demo agent" (${seeded.toolNames.length} tools on a sample CRM; shown once, it holds the api_key):\n` +
          `  MCP URL: ${url}\n` +
          '  Connect: run `npx @modelcontextprotocol/inspector`, pick transport "Streamable HTTP" and paste the URL.\n\n',
      );
    }
  }
}
if (launched && demo === undefined) demo = await existingDemo(database.prisma);

// Requests in flight (tool calls, writes, their audit rows) finish before the database closes.
closeOnSignals(app, {
  graceMs: config.shutdownGraceMs,
  afterClose: async () => {
    await invalidation.close();
    await database.close();
  },
});

await app.listen({ host: config.host, port: config.port });
tellLauncher({
  service: 'control-plane',
  url: localUrl(config.host, (app.server.address() as AddressInfo).port),
  database: database.kind,
  data: database.kind === 'pglite' ? config.dataDir : redactUrlPassword(config.databaseUrl ?? ''),
  ...(generated && { rootToken: generated }),
  ...(demo && { demo }),
});
