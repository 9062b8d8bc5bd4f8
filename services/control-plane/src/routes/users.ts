/**
 * Users: the root user creates, lists, disables and deletes users; anyone can ask who they are.
 */
import {
  CreateUserBody,
  CreatedUser,
  DeleteUserQuery,
  IdParams,
  Page,
  PageQuery,
  SetPasswordBody,
  SignInAnswer,
  SignInBody,
  UpdateUserBody,
  User,
  UserDetail,
} from '@bindery/contracts';
import { setPassword, signIn, SignInThrottle } from '../accounts/passwords.ts';
import { Type } from 'typebox';
import { createUser, deleteUser, getMe, getUser, listUsers, updateUser } from '../accounts/users.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function userRoutes(app: AdminApp): Promise<void> {
  const ctx = app.domain;
  const db = ctx.prisma;
  const tags = ['users'];
  app.post(
    '/users',
    {
      schema: {
        tags,
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
    '/users',
    {
      schema: {
        tags,
        summary: 'List every user (root only)',
        security: adminSecurity,
        querystring: PageQuery,
        response: { 200: Page(User), ...errorResponses(403) },
      },
    },
    async (request) => listUsers(db, request.principal, request.query),
  );
  app.get(
    '/users/:id',
    {
      schema: {
        tags,
        summary: 'A user and counts of what it owns (root only)',
        security: adminSecurity,
        params: IdParams,
        response: { 200: UserDetail, ...errorResponses(403, 404) },
      },
    },
    async (request) => getUser(db, request.principal, request.params.id),
  );
  app.patch(
    '/users/:id',
    {
      schema: {
        tags,
        summary:
          'Rename, disable or enable a user (root only); a disabled user’s tokens get 401 and its ' +
          'exposures stop serving',
        security: adminSecurity,
        params: IdParams,
        body: UpdateUserBody,
        response: { 200: User, ...errorResponses(403, 404) },
      },
    },
    async (request) => updateUser(ctx, request.principal, request.params.id, request.body),
  );
  app.delete(
    '/users/:id',
    {
      schema: {
        tags,
        summary:
          'Delete a user (root only; never the root user); 409 with counts while it owns anything, ' +
          'unless ?cascade=true',
        security: adminSecurity,
        params: IdParams,
        querystring: DeleteUserQuery,
        response: { 204: Type.Null(), ...errorResponses(403, 404, 409) },
      },
    },
    async (request, reply) => {
      await deleteUser(ctx, request.principal, request.params.id, request.query.cascade ?? false);
      return reply.status(204).send(null);
    },
  );
  app.get(
    '/me',
    {
      schema: {
        tags,
        summary: 'The user behind the token',
        security: adminSecurity,
        response: { 200: User, ...errorResponses() },
      },
    },
    async (request) => getMe(db, request.principal),
  );
  app.put(
    '/me/password',
    {
      schema: {
        tags,
        summary:
          'Set the caller’s password for console sign-in (POST /api/v2/sign-in); one already set must be ' +
          'given as current_password',
        security: adminSecurity,
        body: SetPasswordBody,
        response: { 204: Type.Null(), ...errorResponses(403, 409) },
      },
    },
    async (request, reply) => {
      await setPassword(db, request.principal, request.body);
      return reply.status(204).send(null);
    },
  );
}

/**
 * `POST /api/v2/sign-in`, the one admin route without a token: a name and password for an admin
 * token that expires (passwords.ts).
 */
export async function signInRoutes(app: AdminApp): Promise<void> {
  const throttle = new SignInThrottle();
  app.post(
    '/sign-in',
    {
      schema: {
        tags: ['users'],
        summary:
          'Sign in with a name and password: an admin token that expires in 12 hours (401 alike for an ' +
          'unknown name and a wrong password; 429 past 10 failures of a name, or 50 of an address, in 15 minutes)',
        body: SignInBody,
        response: { 200: SignInAnswer, ...errorResponses(429) },
      },
      // Read before any credential is: no larger than a name and a password need.
      bodyLimit: 8 * 1024,
    },
    async (request, reply) => {
      const answer = await signIn(app.domain.prisma, throttle, request.body, request.ip);
      // A token: kept by no cache.
      void reply.header('cache-control', 'no-store');
      return answer;
    },
  );
}
