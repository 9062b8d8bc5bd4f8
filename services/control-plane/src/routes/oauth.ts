/**
 * The OAuth routes (decision 073):
 * - the authorization server's own endpoints (`/oauth/...`, the discovery documents), handed to
 *   the library with the request body unread (it parses its own forms), registrations limited;
 * - the consent screen: `/oauth/interaction/{uid}` is the console's page, which asks
 *   `.../details` and answers `.../decision` with the signed-in person's token;
 * - `GET /api/v2/oauth/grants`, `DELETE /api/v2/oauth/grants/{id}`: a person's grants;
 * - `GET /internal/oauth/config`: what a token's grant opens, for a gateway.
 * Without the secrets' key (PostgreSQL and no BINDERY_SECRET_KEY) the authorization server is off:
 * its endpoints answer 503 saying so.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  OAUTH_CLAIM_HEADER,
  OAUTH_GRANT_HEADER,
  OAUTH_ISSUER_HEADER,
  OAUTH_SUBJECT_HEADER,
  OAuthConsentAnswer,
  OAuthConsentDecision,
  OAuthConsentDetails,
  OAuthGrantList,
  CallerConfig,
  MCP_SCOPES,
  bearerToken,
  resourceOfPath,
} from '@bindery/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { authenticate } from '../accounts/admin-tokens.ts';
import { DomainError } from '../domain/errors.ts';
import { ClashLog } from '../exposure/upstream-catalog.ts';
import type { AdminApp } from '../http/admin-app.ts';
import type { Principal } from '../domain/context.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';
import { INTERACTION_PATH, type AuthorizationServer } from '../oauth/authorization-server.ts';
import { answerConsent, consentDetails } from '../oauth/consent.ts';
import { listGrants, lookupForUser, lookupGrant, revokeGrant, type GrantLookup } from '../oauth/grants.ts';
import { cookieValue } from '../http/cookies.ts';
import { STATE_COOKIE, userOfExternalClaim, type ExternalSignIn } from '../oauth/external-sign-in.ts';
import type { GrantGone } from '../oauth/oauth-store.ts';
import { SignInThrottle } from '../accounts/passwords.ts';

const hidden = { schema: { hide: true } };

/**
 * Dynamic registrations allowed per hour: per client address, and on this control plane in all.
 * Registering is free and unauthenticated (RFC 7591), so a flood is cut here; clients that
 * publish a Client ID Metadata Document never register.
 */
export const REGISTRATIONS_PER_ADDRESS = 20;
export const REGISTRATIONS_PER_HOUR = 500;

const NOT_CONFIGURED =
  'the OAuth authorization server is off: it needs the secrets’ key to seal its signing keys (set BINDERY_SECRET_KEY)';

export interface OAuthRouteOptions {
  server: AuthorizationServer | undefined;
  gatewayPublicUrl: string;
  /** The console's build: its index.html is the consent screen. */
  consoleDir: string;
}

/** The authorization server's endpoints and the consent screen's. */
export function authorizationServerRoutes(options: OAuthRouteOptions) {
  return async function routes(app: AdminApp): Promise<void> {
    const { server } = options;
    const registrations = new SignInThrottle(Date.now, 60 * 60 * 1000);
    await app.register(async (library: AdminApp) => {
      // The library reads its own bodies (forms and JSON), within its own limits.
      library.removeAllContentTypeParsers();
      library.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
      const hand = async (request: FastifyRequest, reply: FastifyReply, url?: string) => {
        if (!server) throw new DomainError('NOT_CONFIGURED', NOT_CONFIGURED);
        // As the library routes it: any case, a trailing slash or not.
        const path = (request.url.split('?')[0] ?? '').toLowerCase().replace(/\/+$/u, '');
        if (request.method === 'POST' && path === '/oauth/register') {
          const wait = registrations.attempt([
            [`address:${request.ip}`, REGISTRATIONS_PER_ADDRESS],
            ['all', REGISTRATIONS_PER_HOUR],
          ]);
          if (wait > 0) {
            return reply
              .status(429)
              .header('retry-after', String(wait))
              .send({
                error: 'rate_limited',
                error_description: `too many client registrations; retry in ${wait} s`,
              });
          }
        }
        if (url !== undefined) request.raw.url = url;
        // An authorization request naming no scope gets the MCP scopes (RFC 6749 §3.3 lets the
        // server apply a default): the library would otherwise grant nothing and deny it.
        if (request.method === 'GET' && path === '/oauth/authorize') {
          const target = new URL(request.raw.url ?? '/', 'http://x');
          if (!target.searchParams.has('scope')) {
            target.searchParams.set('scope', MCP_SCOPES.join(' '));
            request.raw.url = `${target.pathname}${target.search}`;
          }
        }
        // Built (or its keys read) before the reply is taken over: a failure is answered, not hung.
        await server.provider();
        reply.hijack();
        await server.handle(request.raw, reply.raw);
        return reply;
      };
      library.all('/oauth/*', hidden, (request, reply) => hand(request, reply));
      library.get('/.well-known/openid-configuration', hidden, (request, reply) => hand(request, reply));
      // RFC 8414: the same document (a superset) at the OAuth path.
      library.get('/.well-known/oauth-authorization-server', hidden, (request, reply) =>
        hand(request, reply, '/.well-known/openid-configuration'),
      );
    });

    // The person answering: authenticated before the body is read (a refusal says 401 first).
    const people = new WeakMap<FastifyRequest, Principal>();
    const signedIn = async (request: FastifyRequest) => {
      const token = bearerToken(request.headers.authorization);
      if (!token) throw new DomainError('UNAUTHORIZED', 'sign in to the console first');
      people.set(request, await authenticate(app.domain.prisma, token));
    };
    const principalOf = (request: FastifyRequest) => people.get(request)!;
    const deps = async () => {
      if (!server) throw new DomainError('NOT_CONFIGURED', NOT_CONFIGURED);
      return {
        db: app.domain.prisma,
        provider: await server.provider(),
        gatewayPublicUrl: options.gatewayPublicUrl,
        registered: (clientId: string) => server.registered(clientId),
      };
    };
    const Uid = Type.Object({ uid: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) });

    // The page the library sends the browser to: the console, which shows the consent screen.
    app.get(`${INTERACTION_PATH}/:uid`, hidden, async (_request, reply) => {
      let page: string;
      try {
        page = await readFile(join(options.consoleDir, 'index.html'), 'utf8');
      } catch {
        return reply.status(503).type('text/plain; charset=utf-8').send('the console is not built\n');
      }
      return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page);
    });
    app.get(
      `${INTERACTION_PATH}/:uid/details`,
      {
        schema: {
          tags: ['oauth'],
          summary:
            'What an authorization request asks for (the consent screen; the browser that started it only)',
          security: adminSecurity,
          params: Uid,
          response: { 200: OAuthConsentDetails, ...errorResponses(401, 404, 503) },
        },
        onRequest: signedIn,
      },
      async (request, reply) => {
        const principal = principalOf(request);
        void reply.header('cache-control', 'no-store');
        return consentDetails(await deps(), principal, request.raw, reply.raw, request.params.uid);
      },
    );
    app.post(
      `${INTERACTION_PATH}/:uid/decision`,
      {
        schema: {
          tags: ['oauth'],
          summary:
            'Allow or deny an authorization request: where the browser goes next (back to the client with a code or access_denied)',
          security: adminSecurity,
          params: Uid,
          body: OAuthConsentDecision,
          response: { 200: OAuthConsentAnswer, ...errorResponses(400, 401, 403, 404, 503) },
        },
        bodyLimit: 1024,
        onRequest: signedIn,
      },
      async (request, reply) => {
        const principal = principalOf(request);
        void reply.header('cache-control', 'no-store');
        const redirect = await answerConsent(
          await deps(),
          principal,
          request.raw,
          reply.raw,
          request.params.uid,
          request.body.allow,
        );
        return { redirect_to: redirect };
      },
    );
  };
}

/** A person's grants (under /api/v2, behind the admin token check). */
export function oauthGrantRoutes(options: {
  gatewayPublicUrl: string;
  gone: GrantGone;
  registered: (clientId: string) => boolean;
}) {
  return async function routes(app: AdminApp): Promise<void> {
    const tags = ['oauth'];
    app.get(
      '/oauth/grants',
      {
        schema: {
          tags,
          summary: 'The grants you gave OAuth clients (agents): which client, which MCP URLs, which scopes',
          security: adminSecurity,
          response: { 200: OAuthGrantList },
        },
      },
      async (request) => ({
        items: await listGrants(
          app.domain.prisma,
          request.principal,
          options.gatewayPublicUrl,
          options.registered,
        ),
      }),
    );
    app.delete(
      '/oauth/grants/:id',
      {
        schema: {
          tags,
          summary:
            'Revoke a grant: its refresh tokens at once, and its access tokens on every gateway as soon as the change reaches it',
          security: adminSecurity,
          params: Type.Object({ id: Type.String({ maxLength: 128 }) }),
          response: { 204: Type.Null(), ...errorResponses(404) },
        },
      },
      async (request, reply) => {
        await revokeGrant(app.domain.prisma, request.principal, request.params.id, options.gone);
        return reply.status(204).send(null);
      },
    );
  };
}

/** What a verified token's grant opens (under /internal). */
export function oauthInternalRoutes(options: { gatewayPublicUrl: string }) {
  return async function routes(app: AdminApp): Promise<void> {
    const clashes = new ClashLog(app.log);
    app.get(
      '/oauth/config',
      {
        schema: {
          tags: ['internal'],
          summary:
            'What a verified access token opens: the keyless URL’s exposure (config v2) when its grant is live, ' +
            'its person’s, and names this URL; else 404 kind unknown. ETag "{aei_id}.{config_version}[.via]"',
          querystring: Type.Object(
            { resource: Type.String({ maxLength: 256 }) },
            { additionalProperties: false },
          ),
          headers: Type.Object({
            [OAUTH_GRANT_HEADER]: Type.Optional(Type.String({ maxLength: 128 })),
            [OAUTH_SUBJECT_HEADER]: Type.String({ maxLength: 512 }),
            [OAUTH_ISSUER_HEADER]: Type.Optional(Type.String({ maxLength: 512 })),
            [OAUTH_CLAIM_HEADER]: Type.Optional(Type.Union([Type.Literal('sub'), Type.Literal('email')])),
            'if-none-match': Type.Optional(Type.String()),
          }),
          response: {
            200: Type.Object({
              kind: Type.Literal('aei'),
              config: CallerConfig.properties.config,
              caller: Type.Optional(CallerConfig.properties.caller),
            }),
            ...errorResponses(400, 404),
          },
        },
      },
      async (request, reply) => {
        const resource = resourceOfPath(request.query.resource);
        if (!resource) throw new DomainError('VALIDATION_FAILED', 'resource is not a keyless MCP path');
        const ifNoneMatch = request.headers['if-none-match'];
        const unchanged = (etag: string) =>
          ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim() === etag);
        const db = app.domain.prisma;
        const grant = request.headers[OAUTH_GRANT_HEADER];
        const issuer = request.headers[OAUTH_ISSUER_HEADER];
        const claim = request.headers[OAUTH_CLAIM_HEADER];
        const subject = request.headers[OAUTH_SUBJECT_HEADER];
        let found: GrantLookup = { kind: 'unknown' };
        if (grant !== undefined) {
          found = await lookupGrant(
            db,
            grant,
            subject,
            resource,
            options.gatewayPublicUrl,
            unchanged,
            clashes,
          );
        } else if (issuer !== undefined && claim !== undefined) {
          // An external authorization server's token: the person its claim names.
          const userId = await userOfExternalClaim(db, issuer, claim, subject);
          if (userId)
            found = await lookupForUser(db, userId, `external:${issuer}`, resource, unchanged, clashes);
        }
        switch (found.kind) {
          case 'aei-unchanged':
            return (reply as FastifyReply).status(304).header('etag', found.etag).send();
          case 'aei':
            return reply.header('etag', found.etag).send({
              kind: 'aei',
              config: found.config,
              ...(found.caller && { caller: found.caller }),
            });
          case 'unknown':
            throw new DomainError('NOT_FOUND', 'no live grant opens this URL for this subject', {
              kind: 'unknown',
            });
        }
      },
    );
  };
}

/**
 * Console sign-in through the external OpenID Connect provider, when one is set (OIDC_ISSUER):
 * `GET /api/v2/sign-in/options` says which ways there are; `GET /api/v2/sign-in/oidc` starts one,
 * `GET /api/v2/sign-in/oidc/callback` ends it, back on the console page it started from with the
 * sign-in's token in the URL's fragment (`#bindery_token=`), or with `#sign_in_error=`.
 */
export function externalSignInRoutes(options: {
  external: ExternalSignIn | undefined;
  publicUrl: () => string;
}) {
  return async function routes(app: AdminApp): Promise<void> {
    const { external } = options;
    const callbackPath = '/api/v2/sign-in/oidc/callback';
    app.get(
      '/api/v2/sign-in/options',
      {
        schema: {
          tags: ['users'],
          summary:
            'The ways to sign in to the console: a password, and the external provider when one is set',
          response: {
            200: Type.Object({
              password: Type.Boolean(),
              oidc: Type.Union([Type.Object({ name: Type.String() }), Type.Null()]),
            }),
          },
        },
      },
      async () => ({ password: true, oidc: external ? { name: external.name } : null }),
    );
    app.get<{ Querystring: { return_to?: string; nonce?: string } }>(
      '/api/v2/sign-in/oidc',
      hidden,
      async (request, reply) => {
        if (!external)
          throw new DomainError('NOT_FOUND', 'no external sign-in provider is set (OIDC_ISSUER)');
        const started = await external.start(
          `${options.publicUrl()}${callbackPath}`,
          request.query.return_to,
          request.query.nonce,
        );
        const secure = options.publicUrl().startsWith('https:') ? '; Secure' : '';
        return reply
          .header(
            'set-cookie',
            `${STATE_COOKIE}=${started.cookie}; Path=/api/v2/sign-in/oidc; HttpOnly; SameSite=Lax; Max-Age=600${secure}`,
          )
          .header('cache-control', 'no-store')
          .redirect(started.location, 302);
      },
    );
    app.get(callbackPath, hidden, async (request, reply) => {
      if (!external) throw new DomainError('NOT_FOUND', 'no external sign-in provider is set (OIDC_ISSUER)');
      const cookie = cookieValue(request.headers.cookie, STATE_COOKIE);
      void reply
        .header(
          'set-cookie',
          `${STATE_COOKIE}=; Path=/api/v2/sign-in/oidc; HttpOnly; SameSite=Lax; Max-Age=0`,
        )
        .header('cache-control', 'no-store');
      try {
        const done = await external.finish(
          app.domain.prisma,
          new URL(request.url, options.publicUrl()),
          cookie,
        );
        // The tab that started the sign-in knows its nonce, and takes the token only with it.
        const fragment = new URLSearchParams({
          bindery_token: done.answer.token,
          bindery_nonce: done.browser,
        });
        return reply.redirect(`${done.returnTo}#${fragment.toString()}`, 302);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return reply.redirect(`/console/#sign_in_error=${encodeURIComponent(error.message)}`, 302);
      }
    });
  };
}
