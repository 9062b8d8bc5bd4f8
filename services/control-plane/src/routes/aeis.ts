/**
 * AEIs: `/api/v2/aeis`, key rotation, playground keys and the tool-list preview. Creating an AEI
 * and rotating its key answer, with the key, how clients connect (URLs on the public gateway,
 * client configs, and the stdio entry's configs for a caller mapped to it). A playground key's
 * answer names the gateway's MCP endpoint and REST entry, the key going in a Bearer header.
 */
import {
  Aei,
  AeiWithKey,
  CreateAeiBody,
  IdParams,
  MCP_SERVER_PATH,
  Page,
  PageQuery,
  PlaygroundKey,
  REST_PATH,
  ToolList,
  UpdateAeiBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import { createAei, deleteAei, getAei, listAeis, rotateAeiKey, updateAei } from '../exposure/aeis.ts';
import { stdioConfigsForAei } from '../exposure/callers.ts';
import { connectionOf } from '../exposure/client-configs.ts';
import { createPlaygroundKey } from '../accounts/playground-keys.ts';
import { previewTools } from '../exposure/tools.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export interface AeiRouteOptions {
  /** Where MCP clients reach a gateway (GATEWAY_PUBLIC_URL). */
  gatewayPublicUrl: string;
}

export function aeiRoutes(options: AeiRouteOptions) {
  return async function routes(app: AdminApp): Promise<void> {
    await aeiRoutesOn(app, options);
  };
}

async function aeiRoutesOn(app: AdminApp, options: AeiRouteOptions): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['aeis'];
  const withConnection = async <T extends Aei & { api_key: string }>(aei: T) => ({
    ...aei,
    ...connectionOf(options.gatewayPublicUrl, aei.name, aei.api_key),
    stdio_configs: await stdioConfigsForAei(db, options.gatewayPublicUrl, aei),
  });
  app.post(
    '/aeis',
    {
      schema: {
        tags,
        summary:
          'Create an exposure; the answer holds its api_key, shown this once only, with its MCP URLs ' +
          'and client configs',
        security: adminSecurity,
        body: CreateAeiBody,
        response: { 201: AeiWithKey, ...errorResponses() },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await withConnection(await createAei(db, request.principal, request.body))),
  );
  app.get(
    '/aeis',
    {
      schema: {
        tags,
        summary: 'List your exposures',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(Aei), ...errorResponses() },
      },
    },
    async (request) => listAeis(db, request.principal, request.query),
  );
  app.get(
    '/aeis/:id',
    {
      schema: {
        tags,
        summary: 'Get an exposure',
        security: adminSecurity,
        params: IdParams,
        response: { 200: Aei, ...errorResponses(404) },
      },
    },
    async (request) => getAei(db, request.principal, request.params.id),
  );
  app.patch(
    '/aeis/:id',
    {
      schema: {
        tags,
        summary: 'Rename, enable/disable or change the exposure mode',
        security: adminSecurity,
        params: IdParams,
        body: UpdateAeiBody,
        response: { 200: Aei, ...errorResponses(404) },
      },
    },
    async (request) => updateAei(ctx, request.principal, request.params.id, request.body),
  );
  app.post(
    '/aeis/:id/rotate-key',
    {
      schema: {
        tags,
        summary: 'Replace the api_key; the old one stops working, the new one is shown once',
        security: adminSecurity,
        params: IdParams,
        response: { 200: AeiWithKey, ...errorResponses(404) },
      },
    },
    async (request) => withConnection(await rotateAeiKey(ctx, request.principal, request.params.id)),
  );
  app.post(
    '/aeis/:id/playground-keys',
    {
      schema: {
        tags,
        summary:
          'Make a playground key: the gateway serves it like the api_key for an hour, auditing its ' +
          'calls as caller "@console" (at most 10 per exposure: a new one removes the oldest)',
        security: adminSecurity,
        params: IdParams,
        response: { 201: PlaygroundKey, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const key = await createPlaygroundKey(ctx, request.principal, request.params.id);
      return reply.status(201).send({
        api_key: key.secret,
        aei_id: key.aeiId,
        expires_at: key.expiresAt.toISOString(),
        // As the AEI's connection info's mcp_url_header: the key goes in a Bearer header.
        mcp_url: `${options.gatewayPublicUrl}${MCP_SERVER_PATH}`,
        rest_url: `${options.gatewayPublicUrl}${REST_PATH}`,
      });
    },
  );
  app.delete(
    '/aeis/:id',
    {
      schema: {
        tags,
        summary: 'Delete an exposure and its bindings (the tools themselves stay)',
        security: adminSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteAei(ctx, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
  app.get(
    '/aeis/:id/tools',
    {
      schema: {
        tags,
        summary: 'The exact MCP tool list this exposure serves (direct mode), for a preview',
        security: adminSecurity,
        params: IdParams,
        response: { 200: ToolList, ...errorResponses(404) },
      },
    },
    async (request) => previewTools(db, request.principal, request.params.id),
  );
}
