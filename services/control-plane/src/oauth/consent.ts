/**
 * Sign-in and consent for an authorization request: what the console's consent screen shows (the
 * client, the keyless MCP URLs it asks for and whether each is the signed-in person's, the scopes),
 * and the person's answer. "Allow" signs the person in to the authorization server and grants the
 * client the MCP scopes it asked for on the URLs that are the person's; "Deny" sends the client
 * `access_denied`. The library binds the request to the browser that started it (a signed cookie),
 * so a consent link opened elsewhere is refused.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  MCP_SCOPES,
  resourceOfIndicator,
  type OAuthConsentDetails,
  type OAuthResource,
} from '@bindery/contracts';
import type Provider from 'oidc-provider';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { Principal } from '../domain/context.ts';
import { DomainError } from '../domain/errors.ts';
import { clientKind, labelOf } from './grants.ts';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/** The interaction of `uid` in this browser, or a clear refusal. */
async function interactionOf(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
): Promise<Interaction> {
  let interaction: Interaction;
  try {
    interaction = await provider.interactionDetails(req, res);
  } catch {
    throw new DomainError(
      'NOT_FOUND',
      'this authorization request is over, or was started in another browser: start again from the client',
    );
  }
  if (interaction.uid !== uid) {
    throw new DomainError(
      'NOT_FOUND',
      'this browser is answering another authorization request: start again',
    );
  }
  return interaction;
}

function requestedResources(interaction: Interaction): string[] {
  const resource = interaction.params.resource;
  if (typeof resource === 'string') return [resource];
  return Array.isArray(resource) ? resource.filter((r): r is string => typeof r === 'string') : [];
}

/** The MCP scopes the request asks for; all of them when it names none. */
function requestedScopes(interaction: Interaction): string[] {
  const asked = String(interaction.params.scope ?? '').split(' ');
  const mcp = MCP_SCOPES.filter((scope) => asked.includes(scope));
  return mcp.length > 0 ? mcp : [...MCP_SCOPES];
}

async function isYours(db: PrismaClient, resource: OAuthResource | undefined, principal: Principal) {
  if (!resource) return false;
  if (resource.kind === 'caller') return true;
  const aei = await db.aei.findUnique({ where: { id: resource.id }, select: { userId: true } });
  return aei?.userId === principal.userId;
}

export interface ConsentDeps {
  db: PrismaClient;
  provider: Provider;
  gatewayPublicUrl: string;
  /** Whether a client id is one the operator registered (OAUTH_CLIENTS). */
  registered: (clientId: string) => boolean;
}

/** What the consent screen shows for interaction `uid`. */
export async function consentDetails(
  deps: ConsentDeps,
  principal: Principal,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
): Promise<OAuthConsentDetails> {
  const interaction = await interactionOf(deps.provider, req, res, uid);
  const clientId = String(interaction.params.client_id);
  const client = await deps.provider.Client.find(clientId);
  if (!client) throw new DomainError('NOT_FOUND', 'the client of this request is no longer known');
  const redirectUri = String(interaction.params.redirect_uri ?? client.redirectUris?.[0] ?? '');
  const resources = [];
  for (const indicator of requestedResources(interaction)) {
    const resource = resourceOfIndicator(indicator, deps.gatewayPublicUrl);
    const yours = await isYours(deps.db, resource, principal);
    resources.push({
      resource: indicator,
      kind: resource?.kind ?? 'aei',
      // Another person's exposure is not named (nor is whether it exists).
      label: yours ? await labelOf(deps.db, resource) : 'not one of your exposures',
      yours,
    });
  }
  return {
    client: {
      client_id: clientId,
      name: typeof client.clientName === 'string' ? client.clientName : null,
      kind: clientKind(clientId, deps.registered(clientId)),
      redirect_host: URL.parse(redirectUri)?.host ?? redirectUri,
    },
    resources,
    scopes: requestedScopes(interaction),
    offline: client.grantTypeAllowed('refresh_token'),
  };
}

/**
 * The person's answer to interaction `uid`: where the browser goes next (back to the client with a
 * code, or with `access_denied`). Allowing needs every requested URL to be the person's.
 */
export async function answerConsent(
  deps: ConsentDeps,
  principal: Principal,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
  allow: boolean,
): Promise<string> {
  const { provider } = deps;
  const interaction = await interactionOf(provider, req, res, uid);
  if (!allow) {
    return provider.interactionResult(
      req,
      res,
      { error: 'access_denied', error_description: 'the person denied the request' },
      { mergeWithLastSubmission: false },
    );
  }
  const indicators = requestedResources(interaction);
  if (indicators.length === 0) {
    throw new DomainError(
      'VALIDATION_FAILED',
      'the client named no MCP URL to use (the resource parameter, RFC 8707): it cannot be allowed',
    );
  }
  for (const indicator of indicators) {
    const resource = resourceOfIndicator(indicator, deps.gatewayPublicUrl);
    if (!(await isYours(deps.db, resource, principal))) {
      throw new DomainError('FORBIDDEN', `${indicator} is not yours to give: only Deny is possible`);
    }
  }
  const clientId = String(interaction.params.client_id);
  // The grant this client already has from this person grows; another is never reused.
  const existing = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
  const grant =
    existing && existing.accountId === principal.userId && existing.clientId === clientId
      ? existing
      : new provider.Grant({ accountId: principal.userId, clientId });
  const scopes = requestedScopes(interaction).join(' ');
  // What the request named among the server's scopes is granted as asked (the library checks it).
  const named = String(interaction.params.scope ?? '')
    .split(' ')
    .filter((scope) => scope === 'openid' || scope === 'offline_access' || scopes.includes(scope));
  if (named.length > 0) grant.addOIDCScope(named.join(' '));
  for (const indicator of indicators) grant.addResourceScope(indicator, scopes);
  const grantId = await grant.save();
  return provider.interactionResult(
    req,
    res,
    { login: { accountId: principal.userId }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}
