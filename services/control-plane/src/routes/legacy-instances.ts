/** Legacy v1 MCP instances: `/api/v1/mcp`. */
import {
  CreateMcpInstanceBody,
  DryRunQuery,
  IdParams,
  InstanceMigration,
  InstanceRollback,
  McpInstance,
  McpInstanceWithKey,
  MigrateInstancesBody,
  MigrationReport,
  Page,
  PageQuery,
} from '@bindery/contracts';
import { Type } from 'typebox';
import { createInstance, deleteInstance, getInstance, listInstances } from '../legacy/legacy-instances.ts';
import { migrateInstance, migrateInstances, rollbackInstance } from '../legacy/legacy-migration.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function legacyInstanceRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
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
        summary: 'Delete a v1 instance (a migrated one: retires its v1 URL; its AEI stays)',
        security: adminSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteInstance(ctx, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
  app.post(
    '/mcp/:id/migrate',
    {
      schema: {
        tags,
        summary:
          'Turn a v1 instance into ADIs + an AEI + bindings that keep its api_key, tool names and ' +
          'descriptions (dry_run: only report)',
        security: adminSecurity,
        params: IdParams,
        querystring: DryRunQuery,
        response: { 200: InstanceMigration, ...errorResponses(404) },
      },
    },
    async (request) =>
      migrateInstance(ctx, request.principal, request.params.id, request.query.dry_run ?? false),
  );
  app.post(
    '/mcp/migrate',
    {
      schema: {
        tags,
        summary:
          'Migrate many v1 instances (`ids`, or all of yours), each all or nothing; failures are ' +
          'reported per instance',
        security: adminSecurity,
        querystring: DryRunQuery,
        body: MigrateInstancesBody,
        response: { 200: MigrationReport, ...errorResponses() },
      },
      // No body at all means every instance, like `{}`.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) =>
      migrateInstances(ctx, request.principal, request.body, request.query.dry_run ?? false, (err, id) =>
        request.log.error({ err, instance_id: id }, 'legacy migration failed'),
      ),
  );
  app.post(
    '/mcp/:id/rollback',
    {
      schema: {
        tags,
        summary:
          'Undo a migration: the api_key goes back to the v1 instance; the AEI and the ADIs it made ' +
          '(unless bound elsewhere) are deleted',
        security: adminSecurity,
        params: IdParams,
        querystring: DryRunQuery,
        response: { 200: InstanceRollback, ...errorResponses(404, 409) },
      },
    },
    async (request) =>
      rollbackInstance(ctx, request.principal, request.params.id, request.query.dry_run ?? false),
  );
}
