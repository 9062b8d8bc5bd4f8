/**
 * Protected Resource Metadata (RFC 9728) of each keyless MCP URL, at
 * `/.well-known/oauth-protected-resource/api/v2/mcp/aei/{aei_id}` and
 * `/.well-known/oauth-protected-resource/api/v2/mcp/caller[/{caller}]`: the URL itself as the
 * resource, the authorization server, the MCP scopes. Public (any origin may read it) and the same
 * for every id in the right shape: an id is not a credential, and the answer says nothing of
 * whether the exposure exists. Keyed URLs have none (their 401 names no metadata).
 */
import {
  MCP_AEI_PATH,
  MCP_CALLER_PATH,
  PROTECTED_RESOURCE_METADATA_PATH,
  pathOfResource,
  resourceOfPath,
} from '@bindery/contracts';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ResourceServer } from '../auth/oauth-resource.ts';
import { sendRestError } from '../http/rest-errors.ts';

export async function oauthMetadataRoutes(
  app: FastifyInstance,
  deps: { oauth: ResourceServer },
): Promise<void> {
  const answer = async (path: string, reply: FastifyReply) => {
    const resource = resourceOfPath(path);
    if (!resource) {
      return sendRestError(reply.request, reply, {
        status: 404,
        code: 'NOT_FOUND',
        message: 'no keyless MCP URL has this path (/api/v2/mcp/aei/{aei_id}, /api/v2/mcp/caller/{caller})',
      });
    }
    let metadata;
    try {
      metadata = await deps.oauth.metadata(pathOfResource(resource));
    } catch {
      return sendRestError(reply.request, reply, {
        status: 503,
        code: 'UPSTREAM_FAILED',
        message: 'the authorization server cannot be reached just now; try again shortly',
      });
    }
    return reply
      .header('access-control-allow-origin', '*')
      .header('cache-control', 'public, max-age=300')
      .send(metadata);
  };
  const base = PROTECTED_RESOURCE_METADATA_PATH;
  app.get<{ Params: { aei: string } }>(`${base}${MCP_AEI_PATH}/:aei`, (request, reply) =>
    answer(`${MCP_AEI_PATH}/${request.params.aei}`, reply),
  );
  app.get<{ Params: { caller: string } }>(`${base}${MCP_CALLER_PATH}/:caller`, (request, reply) =>
    answer(`${MCP_CALLER_PATH}/${request.params.caller}`, reply),
  );
  app.get(`${base}${MCP_CALLER_PATH}`, (_request, reply) => answer(MCP_CALLER_PATH, reply));
}
