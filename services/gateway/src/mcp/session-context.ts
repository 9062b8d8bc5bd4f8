/**
 * What the capability modules of one session's MCP server share (`capabilities/`): the services
 * they call, the exposure the session serves and what its client was last shown of it, who a
 * request came from, and the client's log stream. Built once per server by `sessionContext`; each
 * capability names the part it needs with a `Pick` of `McpSessionContext`.
 */
import type { LoggingLevel, RequestId, ServerNotification } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { promptsDigest } from './prompts.ts';
import type { ResourceSubscriptions } from './resource-subscriptions.ts';
import { resourcesDigest } from './resources.ts';
import { DEFAULT_LOG_LEVEL, allows, type LogLine } from './tools/call-log.ts';
import type { ProgressiveDeps } from './tools/progressive.ts';

export interface McpServerDeps {
  client: ControlPlaneClient;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
  toolsPageSize: number;
  /** Counts bytes derived from a cached exposure (its tools/list pages) with it in the cache. */
  charge(exposure: Exposure, bytes: number): void;
  /** The exposure as it is now (the cache decides whether that needs the control plane). */
  exposure(): Promise<Exposure>;
  progressive: ProgressiveDeps;
  /** The session id the client sent, for requests served without a session of this replica. */
  sessionIdHint: string | undefined;
  /** The exposure as the session starts: what its lists' list_changed notifications compare with. */
  initial?: Exposure | undefined;
  /** This gateway's resource subscriptions (resources/subscribe needs a session it holds). */
  subscriptions: ResourceSubscriptions;
  /**
   * The level the client hears log messages at from the start: absent, DEFAULT_LOG_LEVEL until it
   * sends `logging/setLevel` (a legacy session); null, none (a modern request that named none).
   */
  logLevel?: LoggingLevel | null;
}

/** Sends a notification on the stream of the request being answered. */
export type Notify = (n: ServerNotification) => Promise<void>;

/**
 * The client's log stream (MCP `notifications/message`): `logging/setLevel` sets its level, and
 * `tools/call-log.ts` says which line is sent at which level.
 */
export interface ClientLog {
  /** The lowest level the client hears; undefined: none (a modern request that named no level). */
  level: LoggingLevel | undefined;
  /** Sends `line` on the request's stream when the client's level lets it through. */
  send(notify: Notify | undefined, line: LogLine): Promise<void>;
}

/** The request a handler answers, as the SDK describes it (its `extra`). */
interface HandlerExtra {
  sessionId?: string | undefined;
  requestId: RequestId;
}

export interface McpSessionContext {
  client: ControlPlaneClient;
  metrics: GatewayMetrics;
  /** The gateway's own log (what the client is told goes through `clientLog`). */
  log: FastifyBaseLogger;
  /** Items per page of every list (tools, prompts, resources). */
  pageSize: number;
  charge: McpServerDeps['charge'];
  progressive: ProgressiveDeps;
  subscriptions: ResourceSubscriptions;
  /**
   * The exposure a request is served from: `known` when the caller already resolved it. The first
   * one a session sees is what its prompt and resource list_changed compare with.
   */
  exposure(known?: Exposure): Promise<Exposure>;
  /** The exposure as it is now, looked up again (what a subscription asks when configs change). */
  resolve(): Promise<Exposure>;
  /**
   * Which of the exposure's prompt and resource lists differ from those this session last saw
   * (both when it is not known what it saw, or the exposure cannot be resolved now); remembers the
   * current ones.
   */
  listsChanged(): Promise<{ prompts: boolean; resources: boolean }>;
  /**
   * The session a request came in (the transport's, else the id the client sent) and the request
   * id the control plane is told: `{session}:{JSON-RPC id}`, `stateless:{id}` without a session.
   */
  requestOf(extra: HandlerExtra): { sessionId: string | undefined; requestId: string };
  clientLog: ClientLog;
}

/** The shared context of a fresh session's capabilities. */
export function sessionContext(deps: McpServerDeps): McpSessionContext {
  // The prompts and resources this session's client was last served, to announce their
  // list_changed only when an invalidation changed them.
  const digestsOf = (exposure: Exposure) => ({
    prompts: promptsDigest(exposure),
    resources: resourcesDigest(exposure),
  });
  let seen: { prompts: string; resources: string } | undefined = deps.initial && digestsOf(deps.initial);
  // Lookups of concurrent invalidations may finish out of order: only the latest one's counts.
  let asked = 0;

  const clientLog: ClientLog = {
    level: deps.logLevel === undefined ? DEFAULT_LOG_LEVEL : (deps.logLevel ?? undefined),
    async send(notify, line) {
      if (!notify || clientLog.level === undefined || !allows(clientLog.level, line.level)) return;
      // Sent on the call's own stream, so it reaches the client before the result does.
      await notify({ method: 'notifications/message', params: line }).catch((error: unknown) =>
        deps.log.debug({ err: error }, 'log message not delivered to the client'),
      );
    },
  };

  return {
    client: deps.client,
    metrics: deps.metrics,
    log: deps.log,
    pageSize: deps.toolsPageSize,
    charge: deps.charge,
    progressive: deps.progressive,
    subscriptions: deps.subscriptions,
    async exposure(known) {
      const exposure = known ?? (await deps.exposure());
      seen ??= digestsOf(exposure);
      return exposure;
    },
    resolve: deps.exposure,
    async listsChanged() {
      const mine = ++asked;
      let now;
      try {
        now = digestsOf(await deps.exposure());
      } catch {
        // Not known: announce both, unless a newer lookup will tell.
        return mine === asked ? { prompts: true, resources: true } : { prompts: false, resources: false };
      }
      if (mine !== asked) return { prompts: false, resources: false };
      const changed = {
        prompts: now.prompts !== seen?.prompts,
        resources: now.resources !== seen?.resources,
      };
      seen = now;
      return changed;
    },
    requestOf(extra) {
      const sessionId = extra.sessionId ?? deps.sessionIdHint;
      return { sessionId, requestId: `${sessionId ?? 'stateless'}:${String(extra.requestId)}` };
    },
    clientLog,
  };
}
