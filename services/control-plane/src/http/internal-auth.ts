/**
 * Authentication of the internal API: `Authorization: Bearer <INTERNAL_TOKEN>`, compared in
 * constant time. Admin tokens and api keys never open it; without a configured token it is shut.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerToken } from '@bindery/contracts';
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Adds the onRequest hook guarding every route of this (encapsulated) instance. */
export function requireInternal(app: FastifyInstance, internalToken: string | undefined): void {
  const expected = internalToken === undefined ? undefined : digest(internalToken);
  app.addHook('onRequest', async (request) => {
    if (!expected) {
      throw new DomainError('UNAUTHORIZED', 'the internal API is disabled: INTERNAL_TOKEN is not set');
    }
    const token = bearerToken(request.headers.authorization);
    if (!token || !timingSafeEqual(digest(token), expected)) {
      throw new DomainError(
        'UNAUTHORIZED',
        'the internal API needs "Authorization: Bearer <INTERNAL_TOKEN>"',
      );
    }
  });
}
