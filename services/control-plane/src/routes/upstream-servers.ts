/**
 * Upstream MCP servers: `/api/v2/upstream-servers`. Creating one runs its first sync; the answer
 * carries its tools, or its status and last_error say why there are none. Env and header values
 * are answered as written (`{{secret.NAME}}` references, never values).
 */
import {
  ConfigUpstreamPrompt,
  ConfigUpstreamResource,
  ConfigUpstreamResourceTemplate,
  CreateUpstreamServerBody,
  IdParams,
  UpdateUpstreamServerBody,
  UpstreamServer,
  UpstreamServerLogs,
} from '@bindery/contracts';
import { Type } from 'typebox';
import {
  createUpstreamServer,
  deleteUpstreamServer,
  getUpstreamServer,
  listUpstreamServers,
  syncUpstreamServer,
  upstreamServerLogs,
  type UpstreamDeps,
} from '../kinds/mcp/upstream-servers.ts';
import { aeiUpstreamCatalog } from '../exposure/upstream-catalog.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';
import { updateUpstreamServer } from '../kinds/mcp/upstream-servers.ts';

const SyncReport = Type.Object({
  added: Type.Array(Type.String()),
  updated: Type.Array(Type.String()),
  missing: Type.Array(Type.String()),
  warnings: Type.Array(Type.String()),
  server: UpstreamServer,
});

const UpstreamClash = Type.Object({
  kind: Type.Union([Type.Literal('resource'), Type.Literal('prompt')]),
  name: Type.String({ description: 'the resource’s URI, or the prompt’s name as the AEI would serve it' }),
  used: Type.String({
    description:
      'who serves it: `bindery` (the AEI’s own resources), `aei_prompt` (the AEI’s own prompts) or the id of the upstream server attached first',
  }),
  hidden: Type.Array(Type.String(), { description: 'the upstream servers whose entry is left out' }),
});

const AeiUpstreamCatalog = Type.Object({
  resources: Type.Array(ConfigUpstreamResource, {
    description: 'what the AEI serves of its attached servers’ resources (config v2 `upstream_resources`)',
  }),
  resource_templates: Type.Array(ConfigUpstreamResourceTemplate, {
    description:
      'what the AEI serves of its attached servers’ resource templates (config v2 `upstream_resource_templates`)',
  }),
  prompts: Type.Array(ConfigUpstreamPrompt, {
    description: 'what the AEI serves of its attached servers’ prompts (config v2 `upstream_prompts`)',
  }),
  clashes: Type.Array(UpstreamClash),
  left_out: Type.Object(
    { resources: Type.Integer(), prompts: Type.Integer() },
    { description: 'entries past the per-AEI limits (2,000 resources, 1,000 prompts), not served' },
  ),
});

export function upstreamServerRoutes(deps: UpstreamDeps) {
  return async function routes(app: AdminApp): Promise<void> {
    const ctx = app.domain;
    const db = ctx.prisma;
    const tags = ['upstream-servers'];
    app.get(
      '/aeis/:id/upstream-catalog',
      {
        schema: {
          tags,
          summary:
            'The resources and prompts the exposure’s attached upstream servers add to it (as served while ' +
            'it is enabled), and what was left out because another offers the same URI or name',
          security: adminSecurity,
          params: IdParams,
          response: { 200: AeiUpstreamCatalog, ...errorResponses(404) },
        },
      },
      async (request) => aeiUpstreamCatalog(db, request.principal, request.params.id),
    );
    app.post(
      '/upstream-servers',
      {
        schema: {
          tags,
          summary: 'Add an upstream MCP server (stdio or HTTP); its tools are synced into ADIs of kind mcp',
          security: adminSecurity,
          body: CreateUpstreamServerBody,
          response: { 201: UpstreamServer, ...errorResponses(403, 409) },
        },
      },
      async (request, reply) =>
        reply.status(201).send(await createUpstreamServer(ctx, request.principal, request.body, deps)),
    );
    app.get(
      '/upstream-servers',
      {
        schema: {
          tags,
          summary: 'List your upstream servers with their status, tools and pool',
          security: adminSecurity,
          response: { 200: Type.Object({ items: Type.Array(UpstreamServer), next_cursor: Type.Null() }) },
        },
      },
      async (request) => listUpstreamServers(db, request.principal, deps),
    );
    app.get(
      '/upstream-servers/:id',
      {
        schema: {
          tags,
          summary: 'One upstream server: status, last error, last sync, tools, the servers sharing its pool',
          security: adminSecurity,
          params: IdParams,
          response: { 200: UpstreamServer, ...errorResponses(404) },
        },
      },
      async (request) => getUpstreamServer(db, request.principal, request.params.id, deps),
    );
    app.patch(
      '/upstream-servers/:id',
      {
        schema: {
          tags,
          summary: 'Change an upstream server; a changed spec restarts its pool and syncs again',
          security: adminSecurity,
          params: IdParams,
          body: UpdateUpstreamServerBody,
          response: { 200: UpstreamServer, ...errorResponses(403, 404) },
        },
      },
      async (request) => updateUpstreamServer(ctx, request.principal, request.params.id, request.body, deps),
    );
    app.delete(
      '/upstream-servers/:id',
      {
        schema: {
          tags,
          summary: 'Delete an upstream server: its pool stops; its tools stay and their calls fail clearly',
          security: adminSecurity,
          params: IdParams,
          response: { 204: Type.Null(), ...errorResponses(404) },
        },
      },
      async (request, reply) => {
        await deleteUpstreamServer(ctx, request.principal, request.params.id, deps);
        return reply.status(204).send(null);
      },
    );
    app.post(
      '/upstream-servers/:id/sync',
      {
        schema: {
          tags,
          summary: 'List the server’s tools now and store them (added, updated, missing)',
          security: adminSecurity,
          params: IdParams,
          response: { 200: SyncReport, ...errorResponses(404) },
        },
      },
      async (request) => {
        await getUpstreamServer(db, request.principal, request.params.id, deps);
        const report = await syncUpstreamServer(ctx, request.params.id, deps, 'admin');
        return { ...report, server: await getUpstreamServer(db, request.principal, request.params.id, deps) };
      },
    );
    app.get(
      '/upstream-servers/:id/logs',
      {
        schema: {
          tags,
          summary: 'The newest stderr lines of the server’s stdio children in this control plane',
          security: adminSecurity,
          params: IdParams,
          response: { 200: UpstreamServerLogs, ...errorResponses(404) },
        },
      },
      async (request) => upstreamServerLogs(db, request.principal, request.params.id, deps),
    );
  };
}
