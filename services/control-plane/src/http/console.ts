/**
 * The admin console (services/console, a static single-page app) under `/console/`, and `/`
 * redirecting there. Any unknown path under /console/ answers index.html, so the console's own
 * URLs survive a reload; an unknown asset is a 404. Without a build, /console answers 503 with how
 * to make one: the API is served either way.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { AdminApp } from './admin-app.ts';

/** Where `pnpm --filter @bindery/console build` writes the console. */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

export const CONSOLE_MISSING_MESSAGE =
  'The Bindery console is not built. Build it with `pnpm install` (its postinstall builds it) or ' +
  '`pnpm --filter @bindery/console build`, then restart the control plane. The admin API and its ' +
  'docs (/docs) work without it.\n';

const hidden = { schema: { hide: true } };

export async function consoleRoutes(app: AdminApp, options: { dir: string }): Promise<void> {
  app.get('/', hidden, async (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console', hidden, async (_request, reply) => reply.redirect('/console/', 302));
  const dir = options.dir;
  if (!existsSync(join(dir, 'index.html'))) {
    app.log.warn({ dir }, 'the console is not built: /console answers 503');
    const missing = async (_request: unknown, reply: import('fastify').FastifyReply) =>
      reply.status(503).type('text/plain; charset=utf-8').send(CONSOLE_MISSING_MESSAGE);
    app.get('/console/', hidden, missing);
    app.get('/console/*', hidden, missing);
    return;
  }
  await app.register(
    async (scope) => {
      await scope.register(fastifyStatic, {
        root: dir,
        prefix: '/',
        schemaHide: true,
        cacheControl: false,
        // Assets have content hashes in their names; index.html must be read again every time.
        setHeaders(res, path) {
          res.setHeader(
            'cache-control',
            path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache',
          );
          res.setHeader('x-content-type-options', 'nosniff');
        },
      });
      scope.setNotFoundHandler(async (request, reply) => {
        const path = request.url.split('?')[0] ?? '';
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          return reply
            .status(404)
            .type('text/plain; charset=utf-8')
            .send(`no route ${request.method} ${path}\n`);
        }
        if (path.startsWith('/console/assets/')) {
          return reply.status(404).type('text/plain; charset=utf-8').send(`no console asset ${path}\n`);
        }
        return reply.header('cache-control', 'no-cache').sendFile('index.html');
      });
    },
    { prefix: '/console' },
  );
}
