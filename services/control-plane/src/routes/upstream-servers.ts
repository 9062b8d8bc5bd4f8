/**
 * Upstream MCP servers: `/api/v2/upstream-servers`. Creating one runs its first sync; the answer
 * carries its tools, or its status and last_error say why there are none. Env and header values
 * are answered as written (`{{secret.NAME}}` references, never values).
 */
import {
  UpstreamConnectAnswer,
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
  upstreamOAuthTarget,
  upstreamServerLogs,
  type UpstreamDeps,
} from '../kinds/mcp/upstream-servers.ts';
import {
  CALLBACK_PATH,
  CLIENT_METADATA_PATH,
  CallbackRefused,
  FLOW_TTL_MS,
  type UpstreamOAuth,
} from '../kinds/mcp/oauth/broker.ts';
import { connectPagePath } from '../kinds/mcp/oauth/target.ts';
import { DomainError } from '../domain/errors.ts';
import { cookieValue } from '../http/cookies.ts';
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
    app.post(
      '/upstream-servers/:id/oauth/connect',
      {
        schema: {
          tags,
          summary:
            'Connect your account to a server that requires OAuth: answers where to send your browser (authorization code with PKCE); the authorization server sends it back to the control plane, which keeps your tokens and opens the console again',
          security: adminSecurity,
          params: IdParams,
          response: { 200: UpstreamConnectAnswer, ...errorResponses(404, 409, 502, 503) },
        },
      },
      async (request, reply) => {
        const target = await upstreamOAuthTarget(ctx, request.params.id, request.principal.userId);
        const oauth = oauthOf(deps);
        const started = await oauth.connect(target);
        const secure = oauth.secureCookies() ? '; Secure' : '';
        // Binds the flow to this browser: the callback is refused without it.
        void reply
          .header(
            'set-cookie',
            `${started.cookie}=${started.binding}; Path=${CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age=${FLOW_TTL_MS / 1000}${secure}`,
          )
          .header('cache-control', 'no-store');
        return { authorization_url: started.authorizationUrl };
      },
    );
    app.delete(
      '/upstream-servers/:id/oauth/connection',
      {
        schema: {
          tags,
          summary:
            'Disconnect your account from a server that requires OAuth: its tokens are revoked at its authorization server (when it offers revocation) and deleted',
          security: adminSecurity,
          params: IdParams,
          response: {
            200: Type.Object({
              revoked: Type.Boolean({ description: 'the authorization server accepted the revocation' }),
            }),
            ...errorResponses(404, 409),
          },
        },
      },
      async (request) =>
        oauthOf(deps).disconnect(await upstreamOAuthTarget(ctx, request.params.id, request.principal.userId)),
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

function oauthOf(deps: UpstreamDeps): UpstreamOAuth {
  const oauth = deps.registry.oauth;
  if (!oauth)
    throw new DomainError('NOT_CONFIGURED', 'this control plane does not run OAuth for upstream servers');
  return oauth;
}

/**
 * The OAuth client's public pages: the callback the upstream's authorization server sends the
 * browser back to (then on to the console page of the server, saying how it went), and Bindery's
 * Client ID Metadata Document.
 */
export function upstreamOAuthRoutes(deps: UpstreamDeps) {
  return async function routes(app: AdminApp): Promise<void> {
    const hidden = { schema: { hide: true } };
    app.get(CLIENT_METADATA_PATH, hidden, async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=300').send(oauthOf(deps).clientDocument()),
    );
    app.get<{ Querystring: Record<string, string | undefined> }>(
      CALLBACK_PATH,
      hidden,
      async (request, reply) => {
        void reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
        const query = Object.fromEntries(
          ['code', 'state', 'iss', 'error', 'error_description'].map((name) => {
            const value = request.query[name];
            return [name, typeof value === 'string' ? value : undefined];
          }),
        );
        const ctx = app.domain;
        try {
          const done = await oauthOf(deps).finish(
            query,
            (name) => {
              // The flow's cookie is spent either way.
              void reply.header(
                'set-cookie',
                `${name}=; Path=${CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age=0`,
              );
              return cookieValue(request.headers.cookie, name);
            },
            (serverId, userId) => upstreamOAuthTarget(ctx, serverId, userId),
          );
          return reply.redirect(`${connectPagePath(done.serverId)}&oauth=connected`, 303);
        } catch (error) {
          if (!(error instanceof CallbackRefused)) throw error;
          // The console says a fixed sentence for the reason; the detail (no token in it) is logged.
          request.log.info({ reason: error.reason, detail: error.detail }, 'upstream OAuth callback refused');
          const where = new URLSearchParams({
            ...(error.serverId !== undefined && { server: error.serverId }),
            oauth_error: error.reason,
          });
          return reply.redirect(`/console/tools/upstreams?${where.toString()}`, 303);
        }
      },
    );
  };
}
