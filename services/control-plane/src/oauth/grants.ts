/**
 * What a person gave clients: the grants the authorization server keeps (model `Grant` of the
 * store), listed and revoked by their person, and the internal question a gateway asks about a
 * token it verified: is its grant still there, is it this person's, does it open this keyless URL,
 * and what does that URL serve now.
 */
import {
  pathOfResource,
  resourceOfIndicator,
  type CallerIdentity,
  type ConfigV2,
  type OAuthGrant,
  type OAuthResource,
} from '@bindery/contracts';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { Principal } from '../domain/context.ts';
import { notFound } from '../domain/errors.ts';
import type { ClashLog } from '../exposure/upstream-catalog.ts';
import { callerEtag, resolveCaller } from '../exposure/callers.ts';
import { configOf } from '../exposure/exposure-config.ts';
import { OWNER_STATUS } from '../accounts/users.ts';
import type { GrantGone } from './oauth-store.ts';

/** What the library stores for a grant (the fields read here). */
interface GrantPayload {
  accountId?: string;
  clientId?: string;
  resources?: Record<string, string>;
  iat?: number;
  exp?: number;
}

/** How a client is known, from its id. */
export function clientKind(clientId: string, registered: boolean): OAuthGrant['client_kind'] {
  if (/^https:\/\//iu.test(clientId)) return 'metadata_document';
  return registered ? 'registered' : 'dynamic';
}

async function liveGrant(db: PrismaClient, id: string) {
  const row = await db.oAuthEntry.findUnique({ where: { model_id: { model: 'Grant', id } } });
  if (!row || (row.expiresAt !== null && row.expiresAt.getTime() <= Date.now())) return undefined;
  return { row, payload: row.payload as GrantPayload };
}

/** What a keyless URL is called for a person: an exposure's name, or a caller profile. */
export async function labelOf(db: PrismaClient, resource: OAuthResource | undefined): Promise<string> {
  if (!resource) return 'not an MCP URL of this Bindery';
  if (resource.kind === 'caller') {
    return resource.caller === null
      ? 'your default caller profile'
      : `your caller profile "${resource.caller}"`;
  }
  const aei = await db.aei.findUnique({ where: { id: resource.id }, select: { name: true } });
  return aei ? aei.name : 'an exposure that no longer exists';
}

/** The person's grants, newest first (each with the client's name when it registered one). */
export async function listGrants(
  db: PrismaClient,
  principal: Principal,
  gatewayPublicUrl: string,
  registered: (clientId: string) => boolean = () => false,
): Promise<OAuthGrant[]> {
  const rows = await db.oAuthEntry.findMany({
    where: {
      model: 'Grant',
      accountId: principal.userId,
      OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }],
    },
    orderBy: { createdAt: 'desc' },
    take: 500,
  });
  const grants: OAuthGrant[] = [];
  for (const row of rows) {
    const payload = row.payload as GrantPayload;
    const clientId = payload.clientId ?? '';
    const client = await db.oAuthEntry.findUnique({ where: { model_id: { model: 'Client', id: clientId } } });
    const clientName = (client?.payload as { client_name?: unknown } | undefined)?.client_name;
    const resources = [];
    for (const [resource, scope] of Object.entries(payload.resources ?? {})) {
      resources.push({
        resource,
        scopes: scope.split(' ').filter(Boolean),
        label: await labelOf(db, resourceOfIndicator(resource, gatewayPublicUrl)),
      });
    }
    grants.push({
      id: row.id,
      client_id: clientId,
      client_name: typeof clientName === 'string' ? clientName : null,
      client_kind: clientKind(clientId, registered(clientId)),
      resources,
      created_at: row.createdAt.toISOString(),
      expires_at: row.expiresAt?.toISOString() ?? null,
    });
  }
  return grants;
}

/**
 * Revokes a grant of the person's: its refresh tokens, codes and the grant go, and every gateway
 * drops what it cached for the person's exposures (`gone`), so its access tokens stop at once.
 */
export async function revokeGrant(
  db: PrismaClient,
  principal: Principal,
  id: string,
  gone: GrantGone,
): Promise<void> {
  const grant = await liveGrant(db, id);
  if (!grant || grant.row.accountId !== principal.userId) throw notFound('grant', id);
  await db.oAuthEntry.deleteMany({ where: { OR: [{ grantId: id }, { model: 'Grant', id }] } });
  await gone(principal.userId);
}

export type GrantLookup =
  | { kind: 'aei'; config: ConfigV2; caller?: CallerIdentity; etag: string }
  | { kind: 'aei-unchanged'; etag: string }
  | { kind: 'unknown' };

/**
 * What a verified token opens: `unknown` when its grant is gone or expired, is another person's,
 * does not name this keyless URL, or the exposure is not the person's (or they are disabled).
 */
export async function lookupGrant(
  db: PrismaClient,
  grantId: string,
  subject: string,
  resource: OAuthResource,
  gatewayPublicUrl: string,
  unchanged: (etag: string) => boolean,
  clashes?: ClashLog,
): Promise<GrantLookup> {
  const grant = await liveGrant(db, grantId);
  if (!grant || grant.payload.accountId !== subject) return { kind: 'unknown' };
  if (!Object.hasOwn(grant.payload.resources ?? {}, `${gatewayPublicUrl}${pathOfResource(resource)}`)) {
    return { kind: 'unknown' };
  }
  return lookupForUser(db, subject, grantId, resource, unchanged, clashes);
}

/**
 * What a keyless URL serves the user `subject` (a token already judged to be theirs for it):
 * `unknown` when they are disabled or the exposure is not theirs. `credentialId` stands where a
 * personal key's id would in the caller identity (audit rows name it).
 */
export async function lookupForUser(
  db: PrismaClient,
  subject: string,
  credentialId: string,
  resource: OAuthResource,
  unchanged: (etag: string) => boolean,
  clashes?: ClashLog,
): Promise<GrantLookup> {
  const user = await db.user.findUnique({ where: { id: subject }, select: { disabledAt: true } });
  if (!user || user.disabledAt) return { kind: 'unknown' };
  if (resource.kind === 'aei') {
    const aei = await db.aei.findUnique({ where: { id: resource.id }, include: OWNER_STATUS });
    if (!aei || aei.userId !== subject) return { kind: 'unknown' };
    const etag = `"${aei.id}.${aei.configVersion}"`;
    if (unchanged(etag)) return { kind: 'aei-unchanged', etag };
    return { kind: 'aei', config: await configOf(db, aei, clashes), etag };
  }
  const { aei, via } = await resolveCaller(db, subject, resource.caller);
  const etag = callerEtag(aei.id, aei.configVersion, via);
  if (unchanged(etag)) return { kind: 'aei-unchanged', etag };
  return {
    kind: 'aei',
    config: await configOf(db, aei, clashes),
    // The grant stands where a personal key would: audit rows name it.
    caller: { name: resource.caller, via, key_id: credentialId, user_id: subject },
    etag,
  };
}
