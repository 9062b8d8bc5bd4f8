/**
 * Text PostgreSQL cannot store faithfully (a NUL character, an unpaired UTF-16 surrogate: see
 * `findUnstorableText` in contracts) is refused where it enters the control plane: every JSON
 * body, keys and values (by the body parser, `json-body.ts`), and every path parameter and
 * query-string value (by the hook here, before the route's schema runs). The refusal is
 * VALIDATION_FAILED naming where: `body/data/notes`, `params/id`, `querystring/cursor`.
 */
import {
  findUnstorableText,
  printableText,
  unstorableTextMessage,
  type UnstorableText,
} from '@bindery/contracts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../errors.ts';

/** The VALIDATION_FAILED error for bad text in a request part (`body`, `params`, `querystring`). */
export function unstorableError(part: string, found: UnstorableText): DomainError {
  return new DomainError('VALIDATION_FAILED', unstorableTextMessage(part, found), {
    location: part,
    pointer: printableText(found.pointer),
    problem: found.problem,
  });
}

function checkPart(part: 'params' | 'querystring', values: unknown): void {
  // Flat objects of strings (a repeated query key gives an array of them).
  const found = findUnstorableText(values);
  if (found) throw unstorableError(part, found);
}

/** Adds the check of path parameters and query strings to every route, before their schemas run. */
export function refuseUnstorableInput(app: FastifyInstance): void {
  app.addHook('preValidation', async (request: FastifyRequest) => {
    checkPart('params', request.params);
    checkPart('querystring', request.query);
  });
}
