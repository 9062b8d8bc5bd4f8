/**
 * node-redis's `createClient`, with the library loaded on the first call rather than at start-up:
 * loading it (and the command modules it pulls in) cost a control plane's start 0.15-0.2 s of CPU
 * and of time to listen, which a deployment without `REDIS_URL`, the default, paid for nothing.
 * The library is CommonJS, so `require` loads it synchronously where a client is built.
 */
import { createRequire } from 'node:module';
import type * as Redis from 'redis';

const require = createRequire(import.meta.url);
let redis: typeof Redis | undefined;

/** `createClient` of the `redis` package (same options, same client type). */
export const createClient = ((...args: Parameters<typeof Redis.createClient>) =>
  (redis ??= require('redis') as typeof Redis).createClient(...args)) as typeof Redis.createClient;
