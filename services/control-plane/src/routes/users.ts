/** Users: the root token creates users; anyone can ask who they are. */
import { CreateUserBody, CreatedUser, User } from '@bindery/contracts';
import { createUser, getMe } from '../domain/users.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function userRoutes(app: AdminApp): Promise<void> {
  const db = app.domain.prisma;
  app.post(
    '/users',
    {
      schema: {
        tags: ['users'],
        summary: 'Create a user (root token only); the answer holds the user’s admin token, once',
        security: adminSecurity,
        body: CreateUserBody,
        response: { 201: CreatedUser, ...errorResponses(403) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createUser(db, request.principal, request.body.name)),
  );
  app.get(
    '/me',
    {
      schema: {
        tags: ['users'],
        summary: 'The user behind the token',
        security: adminSecurity,
        response: { 200: User, ...errorResponses() },
      },
    },
    async (request) => getMe(db, request.principal),
  );
}
