/**
 * The file trees served as they are (the console under `/console/`, the API docs' assets under
 * `/docs/static/`) are reached by path, so a path that climbs out of them with `..` (as sent, or
 * percent-encoded: `%2e%2e`, `..%2f`, `..%5c`) is NOT_FOUND before any file is looked at. The file
 * sender refuses such paths too, but as a failure the error handler did not know, which answered
 * 500 and logged a stack trace for what is only a probe.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/errors.ts';

/** The prefixes of the trees served from disk. */
const STATIC_PREFIXES = ['/console/', '/docs/static/'] as const;

/** Whether a URL's path (percent-escapes decoded once, as the file sender decodes them) has a `..` segment. */
function climbsOut(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // Not UTF-8: the router refuses it with its own error.
    return false;
  }
  return decoded.split(/[/\\]/).includes('..');
}

/** Refuses, on every request under a static prefix, a path that climbs out of its tree. */
export function refuseDotSegments(app: FastifyInstance): void {
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const { url } = request;
    if (!STATIC_PREFIXES.some((prefix) => url.startsWith(prefix)) || !climbsOut(url)) return;
    throw new DomainError('NOT_FOUND', `no file ${url.split('?', 1)[0]}: ".." segments are not followed`);
  });
}
