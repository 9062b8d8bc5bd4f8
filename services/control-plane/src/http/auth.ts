/**
 * Admin authentication: `Authorization: Bearer <admin token>` on every admin route. The caller
 * becomes `request.principal`; a missing, unknown, revoked or expired token, or one of a disabled
 * user, is UNAUTHORIZED with a message saying which.
 */
import { bearerToken } from '@bindery/contracts';
import type { FastifyInstance } from 'fastify';
import type { Principal } from '../domain/context.ts';
import { authenticate } from '../accounts/admin-tokens.ts';
import { DomainError } from '../domain/errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/** Adds the onRequest hook that authenticates every route of this (encapsulated) instance. */
export function requireAdmin(app: FastifyInstance): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token)
      throw new DomainError('UNAUTHORIZED', 'send an admin token as "Authorization: Bearer <token>"');
    request.principal = await authenticate(app.domain.prisma, token);
  });
}
