/**
 * Authentication of the internal API: `Authorization: Bearer <INTERNAL_TOKEN>`, compared in
 * constant time. Admin tokens and api keys never open it; without a configured token it is shut.
 */
import { bearerTokenCheck } from '@bindery/service-kit';
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../domain/errors.ts';

/** Adds the onRequest hook guarding every route of this (encapsulated) instance. */
export function requireInternal(app: FastifyInstance, internalToken: string | undefined): void {
  const matches = internalToken === undefined ? undefined : bearerTokenCheck(internalToken);
  app.addHook('onRequest', async (request) => {
    if (!matches) {
      throw new DomainError('UNAUTHORIZED', 'the internal API is disabled: INTERNAL_TOKEN is not set');
    }
    if (!matches(request.headers.authorization)) {
      throw new DomainError(
        'UNAUTHORIZED',
        'the internal API needs "Authorization: Bearer <INTERNAL_TOKEN>"',
      );
    }
  });
}
