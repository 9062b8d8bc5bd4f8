/**
 * The control plane's upstream pools, one per spec fingerprint, and what ties servers to them:
 * which servers share a pool, when a pool stops (its last server deleted or changed, or the app
 * closing), and when a server's tools, resources and prompts are synced again (its upstream said
 * they changed, debounced; every UPSTREAM_REFRESH_S while it runs). Servers created by another
 * control plane are read from the database the first time a call needs them.
 */
import type {
  CallToolResult,
  CompleteRequest,
  CompleteResult,
  GetPromptResult,
  ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Dispatcher } from 'undici';
import type { UpstreamServer as UpstreamServerRow } from '../../generated/prisma/client.ts';
import type { DomainContext } from '../../domain/context.ts';
import { ResolvedSecrets, resolveSecrets, secretReferences } from '../../secrets/secret-references.ts';
import { DomainError } from '../../domain/errors.ts';
import {
  UpstreamPool,
  type CallOptions,
  type TaskRef,
  type ToolCallAsks,
  type ToolCallInput,
  type ToolCallTask,
  type PoolMeter,
  type PoolState,
  type ResolvedTransport,
} from './pool.ts';
import type { AnswerCaps, InputRequiredAnswer, UpstreamInput } from './instance.ts';
import { resolvedLimits, type OAuthSpec, type TransportSpec, type UpstreamSpec } from './spec.ts';
import type { UpstreamOAuth } from './oauth/broker.ts';
import type { OAuthTarget } from './oauth/target.ts';
import type { UpstreamTask } from './upstream-tasks.ts';
import type { UpstreamLimits } from '@bindery/contracts';

export interface UpstreamLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  debug(details: object, message: string): void;
}

export interface RegistryOptions {
  outbound: Dispatcher;
  log: UpstreamLog;
  /** Executables stdio servers may run (UPSTREAM_STDIO_COMMANDS). */
  stdioCommands: readonly string[];
  /** How often running servers' tools are listed again, in ms (0: never). */
  refreshMs: number;
  /** What an upstream may send at most, per message and per request. */
  caps: AnswerCaps;
  /** How long tools/list_changed notifications are gathered before one sync. */
  debounceMs?: number;
  meter?: (fingerprint: string) => PoolMeter;
  /** How often running instances are pinged (30 s unless a test sets it). */
  pingEveryMs?: number;
}

/** What the registry keeps of a server (its row's fields the pools need). */
export interface KnownServer {
  id: string;
  userId: string;
  name: string;
  fingerprint: string;
  spec: UpstreamSpec;
}

/** The spec stored in a server row, as the pools use it. */
export function specOfRow(row: UpstreamServerRow): UpstreamSpec {
  const stored = row.spec as Record<string, unknown>;
  const transport: TransportSpec =
    row.transport === 'stdio'
      ? {
          transport: 'stdio',
          command: String(stored.command),
          args: (stored.args as string[] | undefined) ?? [],
          env: (stored.env as Record<string, string> | undefined) ?? {},
          cwd: (stored.cwd as string | null | undefined) ?? null,
        }
      : {
          transport: 'http',
          url: String(stored.url),
          headers: (stored.headers as Record<string, string> | undefined) ?? {},
          ...(typeof stored.oauth === 'object' &&
            stored.oauth !== null && {
              oauth: oauthOfStored(row.id, stored.oauth as Record<string, unknown>),
            }),
        };
  return {
    transport,
    exposeTools: row.exposeTools,
    sessionMode: row.sessionMode === 'per_session' ? 'per_session' : 'shared',
    limits: resolvedLimits(row.limits as UpstreamLimits),
  };
}

export function knownServer(row: UpstreamServerRow): KnownServer {
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    fingerprint: row.fingerprint,
    spec: specOfRow(row),
  };
}

function oauthOfStored(serverId: string, stored: Record<string, unknown>): OAuthSpec {
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return {
    server: serverId,
    clientId: text(stored.clientId),
    clientSecret: text(stored.clientSecret),
    scope: text(stored.scope),
  };
}

/** The secret names a transport's env or header values (and its OAuth client secret) reference. */
export function transportSecretNames(transport: TransportSpec): string[] {
  const values =
    transport.transport === 'stdio'
      ? Object.values(transport.env)
      : [
          ...Object.values(transport.headers),
          ...(transport.oauth?.clientSecret ? [transport.oauth.clientSecret] : []),
        ];
  return [...new Set(values.flatMap((v) => secretReferences(v)))];
}

const DEFAULT_DEBOUNCE_MS = 500;
/** How often lapsed resource watches are ended. */
const WATCH_SWEEP_MS = 5_000;

const watchKey = (serverId: string, uri: string) => `${serverId}\u0000${uri}`;
/** How long a server read from the database is used before it is read again (other control planes' changes). */
const SERVER_FRESH_MS = 5_000;

export type SyncRunner = (serverId: string, reason: string) => Promise<unknown>;

export class UpstreamRegistry {
  private readonly pools = new Map<string, UpstreamPool>();
  private readonly servers = new Map<string, KnownServer>();
  /** When each server was last read from the database (or saved by this process). */
  private readonly readAt = new Map<string, number>();
  private readonly pending = new Map<string, NodeJS.Timeout>();
  /** Per server, the end of the last sync started: the next one starts after it. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Servers being synced now, and those asked to sync again once that one ends (with why). */
  private readonly syncing = new Set<string>();
  private readonly syncAgain = new Map<string, string>();
  private readonly refreshTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private statusWrites: Promise<void> = Promise.resolve();
  /** Set by the app: how a server's tools are synced (upstream-servers.ts). */
  syncer: SyncRunner | undefined;
  /** Set by the app: the OAuth client of servers that require OAuth (upstream-oauth.ts). */
  oauth: UpstreamOAuth | undefined;
  /**
   * Set by the app: told when a resource some gateway watches changed upstream (it tells the
   * gateways, which notify their subscribers).
   */
  resourceUpdated: ((serverId: string, uri: string) => void) | undefined;
  /** Resources gateways watch (resources/subscribe of an upstream's resource), until each lease ends. */
  private readonly watches = new Map<string, { serverId: string; uri: string; until: number }>();
  private readonly watchTimer: NodeJS.Timeout;

  constructor(
    private readonly ctx: () => DomainContext,
    readonly options: RegistryOptions,
  ) {
    if (options.refreshMs > 0) {
      this.refreshTimer = setInterval(() => this.refreshRunning(), options.refreshMs);
      this.refreshTimer.unref();
    }
    this.watchTimer = setInterval(() => void this.endLapsedWatches(), WATCH_SWEEP_MS);
    this.watchTimer.unref();
  }

  /**
   * Watches `uri` of a server for `ttlMs` (a gateway renews it while a client subscribes): the
   * server's shared instance subscribes to it, and its `notifications/resources/updated` go to
   * `resourceUpdated`. Answers false when the server offers no subscriptions.
   */
  async watchResource(serverId: string, uri: string, ttlMs: number): Promise<boolean> {
    const server = await this.known(serverId);
    if (!(await this.poolOf(server).subscribeResource(server.name, uri))) return false;
    this.watches.set(watchKey(serverId, uri), { serverId, uri, until: Date.now() + ttlMs });
    return true;
  }

  /** Leases no gateway renewed: their upstream subscriptions end (unless another server's pool shares them). */
  private async endLapsedWatches(): Promise<void> {
    const now = Date.now();
    for (const [key, watch] of this.watches) {
      if (watch.until > now) continue;
      this.watches.delete(key);
      const server = this.servers.get(watch.serverId);
      if (!server) continue;
      const shared = this.serversOf(server.fingerprint).some((s) =>
        this.watches.has(watchKey(s.id, watch.uri)),
      );
      if (!shared) await this.pools.get(server.fingerprint)?.unsubscribeResource(watch.uri);
    }
  }

  /** Remembers a server (created, changed, or read from the database) and returns its pool. */
  remember(server: KnownServer): UpstreamPool {
    const before = this.servers.get(server.id);
    this.servers.set(server.id, server);
    this.readAt.set(server.id, Date.now());
    if (before && before.fingerprint !== server.fingerprint) this.releaseFingerprint(before.fingerprint);
    return this.poolOf(server);
  }

  /**
   * A person's OAuth connection to the server changed (connected, disconnected): its instances stop
   * (their upstream sessions began with the old tokens) and, once connected, its tools are synced
   * with the new ones.
   */
  async connectionChanged(serverId: string, connected: boolean): Promise<void> {
    const server = this.servers.get(serverId);
    if (server) {
      const pool = this.pools.get(server.fingerprint);
      this.pools.delete(server.fingerprint);
      await pool?.close();
    }
    if (connected) this.runSync(serverId, 'oauth connection');
    else {
      await this.ctx()
        .prisma.upstreamServer.updateMany({
          where: { id: serverId },
          data: {
            status: 'needs_connection',
            lastError: 'its owner disconnected their account: connect it again in the console',
          },
        })
        .catch(() => undefined);
    }
  }

  /** Forgets a deleted server; its pool stops when no other server shares it. */
  async forget(serverId: string): Promise<void> {
    const before = this.servers.get(serverId);
    this.servers.delete(serverId);
    this.readAt.delete(serverId);
    clearTimeout(this.pending.get(serverId));
    this.pending.delete(serverId);
    this.syncAgain.delete(serverId);
    if (before) await this.releaseFingerprint(before.fingerprint);
  }

  /** The ids of the known servers sharing this server's pool (itself excluded). */
  sharing(server: Pick<KnownServer, 'id' | 'fingerprint'>): string[] {
    return [...this.servers.values()]
      .filter((s) => s.fingerprint === server.fingerprint && s.id !== server.id)
      .map((s) => s.id);
  }

  pool(fingerprint: string): UpstreamPool | undefined {
    return this.pools.get(fingerprint);
  }

  /** Every pid of every running stdio child (tests and the admin API count them). */
  get pids(): number[] {
    return [...this.pools.values()].flatMap((p) => p.pids);
  }

  get poolCount(): number {
    return this.pools.size;
  }

  /** A tool call on a server's pool; the server is read from the database if this process has not seen it. */
  async callTool(
    serverId: string,
    tool: string,
    args: Record<string, unknown>,
    call: CallOptions & { input?: ToolCallInput | undefined } = {},
  ): Promise<CallToolResult | ToolCallAsks | ToolCallTask> {
    const server = await this.known(serverId);
    return this.poolOf(server).callTool(server.name, tool, args, call);
  }

  /** tasks/get, tasks/update or tasks/cancel of a task the server made (UpstreamPool.task). */
  async task(
    serverId: string,
    method: 'tasks/get' | 'tasks/update' | 'tasks/cancel',
    ref: TaskRef,
    inputResponses: Record<string, unknown> | undefined,
    call: CallOptions = {},
  ): Promise<UpstreamTask | undefined> {
    const server = await this.known(serverId);
    const childProcess = server.spec.transport.transport === 'stdio';
    return this.poolOf(server).task(server.name, method, ref, inputResponses, childProcess, call);
  }

  /** resources/read on a server's pool (the caller checked the URI is one the server listed). */
  async readResource(
    serverId: string,
    uri: string,
    call: CallOptions & { input?: UpstreamInput | undefined } = {},
  ): Promise<ReadResourceResult | InputRequiredAnswer> {
    const server = await this.known(serverId);
    return this.poolOf(server).readResource(server.name, uri, call);
  }

  /** prompts/get on a server's pool, by the prompt's upstream name. */
  async getPrompt(
    serverId: string,
    name: string,
    args: Record<string, string>,
    call: CallOptions & { input?: UpstreamInput | undefined } = {},
  ): Promise<GetPromptResult | InputRequiredAnswer> {
    const server = await this.known(serverId);
    return this.poolOf(server).getPrompt(server.name, name, args, call);
  }

  /** completion/complete on a server's pool (for a prompt, by its upstream name). */
  async complete(
    serverId: string,
    params: CompleteRequest['params'],
    call: CallOptions = {},
  ): Promise<CompleteResult> {
    const server = await this.known(serverId);
    return this.poolOf(server).complete(server.name, params, call);
  }

  /**
   * A server as this process knows it, read again from the database when that is older than
   * SERVER_FRESH_MS: a change or a delete made through another control plane reaches this one
   * within that time (a delete stops this one's pool for it too).
   */
  async known(serverId: string): Promise<KnownServer> {
    const cached = this.servers.get(serverId);
    const readAt = this.readAt.get(serverId) ?? 0;
    if (cached && Date.now() - readAt < SERVER_FRESH_MS) return cached;
    const row = await this.ctx().prisma.upstreamServer.findUnique({ where: { id: serverId } });
    if (!row) {
      if (cached) await this.forget(serverId);
      throw new DomainError(
        'NOT_FOUND',
        `upstream server ${serverId} was deleted; remove or rebind this tool`,
        {
          upstream_server_id: serverId,
        },
      );
    }
    const server = knownServer(row);
    this.remember(server);
    return server;
  }

  /**
   * Asks for a sync of this server soon (debounced): its upstream said its tools, resources or
   * prompts changed (a sync lists all three).
   */
  scheduleSync(serverId: string, reason: string): void {
    if (this.closed || this.pending.has(serverId)) return;
    const timer = setTimeout(() => {
      this.pending.delete(serverId);
      this.runSync(serverId, reason);
    }, this.options.debounceMs ?? DEFAULT_DEBOUNCE_MS);
    timer.unref();
    this.pending.set(serverId, timer);
  }

  /**
   * Runs `work` (a sync of the server) once every sync of it started before has ended, whoever
   * started it (the admin API, a spec change, a list change announced): listings land in the
   * order they were taken, never an older one over a newer one.
   */
  serialized<T>(serverId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(serverId) ?? Promise.resolve();
    const run = previous.then(work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(serverId, tail);
    void tail.then(() => {
      if (this.chains.get(serverId) === tail) this.chains.delete(serverId);
    });
    return run;
  }

  /**
   * One sync of a server at a time: one asked for while another runs waits for it, and any number
   * of such asks make one more sync (a server announcing changes without end costs one sync after
   * another, never several at once, and an older listing never lands after a newer one).
   */
  private runSync(serverId: string, reason: string): void {
    if (this.closed || !this.syncer) return;
    if (this.syncing.has(serverId)) {
      this.syncAgain.set(serverId, reason);
      return;
    }
    this.syncing.add(serverId);
    this.syncer(serverId, reason)
      .catch((error: unknown) =>
        this.options.log.warn({ err: error, upstream_server_id: serverId, reason }, 'upstream sync failed'),
      )
      .finally(() => {
        this.syncing.delete(serverId);
        const again = this.syncAgain.get(serverId);
        if (again === undefined) return;
        this.syncAgain.delete(serverId);
        this.runSync(serverId, again);
      });
  }

  /** Syncs the servers whose pool has an instance running (idle servers are synced when they start). */
  private refreshRunning(): void {
    for (const server of this.servers.values()) {
      if ((this.pools.get(server.fingerprint)?.instanceCount ?? 0) > 0) this.runSync(server.id, 'refresh');
    }
  }

  private poolOf(server: KnownServer): UpstreamPool {
    const existing = this.pools.get(server.fingerprint);
    if (existing) return existing;
    const fingerprint = server.fingerprint;
    const log = this.options.log;
    const pool: UpstreamPool = new UpstreamPool({
      fingerprint,
      limits: server.spec.limits,
      caps: this.options.caps,
      perSession: server.spec.sessionMode === 'per_session',
      ...(this.options.pingEveryMs !== undefined && { pingEveryMs: this.options.pingEveryMs }),
      outbound: this.options.outbound,
      transport: () => this.resolveTransport(server),
      events: {
        toolsChanged: () => {
          for (const s of this.serversOf(fingerprint)) this.scheduleSync(s.id, 'tools/list_changed');
        },
        catalogChanged: (list) => {
          for (const s of this.serversOf(fingerprint)) this.scheduleSync(s.id, `${list}/list_changed`);
        },
        resourceUpdated: (uri) => {
          for (const s of this.serversOf(fingerprint)) {
            if (this.watches.has(watchKey(s.id, uri))) this.resourceUpdated?.(s.id, uri);
          }
        },
        stateChanged: (state, lastError) => this.stateChanged(fingerprint, state, lastError),
        stderr: (line) => log.debug({ fingerprint: fingerprint.slice(0, 12), line }, 'upstream stderr'),
        ...(this.options.meter && { meter: this.options.meter(fingerprint) }),
      },
    });
    if (this.closed) void pool.close();
    this.pools.set(fingerprint, pool);
    return pool;
  }

  private serversOf(fingerprint: string): KnownServer[] {
    return [...this.servers.values()].filter((s) => s.fingerprint === fingerprint);
  }

  /**
   * The transport with the owner's secrets filled into env values or headers, and their redaction;
   * for a server that requires OAuth, the owner's tokens (a person who has not connected fails
   * here, before anything is sent).
   */
  private async resolveTransport(server: KnownServer): Promise<ResolvedTransport> {
    const transport = server.spec.transport;
    const secrets = await resolveSecrets(this.ctx(), server.userId, transportSecretNames(transport));
    const fill = (values: Record<string, string>) =>
      Object.fromEntries(Object.entries(values).map(([k, v]) => [k, secrets.fill(v)]));
    const redacting = {
      redact: (text: string) => secrets.redact(text),
      redactJson: <T>(value: T) => secrets.redactJson(value),
    };
    if (transport.transport === 'stdio')
      return { transport: { ...transport, env: fill(transport.env) }, ...redacting };
    const resolved = { ...transport, headers: fill(transport.headers) };
    if (!transport.oauth) return { transport: resolved, ...redacting };
    const oauth = this.oauth;
    if (!oauth) {
      throw new DomainError(
        'NOT_CONFIGURED',
        `upstream server "${server.name}" requires OAuth, which this control plane does not run`,
      );
    }
    const target = oauthTarget(server, transport.oauth, (value) => secrets.fill(value));
    // An upstream may echo the token it was sent: the person's tokens (those held now: a refresh
    // changes them) are taken out like secrets, in every form a secret is.
    const tokens = () => new ResolvedSecrets(oauth.heldSecrets(target));
    return {
      transport: resolved,
      authProvider: await oauth.authProvider(target),
      authFailure: (error) => oauth.authFailure(target, error),
      redact: (text) => tokens().redact(secrets.redact(text)),
      redactJson: (value) => tokens().redactJson(secrets.redactJson(value)),
    };
  }

  /** Writes a pool's state onto its servers' rows (for the admin API); a failed write is only logged. */
  private stateChanged(fingerprint: string, state: PoolState, lastError: string | null): void {
    const ids = this.serversOf(fingerprint).map((s) => s.id);
    if (ids.length === 0 || this.closed) return;
    // One after the other, so an older state never lands after a newer one.
    this.statusWrites = this.statusWrites.then(() =>
      this.ctx()
        .prisma.upstreamServer.updateMany({ where: { id: { in: ids } }, data: { status: state, lastError } })
        .then(
          () => undefined,
          (error: unknown) =>
            this.options.log.debug({ err: error }, 'could not record the state of an upstream server'),
        ),
    );
  }

  /** Settles once the pools' state changes so far are written (a sync writes its own after them). */
  statusWritten(): Promise<void> {
    return this.statusWrites;
  }

  private async releaseFingerprint(fingerprint: string): Promise<void> {
    if (this.serversOf(fingerprint).length > 0) return;
    const pool = this.pools.get(fingerprint);
    this.pools.delete(fingerprint);
    await pool?.close();
  }

  /** Stops every pool: every child is killed and waited for. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.refreshTimer);
    clearInterval(this.watchTimer);
    this.watches.clear();
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.close()));
    await this.statusWrites;
  }
}

/** What the OAuth broker needs of a server that requires OAuth, its client secret filled in. */
export function oauthTarget(
  server: Pick<KnownServer, 'id' | 'name' | 'userId' | 'spec'>,
  oauth: OAuthSpec,
  fill: (value: string) => string,
): OAuthTarget {
  const transport = server.spec.transport;
  return {
    serverId: server.id,
    name: server.name,
    userId: server.userId,
    url: transport.transport === 'http' ? transport.url : '',
    clientId: oauth.clientId,
    clientSecret: oauth.clientSecret === null ? null : fill(oauth.clientSecret),
    scope: oauth.scope,
  };
}
