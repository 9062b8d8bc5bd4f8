/**
 * Input the database cannot store as sent (a NUL character, an unpaired UTF-16 surrogate, a
 * number that overflows to Infinity: see `findUnstorable` in contracts) is refused where it enters
 * the control plane: in JSON bodies, keys and values (by the body parser, `json-body.ts`), and in
 * path parameters and query strings (by the hook here, before the route's schema runs). The
 * refusal is VALIDATION_FAILED naming where: `body/data/notes`, `params/id`, `querystring/cursor`.
 */
import { findUnstorable, printable, unstorableMessage, type Unstorable } from '@bindery/contracts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/errors.ts';

/** The VALIDATION_FAILED error for what was found in a request part (`body`, `params`, `querystring`). */
export function unstorableError(part: string, found: Unstorable): DomainError {
  return new DomainError('VALIDATION_FAILED', unstorableMessage(part, found), {
    location: part,
    pointer: printable(found.pointer),
    problem: found.problem,
  });
}

function checkPart(part: 'params' | 'querystring', values: unknown): void {
  // Flat objects of strings (a repeated query key gives an array of them).
  const found = findUnstorable(values);
  if (found) throw unstorableError(part, found);
}

/** Adds the check of path parameters and query strings to every route, before their schemas run. */
export function refuseUnstorableInput(app: FastifyInstance): void {
  app.addHook('preValidation', async (request: FastifyRequest) => {
    checkPart('params', request.params);
    checkPart('querystring', request.query);
  });
}
