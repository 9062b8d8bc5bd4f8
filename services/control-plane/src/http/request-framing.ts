/**
 * The refusal of requests whose framing leaves their host or path in doubt (two Host headers, none
 * on HTTP/1.1, an absolute URL, `*` or an authority as request target), as the gateway refuses
 * them: 400 VALIDATION_FAILED in the one error body, before any route, and the connection closed.
 * The checks are shared (`requestFramingProblem` in contracts); see there for why each is refused.
 */
import { refuseConnect, requestFramingProblem } from '@bindery/service-kit';
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../domain/errors.ts';

/**
 * Adds the check to every request (call before any route or plugin is registered, so that it runs
 * first). Node's own refusal of a request without Host has no body: build the app with
 * `http: { requireHostHeader: false }` so that this check answers it.
 */
export function refuseAmbiguousFraming(app: FastifyInstance): void {
  refuseConnect(app.server);
  app.addHook('onRequest', async (request, reply) => {
    const problem = requestFramingProblem(request.raw);
    if (problem === undefined) return;
    reply.header('connection', 'close');
    throw new DomainError('VALIDATION_FAILED', problem);
  });
}
