/** ADIs: `/api/v2/adis`. */
import { Adi, AdiListQuery, ForceQuery, IdParams, Page, UpdateAdiBody } from '@bindery/contracts';
import { Type } from 'typebox';
import { createAdi, deleteAdi, getAdi, listAdis, updateAdi } from '../domain/adis.ts';
import { CREATE_ADI_BODY } from '../domain/tool-kinds/index.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function adiRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['adis'];
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
