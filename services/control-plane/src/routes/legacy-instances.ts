/** Legacy v1 MCP instances: `/api/v1/mcp`. */
import {
  CreateMcpInstanceBody,
  IdParams,
  McpInstance,
  McpInstanceWithKey,
  Page,
  PageQuery,
} from '@bindery/contracts';
import { Type } from 'typebox';
import { createInstance, deleteInstance, getInstance, listInstances } from '../domain/legacy-instances.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function legacyInstanceRoutes(app: AdminApp): Promise<void> {
  const db = app.domain.prisma;
  const tags = ['legacy v1'];
  app.post(
    '/mcp',
    {
      schema: {
        tags,
        summary: 'Create a v1 instance (one key, one context); the answer holds its api_key, once',
        security: adminSecurity,
        body: CreateMcpInstanceBody,
        response: { 201: McpInstanceWithKey, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createInstance(db, request.principal, request.body)),
  );
  app.get(
    '/mcp',
    {
      schema: {
        tags,
        summary: 'List your v1 instances',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(McpInstance), ...errorResponses() },
      },
    },
    async (request) => listInstances(db, request.principal, request.query),
  );
  app.get(
    '/mcp/:id',
    {
      schema: {
        tags,
        summary: 'Get a v1 instance',
        security: adminSecurity,
        params: IdParams,
        response: { 200: McpInstance, ...errorResponses(404) },
      },
    },
    async (request) => getInstance(db, request.principal, request.params.id),
  );
  app.delete(
    '/mcp/:id',
    {
      schema: {
        tags,
        summary: 'Delete a v1 instance',
        security: adminSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteInstance(db, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
