/**
 * Upstream servers that require OAuth (decision 079): the control plane is the OAuth client of the
 * upstream's authorization server, per person. A person connects their own account in the console
 * (authorization code with PKCE, the state bound to the browser that started it); their tokens are
 * sealed with the secrets' keyring, refreshed before they expire, revoked on disconnect, and sent
 * only to the upstream URL they were obtained for. The agent's own credentials are never passed on
 * (the MCP security guidance's "token passthrough").
 *
 * The OAuth work itself is the MCP SDK's client (`auth()`: RFC 9728 and RFC 8414/OpenID discovery,
 * Client ID Metadata Documents, dynamic registration, PKCE, RFC 8707 resource, RFC 9207 `iss`,
 * refresh, issuer binding; sdk-provider.ts is its view of our state); this is the storage and the
 * flows around it.
 */
import { randomBytes } from 'node:crypto';
import {
  auth,
  extractWWWAuthenticateParams,
  InsufficientScopeError,
  SdkError,
  SdkErrorCode,
  selectClientAuthMethod,
  UnauthorizedError,
  type AuthProvider,
  type OAuthClientMetadata,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { UpstreamOAuthFailure } from '@bindery/contracts';
import type { Dispatcher } from 'undici';
import type { Prisma } from '../../../generated/prisma/client.ts';
import type { DomainContext, SecretSealer } from '../../../domain/context.ts';
import { DomainError } from '../../../domain/errors.ts';
import { requireKeyring } from '../../../secrets/secret-keyring.ts';
import { boundedFetch } from '../bounded-fetch.ts';
import { probeChallenge } from './challenge.ts';
import { openJson, owners, sealJson, sha256 } from './sealed.ts';
import { NeedsPerson, StepProvider, type ClientSide } from './sdk-provider.ts';
import { connectPagePath, type OAuthTarget } from './target.ts';

/** Where the authorization server sends the browser back, and where Bindery's client document is. */
export const CALLBACK_PATH = '/api/v2/upstream-oauth/callback';
export const CLIENT_METADATA_PATH = '/api/v2/upstream-oauth/client';
export const FLOW_TTL_MS = 10 * 60 * 1000;
/** Largest answer of an authorization server Bindery reads (metadata, registration, tokens). */
const OAUTH_ANSWER_MAX_BYTES = 256 * 1024;
/** How long one exchange with an authorization server may take. */
const OAUTH_EXCHANGE_MS = 15_000;
/** How long a whole refresh (discovery included) may take: less than its claim lasts. */
const REFRESH_DEADLINE_MS = 20_000;
/** How long a refresh holds the connection before another control plane may take it over. */
const REFRESH_CLAIM_MS = 30_000;
/** Tokens are refreshed this long before they expire (at most a quarter of their lifetime). */
const REFRESH_AHEAD_MS = 60_000;
/** After a refresh ahead of time failed, the token still held is used this long before trying again. */
const REFRESH_RETRY_MS = 30_000;
/** Tokens remembered per connection to be taken out of answers: two generations of a pair. */
const RECENT_TOKENS = 4;
/** How long a connection read from the database is used before it is read again. */
const CONNECTION_FRESH_MS = 1_000;

/**
 * The cookie that binds one "Connect" to the browser that started it: named after its state, so
 * two Connects under way in one browser (two tabs, two servers) keep their own.
 */
export function flowCookieName(state: string): string {
  return `bindery_upstream_oauth_${sha256(state).slice(0, 16)}`;
}

export interface UpstreamOAuthOptions {
  ctx: () => DomainContext;
  /** The guarded dispatcher every request to an upstream and its authorization server passes. */
  outbound: Dispatcher;
  /** The control plane's public URL (the redirect URI's and the client document's base). */
  publicUrl: () => string;
  /** Told when a person's connection changed (their server's pool starts again with it). */
  changed?: (serverId: string, connected: boolean) => void;
  now?: () => number;
}

export type ConnectionStatus = 'not_connected' | 'connected' | 'needs_consent';

export interface ConnectionView {
  status: ConnectionStatus;
  issuer: string | null;
  scope: string | null;
  required_scope: string | null;
  expires_at: string | null;
  connected_at: string | null;
}

/** A callback refused: `reason` is what the console says (a fixed sentence), `detail` is logged. */
export class CallbackRefused extends Error {
  constructor(
    readonly reason: UpstreamOAuthFailure,
    readonly detail: string,
    readonly serverId?: string,
  ) {
    super(detail);
  }
}

interface Held {
  tokens: StoredOAuthTokens;
  /** The registered client the tokens were issued to (absent: a pre-registered one). */
  client: StoredOAuthClientInformation | undefined;
  issuer: string;
  expiresAt: number | null;
  obtainedAt: number;
  discovery: OAuthDiscoveryState | undefined;
  status: ConnectionStatus;
  readAt: number;
}

interface Sealed {
  tokens: StoredOAuthTokens;
  client?: StoredOAuthClientInformation;
}

type UnauthorizedContext = Parameters<NonNullable<AuthProvider['onUnauthorized']>>[0];
type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

const heldKey = (target: Pick<OAuthTarget, 'serverId' | 'userId'>) =>
  `${target.serverId}\u0000${target.userId}`;
/** A person's connection row to a server: its columns, and its unique key. */
const rowOf = (target: Pick<OAuthTarget, 'serverId' | 'userId'>) => ({
  upstreamServerId: target.serverId,
  userId: target.userId,
});
const keyOf = (target: Pick<OAuthTarget, 'serverId' | 'userId'>) => ({
  upstreamServerId_userId: rowOf(target),
});

/** A person's view of a server they have not connected (or whose connection is for another URL). */
export const NOT_CONNECTED: ConnectionView = {
  status: 'not_connected',
  issuer: null,
  scope: null,
  required_scope: null,
  expires_at: null,
  connected_at: null,
};

export class UpstreamOAuth implements ClientSide {
  private readonly held = new Map<string, Held>();
  private readonly refreshing = new Map<string, Promise<Held | undefined>>();
  /** When a refresh ahead of time last failed, per connection. */
  private readonly refreshFailedAt = new Map<string, number>();
  /**
   * The tokens last held per connection (a few), so an answer to a request sent with a token since
   * refreshed or dropped still has it taken out.
   */
  private readonly recent = new Map<string, string[]>();
  private readonly fetchFn: FetchLike;

  constructor(private readonly options: UpstreamOAuthOptions) {
    this.fetchFn = boundedFetch({
      dispatcher: options.outbound,
      maxMessageBytes: OAUTH_ANSWER_MAX_BYTES,
      maxCallBytes: OAUTH_ANSWER_MAX_BYTES,
      postDeadlineMs: OAUTH_EXCHANGE_MS,
      onCut: () => undefined,
    });
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private db() {
    return this.options.ctx().prisma;
  }

  private keyring(): SecretSealer {
    // Without a key there is nothing to seal tokens with: the same refusal secrets get.
    return requireKeyring(this.options.ctx());
  }

  /**
   * Every exchange with an authorization server: through the guard, bounded in size and time. A
   * POST never follows a redirect (it would carry a code, a refresh token or a client secret to
   * wherever the redirect points).
   */
  private fetch: FetchLike = (url, init) =>
    this.fetchFn(url, {
      ...init,
      signal: init?.signal ?? AbortSignal.timeout(OAUTH_EXCHANGE_MS),
      ...((init?.method ?? 'GET') !== 'GET' && { redirect: 'error' as const }),
    });

  /** A path under the control plane's public URL (which may have a path of its own). */
  private at(path: string): string {
    return `${this.options.publicUrl().replace(/\/+$/, '')}${path}`;
  }

  /** Whether the flow cookie must be Secure: the control plane is served over https. */
  secureCookies(): boolean {
    return this.options.publicUrl().startsWith('https:');
  }

  redirectUrl(): string {
    return this.at(CALLBACK_PATH);
  }

  /** Bindery's Client ID Metadata Document URL: only over https (the spec requires it). */
  clientMetadataUrl(): string | undefined {
    return this.secureCookies() ? this.at(CLIENT_METADATA_PATH) : undefined;
  }

  /** Bindery as an OAuth client (its Client ID Metadata Document, its registrations). */
  clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Bindery',
      client_uri: this.at('/'),
      redirect_uris: [this.redirectUrl()],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  /** The Client ID Metadata Document served at CLIENT_METADATA_PATH. */
  clientDocument(): Record<string, unknown> {
    return { client_id: this.at(CLIENT_METADATA_PATH), ...this.clientMetadata() };
  }

  /** The error a call of a person without a (sufficient) connection answers. */
  authRequired(
    target: Pick<OAuthTarget, 'serverId' | 'name'>,
    requiredScope?: string,
    reason?: string,
  ): DomainError {
    const connectUrl = this.at(connectPagePath(target.serverId));
    const why =
      reason ??
      (requiredScope === undefined
        ? 'requires OAuth, and its owner has not connected their account to it'
        : `asks for a scope the connected account has not granted (${requiredScope.slice(0, 200)})`);
    return new DomainError(
      'UPSTREAM_AUTH_REQUIRED',
      `upstream server "${target.name}" ${why}: connect it in the console at ${connectUrl}`,
      {
        upstream: target.name,
        server_id: target.serverId,
        connect_url: connectUrl,
        ...(requiredScope !== undefined && { required_scope: requiredScope.slice(0, 1024) }),
      },
    );
  }

  /** Whether a server asks for OAuth: it answers an unauthenticated request 401 with a Bearer challenge. */
  async requiresOAuth(url: string): Promise<boolean> {
    return (await probeChallenge(url, this.fetch)).bearer === true;
  }

  // --- registered clients -------------------------------------------------------------------

  async registeredClient(
    target: OAuthTarget,
    issuer: string,
  ): Promise<StoredOAuthClientInformation | undefined> {
    const row = await this.db().upstreamOAuthClient.findUnique({
      where: { upstreamServerId_issuer: { upstreamServerId: target.serverId, issuer } },
    });
    return row
      ? openJson(this.keyring(), owners.client(target.serverId, target.userId, issuer), row)
      : undefined;
  }

  async saveRegisteredClient(
    target: OAuthTarget,
    issuer: string,
    information: StoredOAuthClientInformation,
  ): Promise<void> {
    const sealed = sealJson(
      this.keyring(),
      owners.client(target.serverId, target.userId, issuer),
      information,
    );
    await this.db().upstreamOAuthClient.upsert({
      where: { upstreamServerId_issuer: { upstreamServerId: target.serverId, issuer } },
      create: { upstreamServerId: target.serverId, issuer, ...sealed },
      update: sealed,
    });
  }

  async forgetRegisteredClients(target: OAuthTarget): Promise<void> {
    await this.db().upstreamOAuthClient.deleteMany({ where: { upstreamServerId: target.serverId } });
  }

  /**
   * A client Bindery registered for fewer scopes than are asked for now (a step-up) registers
   * again: an authorization server may hold a client to the scope it registered (RFC 7591 2), and
   * refuse the rest with invalid_scope. A connection keeps the client its tokens were issued to.
   */
  private async forgetNarrowerClients(target: OAuthTarget, scopes: Set<string>): Promise<void> {
    if (target.clientId !== null || scopes.size === 0) return;
    const rows = await this.db().upstreamOAuthClient.findMany({
      where: { upstreamServerId: target.serverId },
    });
    for (const row of rows) {
      const owner = owners.client(target.serverId, target.userId, row.issuer);
      const information = openJson<{ scope?: unknown }>(this.keyring(), owner, row);
      if (typeof information.scope !== 'string') continue;
      const registered = new Set(information.scope.split(' '));
      if ([...scopes].every((scope) => registered.has(scope))) continue;
      await this.db().upstreamOAuthClient.deleteMany({
        where: { upstreamServerId: target.serverId, issuer: row.issuer },
      });
    }
  }

  // --- connecting ---------------------------------------------------------------------------

  /**
   * Starts a "Connect": discovers the upstream's authorization server, registers with it when
   * needed, and answers where to send the browser, and the cookie (name and value) that binds the
   * flow to it. The scope asked for: the server's setting, else what its challenge names, plus
   * those granted and those a step-up asked for.
   */
  async connect(target: OAuthTarget): Promise<{ authorizationUrl: string; cookie: string; binding: string }> {
    const keyring = this.keyring();
    const existing = await this.db().upstreamOAuthConnection.findUnique({
      where: keyOf(target),
      select: { requiredScope: true, scope: true, resource: true },
    });
    const kept = existing?.resource === target.url ? existing : undefined;
    const challenge = await probeChallenge(target.url, this.fetch);
    const scopes = new Set(
      [target.scope ?? challenge.scope, kept?.scope, kept?.requiredScope]
        .filter((s): s is string => typeof s === 'string')
        .flatMap((s) => s.split(' '))
        .filter((s) => s !== ''),
    );
    await this.forgetNarrowerClients(target, scopes);
    const state = randomBytes(32).toString('base64url');
    const provider = new StepProvider(this, target, { interactive: true, state });
    const outcome = await this.guarded(target, () =>
      auth(provider, {
        serverUrl: target.url,
        ...(scopes.size > 0 && { scope: [...scopes].join(' ') }),
        ...(challenge.resourceMetadataUrl && { resourceMetadataUrl: challenge.resourceMetadataUrl }),
        fetchFn: this.fetch,
        forceReauthorization: true,
      }),
    );
    if (outcome !== 'REDIRECT' || !provider.authorizationUrl || provider.verifier === undefined) {
      throw new DomainError(
        'UPSTREAM_FAILED',
        `upstream server "${target.name}": its authorization server gave no authorization URL`,
        { upstream: target.name },
      );
    }
    const binding = randomBytes(32).toString('base64url');
    const stateHash = sha256(state);
    await this.db().upstreamOAuthFlow.deleteMany({ where: { expiresAt: { lt: new Date(this.now()) } } });
    await this.db().upstreamOAuthFlow.create({
      data: {
        stateHash,
        upstreamServerId: target.serverId,
        userId: target.userId,
        bindingHash: sha256(binding),
        // The client the code will be issued to, whatever another attempt registers meanwhile.
        ...sealJson(keyring, owners.flow(target.userId, stateHash), {
          verifier: provider.verifier,
          ...(provider.client && { client: provider.client }),
        }),
        discovery: (provider.discovery ?? null) as unknown as Prisma.InputJsonValue,
        scope: scopes.size > 0 ? [...scopes].join(' ') : null,
        expiresAt: new Date(this.now() + FLOW_TTL_MS),
      },
    });
    return { authorizationUrl: provider.authorizationUrl.href, cookie: flowCookieName(state), binding };
  }

  /**
   * The browser came back from the authorization server: the flow its state names, started by
   * this browser, not expired, used once; the code exchanged for the person's tokens. Refusals
   * are CallbackRefused (a reason the console words, the detail for the log).
   */
  async finish(
    query: Record<string, string | undefined>,
    bindingOf: (cookie: string) => string | undefined,
    targetOf: (serverId: string, userId: string) => Promise<OAuthTarget>,
  ): Promise<{ serverId: string }> {
    const state = query.state;
    if (!state || state.length > 512) throw new CallbackRefused('expired', 'the callback carries no state');
    const stateHash = sha256(state);
    const flow = await this.db().upstreamOAuthFlow.findUnique({ where: { stateHash } });
    // Used once: of two callbacks with one state, only the one that deletes the flow goes on.
    const claimed =
      flow && (await this.db().upstreamOAuthFlow.deleteMany({ where: { stateHash } })).count === 1;
    if (!flow || !claimed || flow.expiresAt.getTime() < this.now()) {
      throw new CallbackRefused('expired', 'the connection attempt is unknown, used or expired');
    }
    const binding = bindingOf(flowCookieName(state));
    if (binding === undefined || sha256(binding) !== flow.bindingHash) {
      throw new CallbackRefused('other_browser', 'the connection attempt was started in another browser');
    }
    const serverId = flow.upstreamServerId;
    if (query.error !== undefined) {
      const described = query.error_description ? ` (${query.error_description.slice(0, 300)})` : '';
      throw new CallbackRefused(
        'denied',
        `the authorization server refused: ${query.error.slice(0, 100)}${described}`,
        serverId,
      );
    }
    if (!query.code) throw new CallbackRefused('failed', 'the callback carries no code', serverId);
    try {
      const target = await targetOf(serverId, flow.userId);
      const { verifier, client } = openJson<{ verifier: string; client?: StoredOAuthClientInformation }>(
        this.keyring(),
        owners.flow(flow.userId, stateHash),
        flow,
      );
      const provider = new StepProvider(this, target, {
        interactive: false,
        verifier,
        client,
        discovery: (flow.discovery ?? undefined) as OAuthDiscoveryState | undefined,
      });
      await this.guarded(target, () =>
        auth(provider, {
          serverUrl: target.url,
          authorizationCode: query.code!,
          ...(query.iss !== undefined && { iss: query.iss }),
          fetchFn: this.fetch,
        }),
      );
      if (!provider.saved) throw new CallbackRefused('failed', 'no tokens came back', serverId);
      await this.storeConnected(target, provider.saved, provider.discovery, provider.client);
    } catch (error) {
      if (error instanceof DomainError) throw new CallbackRefused('failed', error.message, serverId);
      throw error;
    }
    this.options.changed?.(serverId, true);
    return { serverId };
  }

  /** Ends a person's connection: the tokens revoked at the authorization server (RFC 7009) and deleted. */
  async disconnect(target: OAuthTarget): Promise<{ revoked: boolean }> {
    // A refresh under way would write its tokens back after the delete: it ends first.
    await this.refreshing.get(heldKey(target))?.catch(() => undefined);
    const row = await this.db().upstreamOAuthConnection.findUnique({ where: keyOf(target) });
    this.held.delete(heldKey(target));
    if (!row) return { revoked: false };
    await this.db().upstreamOAuthConnection.deleteMany({
      where: rowOf(target),
    });
    this.options.changed?.(target.serverId, false);
    try {
      const sealed = openJson<Sealed>(this.keyring(), owners.tokens(target.serverId, target.userId), row);
      return { revoked: await this.revoke(target, row.discovery as OAuthDiscoveryState | null, sealed) };
    } catch {
      // Deleted here whatever the authorization server said: the person asked to be disconnected.
      return { revoked: false };
    }
  }

  /**
   * A server's URL or OAuth settings changed, or it is deleted: its people's tokens were for what
   * it was. Each is revoked (as far as its authorization server lets) and deleted, with the
   * registered clients and the flows under way.
   */
  async forgetServer(target: OAuthTarget): Promise<void> {
    const rows = await this.db().upstreamOAuthConnection.findMany({
      where: { upstreamServerId: target.serverId },
    });
    await this.db().upstreamOAuthConnection.deleteMany({ where: { upstreamServerId: target.serverId } });
    await this.db().upstreamOAuthFlow.deleteMany({ where: { upstreamServerId: target.serverId } });
    for (const row of rows) {
      this.held.delete(heldKey({ serverId: row.upstreamServerId, userId: row.userId }));
      const person = { ...target, userId: row.userId };
      try {
        const sealed = openJson<Sealed>(this.keyring(), owners.tokens(row.upstreamServerId, row.userId), row);
        await this.revoke(person, row.discovery as OAuthDiscoveryState | null, sealed);
      } catch {
        // Best effort: the tokens are deleted here either way.
      }
    }
    await this.forgetRegisteredClients(target);
  }

  /**
   * RFC 7009 at the authorization server's revocation endpoint, with the client the tokens were
   * issued to, authenticated as it authenticates at the token endpoint. The refresh token first
   * (revoking it ends the grant at most servers, 2.1); whether that was accepted is the answer
   * (a JWT access token often cannot be revoked).
   */
  private async revoke(
    target: OAuthTarget,
    discovery: OAuthDiscoveryState | null,
    sealed: Sealed,
  ): Promise<boolean> {
    const metadata = discovery?.authorizationServerMetadata as
      | {
          revocation_endpoint?: unknown;
          revocation_endpoint_auth_methods_supported?: string[];
          token_endpoint_auth_methods_supported?: string[];
        }
      | undefined;
    const endpoint = metadata?.revocation_endpoint;
    if (typeof endpoint !== 'string') return false;
    const client =
      target.clientId !== null
        ? {
            client_id: target.clientId,
            ...(target.clientSecret !== null && { client_secret: target.clientSecret }),
          }
        : sealed.client;
    if (!client) return false;
    const method = selectClientAuthMethod(
      client,
      metadata?.revocation_endpoint_auth_methods_supported ??
        metadata?.token_endpoint_auth_methods_supported ??
        [],
    );
    const { tokens } = sealed;
    let revoked: boolean | undefined;
    for (const [token, hint] of [
      [tokens.refresh_token, 'refresh_token'],
      [tokens.access_token, 'access_token'],
    ] as const) {
      if (!token) continue;
      const body = new URLSearchParams({ token, token_type_hint: hint });
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (method === 'client_secret_basic' && client.client_secret) {
        // RFC 6749 2.3.1: each form-encoded, then joined and base64-encoded.
        const form = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
        headers.authorization = `Basic ${Buffer.from(`${form(client.client_id)}:${form(client.client_secret)}`).toString('base64')}`;
      } else {
        body.set('client_id', client.client_id);
        if (method === 'client_secret_post' && client.client_secret)
          body.set('client_secret', client.client_secret);
      }
      const answer = await this.fetch(endpoint, { method: 'POST', headers, body });
      await answer.body?.cancel();
      revoked ??= answer.ok;
    }
    return revoked ?? false;
  }

  /** A person's connection as the admin API shows it (no token). */
  async view(target: Pick<OAuthTarget, 'serverId' | 'userId' | 'url'>): Promise<ConnectionView> {
    const row = await this.db().upstreamOAuthConnection.findUnique({
      where: keyOf(target),
      select: {
        resource: true,
        status: true,
        issuer: true,
        scope: true,
        requiredScope: true,
        expiresAt: true,
        connectedAt: true,
      },
    });
    if (!row || row.resource !== target.url) return NOT_CONNECTED;
    return {
      status: row.status === 'needs_consent' ? 'needs_consent' : 'connected',
      issuer: row.issuer,
      scope: row.scope,
      required_scope: row.requiredScope,
      expires_at: row.expiresAt?.toISOString() ?? null,
      connected_at: row.connectedAt.toISOString(),
    };
  }

  // --- calls ----------------------------------------------------------------------------------

  /**
   * What an instance's transport authenticates with: the person's access token before every
   * request (refreshed first when it is about to expire), a refresh on a 401. A person who has not
   * connected, or whose connection ended since the instance started (a disconnect, a changed
   * server), fails before anything is sent: never a request without their token.
   */
  async authProvider(target: OAuthTarget): Promise<AuthProvider> {
    if (!(await this.current(target))) throw this.authRequired(target);
    return {
      token: async () => {
        const held = await this.current(target, { refreshAhead: true });
        if (!held) throw this.authRequired(target);
        return held.tokens.access_token;
      },
      onUnauthorized: async (ctx: UnauthorizedContext) => {
        const held = await this.current(target);
        if (!held) throw this.authRequired(target);
        const challenge = extractWWWAuthenticateParams(ctx.response);
        const refreshed = await this.refresh(target, held, challenge.resourceMetadataUrl);
        if (!refreshed) throw this.authRequired(target);
      },
    };
  }

  /** The tokens held for a person (to take out of whatever an upstream sends back). */
  heldSecrets(target: Pick<OAuthTarget, 'serverId' | 'userId'>): Map<string, string> {
    const tokens = this.recent.get(heldKey(target)) ?? [];
    // Named as they show where taken out: the access token in use first.
    return new Map(tokens.map((token, at) => [at === 0 ? 'oauth_token' : `oauth_token_${at + 1}`, token]));
  }

  /** Keeps a connection's tokens in memory, and among the recent ones (at most RECENT_TOKENS). */
  private hold(key: string, held: Held): void {
    this.held.set(key, held);
    const fresh = [held.tokens.access_token, held.tokens.refresh_token].filter(
      (token): token is string => typeof token === 'string',
    );
    const kept = this.recent.get(key) ?? [];
    if (fresh.every((token) => kept.includes(token))) return;
    this.recent.set(
      key,
      [...fresh, ...kept.filter((token) => !fresh.includes(token))].slice(0, RECENT_TOKENS),
    );
  }

  /**
   * A transport's failure as the call should answer it, when it is about authorization: a 403
   * insufficient_scope marks the connection as needing consent (the person is asked, never in a
   * loop); a 401 a fresh token did not cure too; a person without tokens is "connect".
   */
  authFailure(target: OAuthTarget, error: unknown): DomainError | undefined {
    if (error instanceof DomainError) return undefined;
    if (error instanceof InsufficientScopeError) {
      void this.needsConsent(target, error.requiredScope ?? null);
      return this.authRequired(target, error.requiredScope ?? 'a scope it did not name');
    }
    if (error instanceof SdkError && error.code === SdkErrorCode.ClientHttpAuthentication) {
      // A fresh token refused too: the account no longer has access (or the server changed).
      void this.needsConsent(target, null);
      return this.authRequired(target, undefined, 'refused the connected account’s token (401)');
    }
    if (error instanceof UnauthorizedError || error instanceof NeedsPerson) return this.authRequired(target);
    return undefined;
  }

  private async needsConsent(target: OAuthTarget, requiredScope: string | null): Promise<void> {
    this.held.delete(heldKey(target));
    await this.db()
      .upstreamOAuthConnection.updateMany({
        where: rowOf(target),
        data: { status: 'needs_consent', requiredScope: requiredScope?.slice(0, 1024) ?? null },
      })
      .catch(() => undefined);
  }

  /**
   * The person's tokens (from memory for a second), refreshed first when asked and due. A refresh
   * ahead of time that fails leaves the token in use while it lives (tried again after a while).
   */
  private async current(
    target: OAuthTarget,
    options: { refreshAhead?: boolean } = {},
  ): Promise<Held | undefined> {
    const key = heldKey(target);
    let held = this.held.get(key);
    if (!held || this.now() - held.readAt > CONNECTION_FRESH_MS) {
      held = await this.read(target);
      if (held) this.hold(key, held);
      else this.held.delete(key);
    }
    if (!held || !options.refreshAhead || held.expiresAt === null || !held.tokens.refresh_token) return held;
    const lifetime = Math.max(0, held.expiresAt - held.obtainedAt);
    const now = this.now();
    if (held.expiresAt - now > Math.min(REFRESH_AHEAD_MS, lifetime / 4)) return held;
    const lives = held.expiresAt > now;
    if (lives && now - (this.refreshFailedAt.get(key) ?? -Infinity) < REFRESH_RETRY_MS) return held;
    try {
      const refreshed = await this.refresh(target, held);
      this.refreshFailedAt.delete(key);
      return refreshed;
    } catch (error) {
      if (!lives) throw error;
      this.refreshFailedAt.set(key, now);
      return held;
    }
  }

  /** The connection's row, for the server's URL as it is now (tokens got for another are not used). */
  private async read(target: OAuthTarget): Promise<Held | undefined> {
    const row = await this.db().upstreamOAuthConnection.findUnique({ where: keyOf(target) });
    if (!row || row.resource !== target.url) return undefined;
    const sealed = openJson<Sealed>(this.keyring(), owners.tokens(target.serverId, target.userId), row);
    return {
      tokens: sealed.tokens,
      client: sealed.client,
      issuer: row.issuer,
      expiresAt: row.expiresAt?.getTime() ?? null,
      obtainedAt: row.obtainedAt.getTime(),
      discovery: (row.discovery ?? undefined) as OAuthDiscoveryState | undefined,
      status: row.status === 'needs_consent' ? 'needs_consent' : 'connected',
      readAt: this.now(),
    };
  }

  /**
   * Refreshes a person's tokens, once at a time per connection: in this process one promise, across
   * control planes a claim on the row (a refresh token that rotates may be used once).
   */
  private refresh(target: OAuthTarget, held: Held, resourceMetadataUrl?: URL): Promise<Held | undefined> {
    const key = heldKey(target);
    const running = this.refreshing.get(key);
    if (running) return running;
    const done = this.refreshOnce(target, held, resourceMetadataUrl).finally(() =>
      this.refreshing.delete(key),
    );
    this.refreshing.set(key, done);
    return done;
  }

  /**
   * One refresh. Without a refresh token, or refused as invalid (invalid_grant, an unknown client),
   * the connection ends: the person must connect again. Anything else (the authorization server
   * down) fails this call and keeps the connection. The new tokens are written only over the ones
   * refreshed, under this refresh's claim: a disconnect meanwhile wins, and they are revoked.
   */
  private async refreshOnce(
    target: OAuthTarget,
    held: Held,
    resourceMetadataUrl?: URL,
  ): Promise<Held | undefined> {
    const person = rowOf(target);
    const these = { ...person, obtainedAt: new Date(held.obtainedAt) };
    if (!held.tokens.refresh_token) {
      await this.db().upstreamOAuthConnection.deleteMany({ where: these });
      this.held.delete(heldKey(target));
      return undefined;
    }
    const now = new Date(this.now());
    const claim = new Date(this.now() + REFRESH_CLAIM_MS);
    const claimed = await this.db().upstreamOAuthConnection.updateMany({
      where: { ...these, OR: [{ refreshingUntil: null }, { refreshingUntil: { lt: now } }] },
      data: { refreshingUntil: claim },
    });
    if (claimed.count === 0) return this.awaitOtherRefresh(target, held);
    const release = () =>
      this.db()
        .upstreamOAuthConnection.updateMany({
          where: { ...person, refreshingUntil: claim },
          data: { refreshingUntil: null },
        })
        .catch(() => undefined);
    const provider = new StepProvider(this, target, {
      interactive: false,
      discovery: held.discovery,
      tokens: held.tokens,
      client: held.client,
    });
    // The whole refresh ends before its claim does, whatever each exchange takes.
    const deadline = AbortSignal.timeout(REFRESH_DEADLINE_MS);
    const fetchFn: FetchLike = (url, init) =>
      this.fetch(url, {
        ...init,
        signal: AbortSignal.any([deadline, init?.signal ?? AbortSignal.timeout(OAUTH_EXCHANGE_MS)]),
      });
    try {
      await this.guarded(
        target,
        () =>
          auth(provider, {
            serverUrl: target.url,
            ...(resourceMetadataUrl && { resourceMetadataUrl }),
            fetchFn,
          }),
        held.tokens,
      );
    } catch (error) {
      await release();
      if (provider.tokensInvalid) {
        await this.db().upstreamOAuthConnection.deleteMany({ where: these });
        this.held.delete(heldKey(target));
        return undefined;
      }
      if (error instanceof DomainError && error.code === 'UPSTREAM_AUTH_REQUIRED') {
        throw new DomainError(
          'UPSTREAM_FAILED',
          `upstream server "${target.name}": its authorization server could not refresh the connected account's token; try again`,
          { upstream: target.name },
        );
      }
      throw error;
    }
    if (!provider.saved) {
      await release();
      return undefined;
    }
    const obtainedAt = this.now();
    const tokens: StoredOAuthTokens = { ...provider.saved.tokens, issuer: provider.saved.issuer };
    const expiresAt = expiryOf(tokens, obtainedAt);
    const discovery = provider.discovery ?? held.discovery;
    const written = await this.db().upstreamOAuthConnection.updateMany({
      where: { ...these, refreshingUntil: claim },
      data: {
        issuer: provider.saved.issuer,
        ...sealJson(this.keyring(), owners.tokens(target.serverId, target.userId), {
          tokens,
          ...(held.client && { client: held.client }),
        }),
        scope: tokens.scope ?? null,
        expiresAt: expiresAt === null ? null : new Date(expiresAt),
        obtainedAt: new Date(obtainedAt),
        discovery: (discovery ?? null) as unknown as Prisma.InputJsonValue,
        refreshingUntil: null,
      },
    });
    if (written.count === 0) {
      // Disconnected (or connected anew) meanwhile: these tokens are nobody's.
      await this.revoke(target, discovery ?? null, {
        tokens,
        ...(held.client && { client: held.client }),
      }).catch(() => false);
      this.held.delete(heldKey(target));
      return undefined;
    }
    const next: Held = {
      ...held,
      tokens,
      issuer: provider.saved.issuer,
      expiresAt,
      obtainedAt,
      discovery,
      readAt: this.now(),
    };
    this.hold(heldKey(target), next);
    return next;
  }

  /**
   * Another control plane is refreshing: its tokens once stored, the connection's end if it ended
   * it, or the tokens held if it gave up (its claim released or lapsed).
   */
  private async awaitOtherRefresh(target: OAuthTarget, held: Held): Promise<Held | undefined> {
    const until = this.now() + REFRESH_CLAIM_MS;
    while (this.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const row = await this.db().upstreamOAuthConnection.findUnique({
        where: keyOf(target),
        select: { obtainedAt: true, refreshingUntil: true },
      });
      if (!row) return undefined;
      if (row.obtainedAt.getTime() !== held.obtainedAt) {
        const now = await this.read(target);
        if (now) this.hold(heldKey(target), now);
        return now;
      }
      if (row.refreshingUntil === null || row.refreshingUntil.getTime() < this.now()) return held;
    }
    return held;
  }

  /** Keeps a person's new connection (sealed), for the server's URL as it is now. */
  private async storeConnected(
    target: OAuthTarget,
    saved: { tokens: StoredOAuthTokens; issuer: string },
    discovery: OAuthDiscoveryState | undefined,
    client: StoredOAuthClientInformation | undefined,
  ): Promise<void> {
    const obtainedAt = this.now();
    const tokens: StoredOAuthTokens = { ...saved.tokens, issuer: saved.issuer };
    const expiresAt = expiryOf(tokens, obtainedAt);
    const data = {
      resource: target.url,
      issuer: saved.issuer,
      ...sealJson(this.keyring(), owners.tokens(target.serverId, target.userId), {
        tokens,
        ...(client && { client }),
      }),
      scope: tokens.scope ?? null,
      expiresAt: expiresAt === null ? null : new Date(expiresAt),
      obtainedAt: new Date(obtainedAt),
      connectedAt: new Date(obtainedAt),
      status: 'connected',
      requiredScope: null,
      discovery: (discovery ?? null) as unknown as Prisma.InputJsonValue,
      refreshingUntil: null,
    };
    await this.db().upstreamOAuthConnection.upsert({
      where: keyOf(target),
      create: { ...rowOf(target), ...data },
      update: data,
    });
    this.held.delete(heldKey(target));
    this.refreshFailedAt.delete(heldKey(target));
  }

  /** An OAuth step's failure as the person reads it: one line, no token, no secret. */
  private async guarded<T>(
    target: OAuthTarget,
    step: () => Promise<T>,
    held?: StoredOAuthTokens,
  ): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof DomainError) throw error;
      if (error instanceof NeedsPerson) throw this.authRequired(target);
      // An authorization server's error text is its own: whatever it echoes of ours is taken out.
      let message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
      for (const secret of [target.clientSecret, held?.access_token, held?.refresh_token]) {
        if (secret) message = message.replaceAll(secret, '[redacted]');
      }
      throw new DomainError(
        'UPSTREAM_FAILED',
        `upstream server "${target.name}": OAuth failed: ${message.slice(0, 300)}`,
        {
          upstream: target.name,
        },
      );
    }
  }
}

/** When tokens expire, from `expires_in` (absent: not known, never refreshed ahead of time). */
function expiryOf(tokens: StoredOAuthTokens, obtainedAt: number): number | null {
  return typeof tokens.expires_in === 'number' ? obtainedAt + tokens.expires_in * 1000 : null;
}
