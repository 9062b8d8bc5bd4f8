/**
 * What an MCP server built for one request (a session's, a stateless legacy request's, or a modern
 * request's handler table) is given: the services, the progressive catalog's state, and the
 * exposure as the cache has it now for the request's credential (a key revoked meanwhile is a
 * ControlPlaneError, which the call reports as unanswered). Shared by the routes and the fast lane.
 */
import type { FastifyBaseLogger } from 'fastify';
import { credentialName, type Flavor } from '../auth/admission.ts';
import type { GatewayConfig } from '../config.ts';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import { ControlPlaneError } from '../control-plane/errors.ts';
import {
  LookupsLimitedError,
  type Credential,
  type Exposure,
  type ExposureCache,
} from '../control-plane/exposure-cache.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { McpServerDeps } from './session-context.ts';
import type { SessionRegistry } from './sessions.ts';
import type { SessionStateStore } from './tools/progressive-sessions.ts';

/** The gateway's services a request's server uses. */
export interface ServerServices {
  config: GatewayConfig;
  cache: ExposureCache;
  client: ControlPlaneClient;
  sessions: SessionRegistry;
  metrics: GatewayMetrics;
  store: SessionStateStore;
  executeLimiter: RateLimiter;
}

/** Who the request is and where it came from. */
export interface RequestIdentity {
  credential: Credential;
  /** The credential's hash (the cache's key). */
  hash: string;
  /** The hash sessions and execute budgets count by (a personal key's, for its callers). */
  owner: string;
  flavor: Flavor;
  ip: string | undefined;
  log: FastifyBaseLogger;
  /** The session id the client sent, when it sent one. */
  sessionIdHint: string | undefined;
}

export function requestServerDeps(services: ServerServices, who: RequestIdentity): McpServerDeps {
  const { config, cache, client, sessions, metrics, store, executeLimiter } = services;
  const { credential, hash, owner, flavor, ip, log } = who;
  return {
    progressive: {
      store,
      executeLimiter,
      keyHash: owner,
      concurrency: config.progressive.concurrency,
      itemTimeoutMs: config.progressive.itemTimeoutMs,
    },
    sessionIdHint: who.sessionIdHint,
    subscriptions: sessions.subscriptions,
    client,
    metrics,
    log,
    toolsPageSize: config.toolsPageSize,
    charge: (exposure: Exposure, bytes: number) => cache.charge(exposure, bytes),
    exposure: async () => {
      let now: Exposure;
      try {
        now = (await cache.resolve(credential, hash, flavor, ip)).exposure;
      } catch (error) {
        if (!(error instanceof LookupsLimitedError)) throw error;
        throw new ControlPlaneError(error.message, 'not-sent');
      }
      if (now.kind === 'unknown') {
        const what = `this ${credentialName(credential)}`;
        throw new ControlPlaneError(`${what} is no longer valid`, 'not-sent');
      }
      return now;
    },
  };
}
