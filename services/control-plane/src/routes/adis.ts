/** ADIs: `/api/v2/adis`. */
import {
  Adi,
  AdiListQuery,
  ForceQuery,
  IdParams,
  Page,
  TrialRunBody,
  TrialRunResult,
  UpdateAdiBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import type { Dispatcher } from 'undici';
import { createAdi, deleteAdi, getAdi, listAdis, updateAdi } from '../kinds/adis.ts';
import { trialRun } from '../kinds/trial-runs.ts';
import { createGuardedDispatcher } from '../outbound/ssrf-guard.ts';
import { CREATE_ADI_BODY } from '../kinds/registry.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export interface AdiRouteOptions {
  /**
   * The guarded dispatcher a trial run's `ctx.fetch` goes through: the app's (so
   * HTTP_TOOLS_ALLOWED_NETWORKS applies as to calls); without one, a dispatcher of its own that
   * reaches public addresses only.
   */
  outbound?: Dispatcher;
}

export async function adiRoutes(app: AdminApp, options: AdiRouteOptions = {}): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['adis'];
  let outbound = options.outbound;
  if (!outbound) {
    const own = createGuardedDispatcher({ allowedNetworks: [] });
    app.addHook('onClose', () => own.close());
    outbound = own;
  }
  const trial = { outbound, log: app.log.child({ component: 'trial-runs' }) };
  app.post(
    '/adis/trial-runs',
    {
      schema: {
        tags,
        summary:
          'Run an unsaved custom tool once with arguments: checked as a create, run as a call; stores nothing, writes no context',
        description:
          'The config is a custom ADI create body, refused with the same errors (a syntax error names its line and column); ' +
          'the arguments are checked against its input_schema (400). Once it runs, the answer is 200: ok with its result, ' +
          'or not with the tool error a call would answer (TIMEOUT, LIMIT_EXCEEDED, ...), its console lines and duration either way. ' +
          'A context it names is read; ctx.context.write is refused (FORBIDDEN). No tool call is audited.',
        security: adminSecurity,
        body: TrialRunBody,
        response: { 200: TrialRunResult, ...errorResponses(404) },
      },
    },
    async (request) => trialRun(ctx, request.principal, request.body, trial),
  );
  app.post(
    '/adis',
    {
      schema: {
        tags,
        summary:
          'Create an ADI of a kind (default context: one operation on the context at json_path of a table)',
        security: adminSecurity,
        // Only the kinds this server runs: another kind is refused naming `kind`.
        body: CREATE_ADI_BODY,
        response: { 201: Adi, ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createAdi(db, request.principal, request.body, ctx.sandbox)),
  );
  app.get(
    '/adis',
    {
      schema: {
        tags,
        summary: 'List your ADIs, optionally of one table or of one kind',
        security: adminSecurity,
        querystring: AdiListQuery,
        response: { 200: Page(Adi), ...errorResponses() },
      },
    },
    async (request) => listAdis(db, request.principal, request.query),
  );
  app.get(
    '/adis/:id',
    {
      schema: {
        tags,
        summary: 'Get an ADI',
        security: adminSecurity,
        params: IdParams,
        response: { 200: Adi, ...errorResponses(404) },
      },
    },
    async (request) => getAdi(db, request.principal, request.params.id),
  );
  app.patch(
    '/adis/:id',
    {
      schema: {
        tags,
        summary: 'Update an ADI; a new name renames inheriting bindings (409 on a clash in any AEI)',
        security: adminSecurity,
        params: IdParams,
        body: UpdateAdiBody,
        response: { 200: Adi, ...errorResponses(404, 409) },
      },
    },
    async (request) => updateAdi(ctx, request.principal, request.params.id, request.body),
  );
  app.delete(
    '/adis/:id',
    {
      schema: {
        tags,
        summary: 'Delete an ADI (409 while bound, unless ?force=true which unbinds it)',
        security: adminSecurity,
        params: IdParams,
        querystring: ForceQuery,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      await deleteAdi(ctx, request.principal, request.params.id, request.query.force ?? false);
      return reply.status(204).send(null);
    },
  );
}
