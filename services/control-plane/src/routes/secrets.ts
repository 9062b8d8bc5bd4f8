/**
 * Secrets: `/api/v2/secrets`, each user's named secrets. Values go in (create, replace) and never
 * come out: answers hold names and timestamps only (and the body parser's refusals quote nothing of
 * the body).
 */
import {
  CreateSecretBody,
  Page,
  PageQuery,
  Secret,
  SecretParams,
  UpdateSecretBody,
} from '@bindery/contracts';
import { Type } from 'typebox';
import { createSecret, deleteSecret, listSecrets, updateSecret } from '../secrets/secrets.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function secretRoutes(app: AdminApp): Promise<void> {
  const tags = ['secrets'];
  app.post(
    '/secrets',
    {
      schema: {
        tags,
        summary: 'Store a secret for your tools to use as {{secret.NAME}}; its value is never shown again',
        security: adminSecurity,
        body: CreateSecretBody,
        response: { 201: Secret, ...errorResponses(409, 503) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createSecret(app.domain, request.principal, request.body)),
  );
  app.get(
    '/secrets',
    {
      schema: {
        tags,
        summary: 'List your secrets: names and timestamps, never values',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(Secret), ...errorResponses() },
      },
    },
    async (request) => listSecrets(app.domain.prisma, request.principal, request.query),
  );
  app.put(
    '/secrets/:name',
    {
      schema: {
        tags,
        summary: 'Replace a secret’s value; tools use the new one from their next call',
        security: adminSecurity,
        params: SecretParams,
        body: UpdateSecretBody,
        response: { 200: Secret, ...errorResponses(404, 503) },
      },
    },
    async (request) => updateSecret(app.domain, request.principal, request.params.name, request.body.value),
  );
  app.delete(
    '/secrets/:name',
    {
      schema: {
        tags,
        summary: 'Delete a secret; tools that use it fail with NOT_FOUND until it exists again',
        security: adminSecurity,
        params: SecretParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await deleteSecret(app.domain, request.principal, request.params.name);
      return reply.status(204).send(null);
    },
  );
}
