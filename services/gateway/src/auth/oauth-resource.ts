/**
 * The gateway as an OAuth 2.1 resource server (MCP authorization, decision 073). Each keyless MCP
 * URL (`/api/v2/mcp/aei/{id}`, `/api/v2/mcp/caller[/{caller}]`) is a protected resource: its
 * metadata (RFC 9728) names the authorization server and the scopes, a request without a token is
 * answered 401 with `WWW-Authenticate: Bearer resource_metadata=...` so clients find where to
 * authorize, and a token is a JWT (RFC 9068) verified here, without a call per request:
 * - signed by a key of the authorization server's JWKS (fetched from the control plane, cached,
 *   fetched again when a token names a key it lacks: rotation is followed);
 * - issued by that server (`iss`), for this very URL (`aud`, RFC 8707), not expired;
 * - naming its grant and person, which the control plane is asked about only when the exposure
 *   cache is (a revoked grant stops at the next lookup, and revocation drops the cached entries);
 * - with the scope the request needs (`mcp:tools` for tools/*, ...), else 403 `insufficient_scope`
 *   naming it (step-up).
 * The token is never passed on: not to the control plane, not to any upstream server or API.
 */
import { hash as digest } from 'node:crypto';
import {
  GRANT_CLAIM,
  MCP_CALLER_PATH,
  MCP_SCOPES,
  PROTECTED_RESOURCE_METADATA_PATH,
  type McpScope,
} from '@bindery/contracts';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { LRUCache } from 'lru-cache';
import { JSONRPC, type JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';
import type { OAuthCredential } from '../control-plane/exposure-cache.ts';
import type { ExternalAuthorizationServer } from '../config.ts';

export interface ResourceServerOptions {
  /** Where MCP clients reach this gateway (GATEWAY_PUBLIC_URL, no trailing slash). */
  publicUrl: string;
  /** Where the control plane's API lives: its authorization server's metadata and JWKS. */
  controlPlaneUrl: string;
  /** External authorization-server mode; unset: the control plane's server, as its metadata names it. */
  external?: ExternalAuthorizationServer | undefined;
  /** After a fetch of the keys, none again for this long, even for an unknown key id (30 s unless told). */
  jwksCooldownMs?: number;
}

/** Verified tokens remembered (by digest) until they expire: a token is verified once. */
const VERIFIED_MAX = 10_000;
/** A failed discovery of the issuer is tried again after this long at the soonest. */
const DISCOVERY_RETRY_MS = 5_000;

interface Verified {
  grantId: string;
  subject: string;
  scopes: ReadonlySet<string>;
  /** ms since the epoch. */
  expiresAt: number;
}

export type Verification =
  | { credential: OAuthCredential; scopes: ReadonlySet<string>; refusal?: undefined }
  | { refusal: JsonRpcErrorAnswer };

/** True for a bearer token in the shape of a JWT (three base64url parts): not any Bindery key. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/u.test(token);
}

/** The MCP scope a JSON-RPC message needs, if any (a batch: the first one missing counts). */
export function scopeOf(message: unknown): McpScope | undefined {
  const method = (message as { method?: unknown } | null)?.method;
  if (typeof method !== 'string') return undefined;
  if (method.startsWith('tools/')) return 'mcp:tools';
  if (method.startsWith('resources/')) return 'mcp:resources';
  if (method.startsWith('prompts/')) return 'mcp:prompts';
  if (method === 'completion/complete') {
    const ref = (message as { params?: { ref?: { type?: unknown } } }).params?.ref?.type;
    return ref === 'ref/prompt' ? 'mcp:prompts' : 'mcp:resources';
  }
  return undefined;
}

export class ResourceServer {
  readonly #options: ResourceServerOptions;
  readonly #jwks: JWTVerifyGetKey;
  readonly #verified = new LRUCache<string, Verified>({ max: VERIFIED_MAX });
  #issuer: string | undefined;
  #discovering: Promise<string> | undefined;
  #discoveryFailedAt = 0;

  constructor(options: ResourceServerOptions) {
    this.#options = options;
    this.#issuer = options.external?.issuer;
    this.#jwks = createRemoteJWKSet(
      new URL(options.external?.jwksUrl ?? `${options.controlPlaneUrl}/oauth/jwks`),
      {
        // A token naming an unknown key fetches the set again at most every 30 s (a rotation).
        cooldownDuration: options.jwksCooldownMs ?? 30_000,
        cacheMaxAge: 10 * 60_000,
        timeoutDuration: 5_000,
      },
    );
  }

  /** The absolute URL of a keyless path's Protected Resource Metadata. */
  metadataUrl(resourcePath: string): string {
    return `${this.#options.publicUrl}${PROTECTED_RESOURCE_METADATA_PATH}${resourcePath}`;
  }

  /** The Protected Resource Metadata of a keyless path (RFC 9728). */
  async metadata(resourcePath: string): Promise<Record<string, unknown>> {
    return {
      resource: `${this.#options.publicUrl}${resourcePath}`,
      authorization_servers: [await this.issuer()],
      scopes_supported: [...MCP_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'Bindery MCP',
    };
  }

  /** The authorization server's issuer: configured, or as the control plane's metadata names it. */
  async issuer(): Promise<string> {
    if (this.#issuer !== undefined) return this.#issuer;
    if (Date.now() - this.#discoveryFailedAt < DISCOVERY_RETRY_MS) {
      throw new Error('the authorization server’s metadata could not be read lately');
    }
    this.#discovering ??= (async () => {
      try {
        const response = await fetch(
          `${this.#options.controlPlaneUrl}/.well-known/oauth-authorization-server`,
          {
            signal: AbortSignal.timeout(5_000),
          },
        );
        const body = (await response.json()) as { issuer?: unknown };
        if (!response.ok || typeof body.issuer !== 'string') {
          throw new Error(`the control plane's authorization server metadata answered ${response.status}`);
        }
        this.#issuer = body.issuer;
        return body.issuer;
      } catch (error) {
        this.#discoveryFailedAt = Date.now();
        throw error;
      } finally {
        this.#discovering = undefined;
      }
    })();
    return this.#discovering;
  }

  /** 401 for a request without a usable token, naming where to authorize (and why, for a bad one). */
  unauthorized(resourcePath: string, invalid?: string): JsonRpcErrorAnswer {
    const metadata = `resource_metadata="${this.metadataUrl(resourcePath)}"`;
    const scope = `scope="${MCP_SCOPES.join(' ')}"`;
    return {
      status: 401,
      code: JSONRPC.UNAUTHORIZED,
      message:
        invalid !== undefined
          ? `the access token is not valid here: ${invalid}`
          : resourcePath.startsWith(MCP_CALLER_PATH)
            ? 'send a personal MCP key (POST /api/v2/mcp-keys makes one) or an OAuth access token as "Authorization: Bearer <...>"; this URL’s metadata names where to get a token'
            : 'this MCP URL takes an OAuth access token ("Authorization: Bearer <token>"); its metadata names where to get one',
      bindery: 'UNAUTHORIZED',
      headers: {
        'www-authenticate':
          invalid === undefined
            ? `Bearer ${metadata}, ${scope}`
            : `Bearer error="invalid_token", error_description="${invalid.replace(/["\\]/gu, '')}", ${metadata}`,
      },
    };
  }

  /** 403 for a token without the scope a request needs (the client may ask for it: step-up). */
  insufficientScope(resourcePath: string, scope: McpScope, held: ReadonlySet<string>): JsonRpcErrorAnswer {
    // The scopes to ask for again: those held and the one missing (SEP-835), so none is lost.
    const wanted = [...new Set([...held, scope])].join(' ');
    return {
      status: 403,
      code: JSONRPC.FORBIDDEN,
      message: `the access token lacks the scope ${scope} this request needs`,
      bindery: 'FORBIDDEN',
      headers: {
        'www-authenticate': `Bearer error="insufficient_scope", scope="${wanted}", resource_metadata="${this.metadataUrl(resourcePath)}"`,
      },
    };
  }

  /** Verifies `token` for the keyless path `resourcePath`: the credential it carries, or the refusal. */
  async verify(token: string, resourcePath: string): Promise<Verification> {
    const audience = `${this.#options.publicUrl}${resourcePath}`;
    const cacheKey = digest('sha256', `${audience}\n${token}`, 'hex');
    const known = this.#verified.get(cacheKey);
    if (known && known.expiresAt > Date.now()) return this.#admitted(known, resourcePath);
    if (!looksLikeJwt(token)) return { refusal: this.unauthorized(resourcePath, 'not an access token') };
    let issuer: string;
    try {
      issuer = await this.issuer();
    } catch {
      return { refusal: UNAVAILABLE };
    }
    const external = this.#options.external;
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.#jwks, {
        issuer,
        audience: external?.audience ?? audience,
        algorithms: ['ES256', 'RS256', 'PS256', 'EdDSA'],
        requiredClaims: ['exp', 'sub'],
        clockTolerance: 5,
        // RFC 9068: the built-in server's access tokens say what they are (an ID token never
        // passes); external servers' often do not (their audience keeps ID tokens out).
        ...(external === undefined && { typ: 'at+jwt' }),
      }));
    } catch (error) {
      // The keys could not be read (the control plane down, say): not the token's fault.
      if (
        !(error instanceof joseErrors.JOSEError) ||
        error instanceof joseErrors.JWKSTimeout ||
        error instanceof joseErrors.JWKSInvalid
      ) {
        return { refusal: UNAVAILABLE };
      }
      return { refusal: this.unauthorized(resourcePath, reasonOf(error)) };
    }
    let verified: Verified;
    // Entra and others put scopes in `scp`; RFC 9068 says `scope`.
    const scope =
      typeof payload.scope === 'string' ? payload.scope : typeof payload.scp === 'string' ? payload.scp : '';
    if (external) {
      const person = payload[external.userClaim];
      if (typeof person !== 'string' || person === '') {
        return { refusal: this.unauthorized(resourcePath, `the token has no ${external.userClaim} claim`) };
      }
      // An email names a person only when the provider says it verified it.
      if (external.userClaim === 'email' && payload.email_verified !== true) {
        return { refusal: this.unauthorized(resourcePath, 'the token’s email is not verified') };
      }
      verified = {
        grantId: '',
        subject: person,
        scopes: scopesOf(scope),
        expiresAt: (payload.exp ?? 0) * 1000,
      };
    } else {
      const grantId = payload[GRANT_CLAIM];
      if (typeof grantId !== 'string' || grantId === '' || typeof payload.sub !== 'string') {
        return { refusal: this.unauthorized(resourcePath, 'the token names no grant') };
      }
      verified = {
        grantId,
        subject: payload.sub,
        scopes: scopesOf(scope),
        expiresAt: (payload.exp ?? 0) * 1000,
      };
    }
    this.#verified.set(cacheKey, verified, { ttl: Math.max(1, verified.expiresAt - Date.now()) });
    return this.#admitted(verified, resourcePath);
  }

  #admitted(verified: Verified, resourcePath: string): Verification {
    const external = this.#options.external;
    return {
      credential: {
        kind: 'oauth',
        grantId: verified.grantId,
        subject: verified.subject,
        resourcePath,
        ...(external && { external: { issuer: external.issuer, claim: external.userClaim } }),
      },
      scopes: verified.scopes,
    };
  }
}

function scopesOf(scope: string): ReadonlySet<string> {
  return new Set(scope.split(' ').filter(Boolean));
}

const UNAVAILABLE: JsonRpcErrorAnswer = {
  status: 503,
  code: JSONRPC.UNAVAILABLE,
  message: 'the authorization server’s keys cannot be read just now; try again shortly',
  bindery: 'UPSTREAM_FAILED',
  headers: { 'retry-after': '5' },
};

/** Why a token failed verification, in words safe to show (never the token). */
function reasonOf(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'it expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    return error.claim === 'aud' ? 'it is for another URL' : `its ${error.claim} claim does not match`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return 'it is signed by a key the authorization server does not publish';
  return 'it is malformed';
}
