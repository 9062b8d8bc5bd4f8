/**
 * Personal MCP keys (`/api/v2/mcp-keys`) and the caller map (`/api/v2/callers`): each user's own
 * keys for the caller entries, their default profile and which profile each caller gets.
 */
import {
  CallerList,
  CallerMapping,
  CallerParams,
  CallerResolution,
  CreateMcpKeyBody,
  IdParams,
  McpKey,
  McpKeyWithSecret,
  Page,
  PageQuery,
  PutCallerBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import { deleteCaller, getCaller, listCallers, putCaller } from '../exposure/callers.ts';
import { createMcpKey, deleteMcpKey, listMcpKeys, rotateMcpKey } from '../accounts/mcp-keys.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export interface CallerRouteOptions {
  /** Where MCP clients reach a gateway (GATEWAY_PUBLIC_URL): the stdio entry's BINDERY_URL. */
  gatewayPublicUrl: string;
}

export function callerRoutes(options: CallerRouteOptions) {
  return async function routes(app: AdminApp): Promise<void> {
    mcpKeyRoutes(app);
    callerMapRoutes(app, options);
  };
}

function mcpKeyRoutes(app: AdminApp): void {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['mcp-keys'];
  app.post(
    '/mcp-keys',
    {
      schema: {
        tags,
        summary: 'Create a personal MCP key for the caller entries; the answer holds it, shown this once',
        security: adminSecurity,
        body: CreateMcpKeyBody,
        response: { 201: McpKeyWithSecret, ...errorResponses() },
      },
    },
    async (request, reply) => reply.status(201).send(await createMcpKey(db, request.principal, request.body)),
  );
  app.get(
    '/mcp-keys',
    {
      schema: {
        tags,
        summary: 'List your personal MCP keys (never the keys themselves)',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(McpKey), ...errorResponses() },
      },
    },
    async (request) => listMcpKeys(db, request.principal, request.query),
  );
  app.post(
    '/mcp-keys/:id/rotate',
    {
      schema: {
        tags,
        summary: 'Replace a personal MCP key (same id and name); the old one stops working at once',
        security: adminSecurity,
        params: IdParams,
        response: { 200: McpKeyWithSecret, ...errorResponses(404) },
      },
    },
    async (request) => rotateMcpKey(ctx, request.principal, request.params.id),
  );
  app.delete(
    '/mcp-keys/:id',
    {
      schema: {
        tags,
        summary: 'Delete a personal MCP key; it stops working at once on every gateway',
        security: adminSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteMcpKey(ctx, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
}

function callerMapRoutes(app: AdminApp, options: CallerRouteOptions): void {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['callers'];
  app.get(
    '/callers',
    {
      schema: {
        tags,
        summary: 'Your default profile (made if you have none yet) and the callers you mapped to profiles',
        security: adminSecurity,
        response: { 200: CallerList, ...errorResponses() },
      },
    },
    async (request) => listCallers(db, request.principal),
  );
  app.get(
    '/callers/:caller',
    {
      schema: {
        tags,
        summary:
          'How a caller resolves now (its profile, or the default one), with the stdio entry’s client configs',
        security: adminSecurity,
        params: CallerParams,
        response: { 200: CallerResolution, ...errorResponses() },
      },
    },
    async (request) => getCaller(db, request.principal, request.params.caller, options.gatewayPublicUrl),
  );
  app.put(
    '/callers/:caller',
    {
      schema: {
        tags,
        summary: 'Map a caller to one of your exposures (its profile); gateways switch at once',
        security: adminSecurity,
        params: CallerParams,
        body: PutCallerBody,
        response: { 200: CallerMapping, ...errorResponses(404) },
      },
    },
    async (request) => putCaller(ctx, request.principal, request.params.caller, request.body),
  );
  app.delete(
    '/callers/:caller',
    {
      schema: {
        tags,
        summary: 'Remove a caller’s mapping: it gets the default profile again',
        security: adminSecurity,
        params: CallerParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteCaller(ctx, request.principal, request.params.caller);
      return reply.status(204).send(null);
    },
  );
}
