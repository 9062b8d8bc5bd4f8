/** Admin tokens: `/api/v2/tokens`, each user's own named tokens. */
import { AdminToken, CreateTokenBody, CreatedToken, IdParams, Page, PageQuery } from '@bindery/contracts';
import { Type } from 'typebox';
import { createToken, listTokens, revokeToken } from '../accounts/admin-tokens.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function tokenRoutes(app: AdminApp): Promise<void> {
  const db = app.domain.prisma;
  const tags = ['tokens'];
  app.post(
    '/tokens',
    {
      schema: {
        tags,
        summary: 'Create a named admin token, optionally expiring; the answer holds it, shown this once',
        security: adminSecurity,
        body: CreateTokenBody,
        response: { 201: CreatedToken, ...errorResponses() },
      },
    },
    async (request, reply) => reply.status(201).send(await createToken(db, request.principal, request.body)),
  );
  app.get(
    '/tokens',
    {
      schema: {
        tags,
        summary: 'List your admin tokens (never the tokens themselves)',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(AdminToken), ...errorResponses() },
      },
    },
    async (request) => listTokens(db, request.principal, request.query),
  );
  app.delete(
    '/tokens/:id',
    {
      schema: {
        tags,
        summary: 'Revoke one of your admin tokens; it stops working at once',
        security: adminSecurity,
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await revokeToken(db, request.principal, request.params.id);
      return reply.status(204).send(null);
    },
  );
}
