/**
 * What tests and benchmarks run against, started one way for every package: databases of either
 * engine, the control plane and the gateway as processes, stacks of them, and the admin API.
 */
export { adminCall, type Json } from './admin.ts';
export {
  ADMIN_DATABASE_URL,
  databaseUrl,
  freshDatabase,
  testEngine,
  withAdmin,
  withConnection,
  type DatabaseOptions,
  type Engine,
  type TestDatabase,
} from './database.ts';
export { resultJson, twoTableExposure, unusedApiKey, type AdminApi, type Exposed } from './exposures.ts';
export { startBalancer, type Balancer } from './balancer.ts';
export { crashEach, type Crash, type CrashOptions } from './crashes.ts';
export {
  checkLedger,
  disruption,
  ledgerExposure,
  startLoad,
  type Attempt,
  type Disruption,
  type Ledger,
  type LedgerCheck,
  type LoadOptions,
  type LoadRun,
} from './ledger-load.ts';
export { readMetrics, sample, type MetricsReading } from './metrics.ts';
export { freePort, reservePort, type ReservedPort } from './ports.ts';
export { startReplicas, type Replicas, type ReplicasOptions } from './replicas.ts';
export {
  reapAll,
  runToExit,
  startService,
  type ServiceOptions,
  type ServiceProcess,
} from './service-process.ts';
export {
  ADMIN_TOKEN,
  CONTROL_PLANE_DIR,
  GATEWAY_DIR,
  INTERNAL_TOKEN,
  OPS_TOKEN,
  startControlPlane,
  startGateway,
  type ProcessOptions,
} from './services.ts';
export {
  gatewayProcess,
  startStack,
  waitForReadiness,
  type GatewaySettings,
  type GatewayStarter,
  type Stack,
  type StackOptions,
} from './stack.ts';
export { oauthTokens, type OAuthTokens } from './oauth.ts';
