/**
 * The built-in OAuth 2.1 authorization server (decision 073): `oidc-provider`, an OpenID Certified
 * implementation, mounted in the control plane. Its issuer is the control plane's public URL
 * (OAUTH_ISSUER); its endpoints live under `/oauth/`, its metadata at
 * `/.well-known/oauth-authorization-server` (RFC 8414) and `/.well-known/openid-configuration`.
 *
 * What it allows, and nothing more: the authorization code grant with PKCE S256 (every client),
 * refresh tokens (rotated for public clients), RFC 7009 revocation, RFC 9207 `iss` in the answer,
 * dynamic client registration (RFC 7591, limited per address and in total: `registration-limit.ts`)
 * and Client ID Metadata Documents (fetched through the outgoing-request guard, bounded and cached
 * by the library). Access tokens are ES256 JWTs (RFC 9068) for one resource: a keyless MCP URL of
 * the gateway (RFC 8707), with the MCP scopes and the grant's id, verified by gateways against the
 * published JWKS without asking the control plane.
 *
 * The library is built when first needed (the issuer may name the port the control plane listened
 * on) and built again when the signing keys changed (checked every few minutes), so a rotation on
 * one control plane reaches the others.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GRANT_CLAIM, MCP_SCOPES, resourceOfIndicator } from '@bindery/contracts';
import type { FastifyBaseLogger } from 'fastify';
import type { JWK } from 'jose';
import type Provider from 'oidc-provider';
import type { Configuration } from 'oidc-provider';
import { fetch, type Dispatcher } from 'undici';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { SecretSealer } from '../domain/context.ts';
import { oauthStore, sweepExpired, type GrantGone } from './oauth-store.ts';
import { loadSigningKeys } from './signing-keys.ts';

/** Where the library's routes live, under the issuer. */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  userinfo: '/oauth/userinfo',
  end_session: '/oauth/logout',
  pushed_authorization_request: '/oauth/par',
  introspection: '/oauth/introspect',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
} as const;

/** Where the library sends the browser for sign-in and consent (the console's consent screen). */
export const INTERACTION_PATH = '/oauth/interaction';

/** Access tokens live an hour; refresh tokens 30 days from their grant's last use; grants a year. */
const TTL = {
  AccessToken: 60 * 60,
  AuthorizationCode: 60,
  RefreshToken: 30 * 24 * 60 * 60,
  Grant: 365 * 24 * 60 * 60,
  Interaction: 60 * 60,
  Session: 14 * 24 * 60 * 60,
} as const;
/** How often the signing keys are read again (a rotation elsewhere reaches this control plane). */
const KEYS_RELOAD_MS = 5 * 60 * 1000;
/** How often expired rows of the store are swept. */
const SWEEP_MS = 10 * 60 * 1000;

export interface AuthorizationServerOptions {
  db: PrismaClient;
  keyring: SecretSealer;
  /** The issuer (the control plane's public URL, no trailing slash), asked when the library is built. */
  issuer: () => string;
  /** The gateway's public URL: the resources tokens may be for are its keyless MCP URLs. */
  gatewayPublicUrl: string;
  /** Shared by the control planes (signs the library's cookies); absent: a key of this process. */
  internalToken: string | undefined;
  /** The outgoing-request guard: Client ID Metadata Documents are fetched through it. */
  outbound: Dispatcher;
  /** Told when a grant goes (its tokens must stop on every gateway). */
  grantGone: GrantGone;
  /** A key older than this is rotated (ms). */
  keyRotationMs: number;
  /** Clients the operator registered (OAUTH_CLIENTS). */
  clients: Record<string, unknown>[];
  log: FastifyBaseLogger;
}

export class AuthorizationServer {
  readonly #options: AuthorizationServerOptions;
  #built: { provider: Provider; fingerprint: string; handler: ReturnType<Provider['callback']> } | undefined;
  #building: Promise<Provider> | undefined;
  #checkedAt = 0;
  #timers: NodeJS.Timeout[] = [];

  constructor(options: AuthorizationServerOptions) {
    this.#options = options;
    const sweep = setInterval(() => {
      sweepExpired(options.db).catch((error: unknown) =>
        options.log.warn({ err: (error as Error).message }, 'sweeping expired OAuth entries failed'),
      );
    }, SWEEP_MS);
    sweep.unref();
    this.#timers.push(sweep);
  }

  /** The library, built (or built again after a key change) when needed. */
  async provider(): Promise<Provider> {
    const built = this.#built;
    if (built && Date.now() - this.#checkedAt < KEYS_RELOAD_MS) return built.provider;
    this.#building ??= this.#build().finally(() => {
      this.#building = undefined;
    });
    return this.#building;
  }

  /** Reads the signing keys again at once (after a rotation here). */
  async reload(): Promise<void> {
    this.#checkedAt = 0;
    await this.provider();
  }

  async #build(): Promise<Provider> {
    const { db, keyring, keyRotationMs } = this.#options;
    const keys = await loadSigningKeys(db, keyring, keyRotationMs);
    this.#checkedAt = Date.now();
    if (this.#built?.fingerprint === keys.fingerprint) return this.#built.provider;
    const library = await loadLibrary(this.#options.log);
    const provider = new library.default(
      this.#options.issuer(),
      this.#configuration(keys.privateKeys, library.errors),
    );
    provider.on('server_error', (_ctx: unknown, error: Error) =>
      this.#options.log.error({ err: error.message }, 'OAuth authorization server error'),
    );
    this.#built = { provider, fingerprint: keys.fingerprint, handler: provider.callback() };
    return provider;
  }

  /** Serves one request of the library's (a path under `/oauth/` or a discovery document). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await this.provider();
    await this.#built!.handler(req, res);
  }

  /** Whether a client id is one the operator registered. */
  registered(clientId: string): boolean {
    return this.#options.clients.some((client) => client.client_id === clientId);
  }

  close(): void {
    for (const timer of this.#timers) clearInterval(timer);
  }

  #configuration(privateKeys: JWK[], errors: Library['errors']): Configuration {
    const { db, gatewayPublicUrl, internalToken, outbound, grantGone } = this.#options;
    const secret = internalToken === undefined ? randomBytes(32) : Buffer.from(internalToken, 'utf8');
    const cookieKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'bindery oauth cookies', 32));
    return {
      adapter: oauthStore(db, grantGone),
      clients: this.#options.clients as unknown as Configuration['clients'],
      jwks: { keys: privateKeys },
      cookies: { keys: [cookieKey.toString('base64url')] },
      routes: OAUTH_ROUTES,
      responseTypes: ['code'],
      // The MCP scopes are listed too: clients register with them (RFC 7591 `scope`) and ask for them.
      scopes: ['openid', 'offline_access', ...MCP_SCOPES],
      claims: { openid: ['sub'] },
      // Public clients (no secret): PKCE is what protects their codes. Every client must use it,
      // and the library only knows S256.
      pkce: { required: () => true },
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        id_token_signed_response_alg: 'ES256',
      },
      ttl: TTL,
      // Agents ask for refresh tokens by registering the grant type; `offline_access` is not needed.
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      extraTokenClaims: async (_ctx, token) =>
        token.kind === 'AccessToken' && token.grantId ? { [GRANT_CLAIM]: token.grantId } : undefined,
      findAccount: async (_ctx, sub) => {
        const user = await db.user.findUnique({
          where: { id: sub },
          select: { id: true, name: true, disabledAt: true },
        });
        if (!user || user.disabledAt) return undefined;
        return { accountId: user.id, claims: () => ({ sub: user.id, name: user.name }) };
      },
      interactions: { url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}` },
      // An error page names the error only (the library escapes it); never a stack or token.
      renderError: (ctx, out) => {
        ctx.type = 'html';
        ctx.body = `<!doctype html><meta charset="utf-8"><title>Authorization failed</title><h1>Authorization failed</h1><p>${escapeHtml(String(out.error))}: ${escapeHtml(String(out.error_description ?? ''))}</p>`;
      },
      // The outgoing-request guard decides which addresses may be reached (HTTP_TOOLS_ALLOWED_NETWORKS).
      fetch: (url, options) =>
        fetch(String(url), { ...(options as object), dispatcher: outbound }) as unknown as Promise<Response>,
      fetchResponseBodyLimits: {
        'client_id metadata document': 5 * 1024,
      } as Configuration['fetchResponseBodyLimits'],
      features: {
        devInteractions: { enabled: false },
        // No registration access token: clients never read or change their registration later.
        registration: { enabled: true, issueRegistrationAccessToken: false },
        revocation: { enabled: true },
        rpInitiatedLogout: { enabled: false },
        clientIdMetadataDocument: {
          enabled: true,
          ack: 'draft-02',
          cacheDuration: { min: 60, max: 3600 },
        },
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx, _client, oneOf) => oneOf,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx, indicator) => {
            if (!resourceOfIndicator(indicator, gatewayPublicUrl)) {
              throw new errors.InvalidTarget(
                `the resource must be a keyless MCP URL of this Bindery (${gatewayPublicUrl}/api/v2/mcp/aei/{id} or ${gatewayPublicUrl}/api/v2/mcp/caller/{caller})`,
              );
            }
            return {
              scope: MCP_SCOPES.join(' '),
              audience: indicator,
              accessTokenTTL: TTL.AccessToken,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'ES256' } },
            };
          },
        },
      },
    } as Configuration;
  }
}

type Library = typeof import('oidc-provider');
let library: Promise<Library> | undefined;

/**
 * The library, loaded when the authorization server is first needed (a control plane that serves
 * no OAuth never loads it). On import it warns on stderr that it prefers Node.js 22; Bindery runs on
 * 20, where the library works, so that one line is said once in our own log instead.
 */
function loadLibrary(log: FastifyBaseLogger): Promise<Library> {
  library ??= (async () => {
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (String(args[0]).includes('oidc-provider WARNING: Unsupported runtime')) {
        log.info('oidc-provider prefers Node.js 22; it runs on this Node.js %s', process.version);
        return;
      }
      warn(...args);
    };
    try {
      return await import('oidc-provider');
    } finally {
      console.warn = warn;
    }
  })();
  return library;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/gu, (c) => `&#${c.charCodeAt(0)};`);
}
