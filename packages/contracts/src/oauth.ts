/**
 * OAuth 2.1 for agents (decision 073): the keyless MCP URLs a token opens, the scopes, the shapes
 * of the grants API and the consent screen, and the internal lookup of what a grant opens.
 *
 * A keyless URL is a protected resource (RFC 9728): `{gateway}/api/v2/mcp/aei/{aei_id}` for one
 * exposure, `{gateway}/api/v2/mcp/caller/{caller}` (or `/api/v2/mcp/caller`) for a person's caller
 * profile. Access tokens are JWTs audience-bound to that URL exactly (RFC 8707).
 */
import { Type, type Static } from 'typebox';
import { MCP_CALLER_PATH } from './entries.ts';

/** The keyless exposure URL's path, without the id. */
export const MCP_AEI_PATH = '/api/v2/mcp/aei';

/** What each MCP scope opens; `initialize`, `ping` and the like need a valid token only. */
export const MCP_SCOPES = ['mcp:tools', 'mcp:resources', 'mcp:prompts'] as const;
export type McpScope = (typeof MCP_SCOPES)[number];

/** Where Protected Resource Metadata of a resource path lives (RFC 9728 §3.1: inserted before the path). */
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The header the gateway names a token's grant in, when it asks the control plane what it opens. */
export const OAUTH_GRANT_HEADER = 'x-bindery-oauth-grant';
/** The header with the token's subject (the user id) beside it. */
export const OAUTH_SUBJECT_HEADER = 'x-bindery-oauth-subject';

/**
 * External authorization-server mode: the token's issuer, and which claim names the user (`sub`:
 * linked by console sign-in through that provider; `email`: a person's verified email). The
 * subject header then carries that claim's value, and no grant is named.
 */
export const OAUTH_ISSUER_HEADER = 'x-bindery-oauth-issuer';
export const OAUTH_CLAIM_HEADER = 'x-bindery-oauth-claim';

/** The claim of a built-in access token that names its grant (revoking it stops the token). */
export const GRANT_CLAIM = 'grant_id';

const AEI_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
const CALLER_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** A keyless MCP URL's target: one exposure, or a caller profile of the token's person. */
export type OAuthResource = { kind: 'aei'; id: string } | { kind: 'caller'; caller: string | null };

/** The resource a path names (`/api/v2/mcp/aei/{id}`, `/api/v2/mcp/caller[/{caller}]`), or undefined. */
export function resourceOfPath(path: string): OAuthResource | undefined {
  if (path === MCP_CALLER_PATH) return { kind: 'caller', caller: null };
  if (path.startsWith(`${MCP_CALLER_PATH}/`)) {
    const caller = path.slice(MCP_CALLER_PATH.length + 1);
    return CALLER_RE.test(caller) ? { kind: 'caller', caller } : undefined;
  }
  if (path.startsWith(`${MCP_AEI_PATH}/`)) {
    const id = path.slice(MCP_AEI_PATH.length + 1);
    return AEI_ID_RE.test(id) ? { kind: 'aei', id } : undefined;
  }
  return undefined;
}

/** The path of a resource (the inverse of `resourceOfPath`). */
export function pathOfResource(resource: OAuthResource): string {
  if (resource.kind === 'aei') return `${MCP_AEI_PATH}/${resource.id}`;
  return resource.caller === null ? MCP_CALLER_PATH : `${MCP_CALLER_PATH}/${resource.caller}`;
}

/**
 * The resource a resource indicator names when it is a keyless URL of the gateway at `gatewayUrl`
 * (its public base URL, no trailing slash), exactly: no query, no fragment, no trailing slash.
 */
export function resourceOfIndicator(indicator: string, gatewayUrl: string): OAuthResource | undefined {
  if (!indicator.startsWith(`${gatewayUrl}/`)) return undefined;
  const path = indicator.slice(gatewayUrl.length);
  if (/[?#]/u.test(path)) return undefined;
  return resourceOfPath(path);
}

/** A grant a person gave a client (`GET /api/v2/oauth/grants`). */
export const OAuthGrant = Type.Object({
  id: Type.String(),
  client_id: Type.String(),
  client_name: Type.Union([Type.String(), Type.Null()]),
  /** How the client is known: a Client ID Metadata Document (its URL is the id), registered dynamically, or pre-registered. */
  client_kind: Type.Union([
    Type.Literal('metadata_document'),
    Type.Literal('dynamic'),
    Type.Literal('registered'),
  ]),
  /** The keyless MCP URLs the grant opens, with the scopes on each. */
  resources: Type.Array(
    Type.Object({
      resource: Type.String(),
      scopes: Type.Array(Type.String()),
      /** The exposure's name, or the caller profile's caller (null: the default profile). */
      label: Type.String(),
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type OAuthGrant = Static<typeof OAuthGrant>;

export const OAuthGrantList = Type.Object({ items: Type.Array(OAuthGrant) });
export type OAuthGrantList = Static<typeof OAuthGrantList>;

/** What the consent screen shows for an authorization request (`GET /oauth/interaction/{uid}/details`). */
export const OAuthConsentDetails = Type.Object({
  client: Type.Object({
    client_id: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    kind: Type.Union([
      Type.Literal('metadata_document'),
      Type.Literal('dynamic'),
      Type.Literal('registered'),
    ]),
    /** The host its redirect goes back to. */
    redirect_host: Type.String(),
  }),
  /** What it asks for: each keyless URL, what it is, and whether it is the person's. */
  resources: Type.Array(
    Type.Object({
      resource: Type.String(),
      kind: Type.Union([Type.Literal('aei'), Type.Literal('caller')]),
      label: Type.String(),
      /** False: not the signed-in person's (the screen only lets them deny). */
      yours: Type.Boolean(),
    }),
  ),
  scopes: Type.Array(Type.String()),
  /** Refresh tokens (it may keep access while the person is away). */
  offline: Type.Boolean(),
});
export type OAuthConsentDetails = Static<typeof OAuthConsentDetails>;

export const OAuthConsentDecision = Type.Object({ allow: Type.Boolean() }, { additionalProperties: false });
export type OAuthConsentDecision = Static<typeof OAuthConsentDecision>;

/** Where the browser goes next: back to the client, with a code or an error. */
export const OAuthConsentAnswer = Type.Object({ redirect_to: Type.String() });
export type OAuthConsentAnswer = Static<typeof OAuthConsentAnswer>;
