/**
 * The control plane's configuration: read from the environment once at start, validated, and
 * passed down. Nothing else reads `process.env`.
 */
import { resolve } from 'node:path';

export interface Config {
  host: string;
  port: number;
  /** PostgreSQL URL; when absent the embedded PGlite database in `dataDir` is used. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** The root admin token to install at start; when absent one is generated once and printed. */
  adminToken: string | undefined;
  bodyLimitBytes: number;
  logLevel: string;
  /** Log every request and response (LOG_REQUESTS=false turns it off, e.g. for benchmarks). */
  logRequests: boolean;
  /** The gateways' credential for `/internal/*`; without it the internal API refuses every call. */
  internalToken: string | undefined;
  /** Largest tool answer, in bytes of JSON (RESULT_TOO_LARGE above). */
  maxResultBytes: number;
  /** Budget of the parsed-context cache, in bytes of JSON (0 turns it off). */
  contextCacheBytes: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** Builds the config from an environment (normally `process.env`); throws ConfigError on bad values. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const adminToken = env.BINDERY_ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('BINDERY_ADMIN_TOKEN must be at least 16 characters long');
  }
  const internalToken = env.INTERNAL_TOKEN || undefined;
  if (internalToken !== undefined && internalToken.length < 16) {
    throw new ConfigError('INTERNAL_TOKEN must be at least 16 characters long');
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 4000, 0, 65535),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: resolve(env.BINDERY_DATA_DIR || '.bindery'),
    adminToken,
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    logLevel: env.LOG_LEVEL || 'info',
    logRequests: env.LOG_REQUESTS !== 'false',
    internalToken,
    maxResultBytes: integer(env, 'RESULT_LIMIT_BYTES', 1_000_000, 1024, 256 * 1024 * 1024),
    contextCacheBytes: integer(env, 'CONTEXT_CACHE_MB', 64, 0, 64 * 1024) * 1024 * 1024,
  };
}
