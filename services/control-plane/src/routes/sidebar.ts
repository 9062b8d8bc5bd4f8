/**
 * The sidebar's routes (`/api/v2/sidebar/...`), on the control plane only. They take a console
 * session (an admin token of the person) or a sidebar token, nothing else: api keys, personal keys
 * and exposures' OAuth tokens are unknown here, and a sidebar token opens its own session's routes
 * only (it is unknown to the admin API). Approving, rejecting and opening, pausing or ending a
 * session are the person's alone.
 */
import { PassThrough, type Readable } from 'node:stream';
import {
  bearerToken,
  CreatedSidebarSession,
  CreateSidebarSessionBody,
  IdParams,
  Proposal,
  ProposalDecisionBody,
  PROPOSAL_STATUSES,
  SidebarCommandAnswer,
  SidebarCommandBody,
  SidebarSession,
  UpdateSidebarSessionBody,
} from '@bindery/contracts';
import { SIDEBAR_TOKEN_PREFIX } from '@bindery/contracts/entries';
import { Type } from 'typebox';
import { authenticate } from '../accounts/admin-tokens.ts';
import { DomainError, notFound } from '../domain/errors.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { abortedOnClose } from '../http/caller-gone.ts';
import { errorResponses } from '../http/schemas.ts';
import {
  authenticateSidebarToken,
  createSession,
  listSessions,
  sessionBody,
  sessionFor,
  setSessionStatus,
  type SidebarActor,
} from '../sidebar/sessions.ts';
import { listProposals, proposalsMark } from '../sidebar/proposals.ts';
import type { Sidebar } from '../sidebar/sidebar.ts';

/** How often an open event stream looks for changes made through another control plane. */
const STREAM_POLL_MS = 2_000;
const KEEP_ALIVE_MS = 15_000;
/** Bytes a stream may have waiting for a client that does not read; beyond, it is cut. */
const MAX_PENDING_BYTES = 1024 * 1024;
/** Event streams one session may hold open on one control plane. */
const MAX_STREAMS_PER_SESSION = 4;

const security: { [scheme: string]: string[] }[] = [{ adminToken: [] }, { sidebarToken: [] }];
const personSecurity: { [scheme: string]: string[] }[] = [{ adminToken: [] }];

declare module 'fastify' {
  interface FastifyRequest {
    sidebarActor: SidebarActor;
  }
}

function person(actor: SidebarActor, what: string) {
  if (actor.kind !== 'person') {
    throw new DomainError('FORBIDDEN', `${what} is for the person only, not a sidebar token`);
  }
  return actor.principal;
}

/** A route hook refusing a sidebar token before anything else is read (the person's routes). */
function personOnly(what: string) {
  return async (request: { sidebarActor: SidebarActor }) => {
    person(request.sidebarActor, what);
  };
}

export function sidebarRoutes(sidebar: Sidebar) {
  return async (app: AdminApp): Promise<void> => {
    const db = app.domain.prisma;
    const tags = ['sidebar'];
    const streams = new Map<string, number>();
    const open = new Set<() => void>();
    app.addHook('preClose', async () => {
      for (const close of open) close();
    });

    app.decorateRequest('sidebarActor', null as unknown as never);
    app.addHook('onRequest', async (request) => {
      const token = bearerToken(request.headers.authorization);
      if (!token) {
        throw new DomainError(
          'UNAUTHORIZED',
          'send your admin token (the console session) or a sidebar token as "Authorization: Bearer <token>"',
        );
      }
      const actor: SidebarActor = token.startsWith(SIDEBAR_TOKEN_PREFIX)
        ? await authenticateSidebarToken(db, token)
        : { kind: 'person', principal: await authenticate(db, token) };
      // A session's token knows of no other session: refused before its request is read further.
      const sessionId = (request.params as { id?: string } | undefined)?.id;
      if (actor.kind === 'agent' && request.routeOptions.url?.includes('/sidebar/sessions/:id')) {
        if (sessionId !== actor.sessionId) throw notFound('sidebar session', sessionId ?? '');
      }
      request.sidebarActor = actor;
    });

    app.post(
      '/sidebar/sessions',
      {
        onRequest: personOnly('opening a sidebar session'),
        schema: {
          tags,
          summary: 'Open a sidebar session; its token (shown once) lets an agent drive it',
          security: personSecurity,
          body: CreateSidebarSessionBody,
          response: { 201: CreatedSidebarSession, ...errorResponses(404, 429) },
        },
      },
      async (request, reply) => {
        const caller = person(request.sidebarActor, 'opening a sidebar session');
        return reply.status(201).send(await createSession(db, caller, request.body));
      },
    );
    app.get(
      '/sidebar/sessions',
      {
        onRequest: personOnly('listing sessions'),
        schema: {
          tags,
          summary: 'Your open sidebar sessions',
          security: personSecurity,
          response: { 200: Type.Object({ items: Type.Array(SidebarSession) }), ...errorResponses() },
        },
      },
      async (request) => ({
        items: await listSessions(db, person(request.sidebarActor, 'listing sessions')),
      }),
    );
    app.get(
      '/sidebar/sessions/:id',
      {
        schema: {
          tags,
          summary: 'A sidebar session',
          security,
          params: IdParams,
          response: { 200: SidebarSession, ...errorResponses(404) },
        },
      },
      async (request) => sessionBody(await sessionFor(db, request.sidebarActor, request.params.id)),
    );
    app.patch(
      '/sidebar/sessions/:id',
      {
        onRequest: personOnly('changing a session'),
        schema: {
          tags,
          summary: 'Pause, resume or end a session (ending withdraws what waits for a verdict)',
          security: personSecurity,
          params: IdParams,
          body: UpdateSidebarSessionBody,
          response: { 200: SidebarSession, ...errorResponses(404, 409) },
        },
      },
      async (request) => {
        const caller = person(request.sidebarActor, 'changing a session');
        const updated = await setSessionStatus(db, caller, request.params.id, request.body.status);
        sidebar.events.changed(request.params.id);
        return updated;
      },
    );
    app.post(
      '/sidebar/sessions/:id/commands',
      {
        schema: {
          tags,
          summary: 'Run one command; a write answers the proposal it made (wait_ms: wait for the verdict)',
          security,
          params: IdParams,
          body: SidebarCommandBody,
          response: { 200: SidebarCommandAnswer, ...errorResponses(403, 404, 409, 429) },
        },
      },
      async (request, reply) =>
        sidebar.command(
          request.sidebarActor,
          request.params.id,
          request.body,
          abortedOnClose(reply.raw, 'the caller went away'),
        ),
    );
    app.get(
      '/sidebar/sessions/:id/proposals',
      {
        schema: {
          tags,
          summary: "The session's proposals, newest first (the last 50)",
          security,
          params: IdParams,
          querystring: Type.Object({ status: Type.Optional(Type.Enum(PROPOSAL_STATUSES)) }),
          response: { 200: Type.Object({ items: Type.Array(Proposal) }), ...errorResponses(404) },
        },
      },
      async (request) => ({
        items: await sidebar.proposals(request.sidebarActor, request.params.id, request.query.status),
      }),
    );
    app.get(
      '/sidebar/sessions/:id/events',
      {
        schema: {
          tags,
          summary: "The session's proposals live: an `event: proposals` message at each change",
          description:
            'A text/event-stream; each `event: proposals` carries `{session, items}` (the session and ' +
            'its last 50 proposals, newest first) when the stream opens and after every change; ' +
            `\`: keep-alive\` comments every ${KEEP_ALIVE_MS / 1000} s. At most ${MAX_STREAMS_PER_SESSION} ` +
            'streams per session for the person and as many for its agent (429 beyond); a stream ends with its session.',
          security,
          params: IdParams,
          response: {
            200: {
              description: 'server-sent events',
              content: { 'text/event-stream': { schema: Type.Unsafe<Readable>({ type: 'string' }) } },
            },
            ...errorResponses(404, 429),
          },
        },
      },
      async (request, reply) => {
        const actor = request.sidebarActor;
        const session = await sessionFor(db, actor, request.params.id);
        // Counted per session and per side: an agent holding streams cannot keep the person's out.
        const key = `${session.id}:${actor.kind}`;
        const count = streams.get(key) ?? 0;
        if (count >= MAX_STREAMS_PER_SESSION) {
          throw new DomainError(
            'RATE_LIMITED',
            `at most ${MAX_STREAMS_PER_SESSION} event streams per session for the ${actor.kind}`,
          );
        }
        streams.set(key, count + 1);
        const body = new PassThrough();
        let mark = '';
        let done = false;
        const send = async () => {
          const row = await sessionFor(db, actor, session.id);
          const current = sessionBody(row);
          const seen = JSON.stringify([current, await proposalsMark(db, session.id)]);
          if (done || seen === mark) return;
          mark = seen;
          const text = JSON.stringify({ session: current, items: await listProposals(db, session.id) });
          if (done) return;
          body.write(`event: proposals\ndata: ${text}\n\n`);
          // An ended or expired session's stream ends after saying so; a reader that does not read is cut.
          if (
            row.status === 'ended' ||
            row.expiresAt <= new Date() ||
            body.writableLength > MAX_PENDING_BYTES
          ) {
            finish();
          }
        };
        let sending = false;
        let again = false;
        const refresh = () => {
          // One read at a time; changes meanwhile make one more.
          if (sending) {
            again = true;
            return;
          }
          sending = true;
          void send()
            .catch((error: unknown) => {
              request.log.warn({ err: error }, 'sidebar event stream: reading proposals failed');
            })
            .finally(() => {
              sending = false;
              if (again && !done) {
                again = false;
                refresh();
              }
            });
        };
        const stop = sidebar.events.listen(session.id, refresh);
        const poll = setInterval(refresh, STREAM_POLL_MS);
        const keepAlive = setInterval(() => body.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
        const finish = () => {
          if (done) return;
          done = true;
          stop();
          clearInterval(poll);
          clearInterval(keepAlive);
          open.delete(finish);
          const left = (streams.get(key) ?? 1) - 1;
          if (left <= 0) streams.delete(key);
          else streams.set(key, left);
          body.end();
        };
        open.add(finish);
        reply.raw.on('close', finish);
        refresh();
        return reply
          .header('content-type', 'text/event-stream')
          .header('cache-control', 'no-store')
          .header('x-accel-buffering', 'no')
          .send(body);
      },
    );
    app.post(
      '/sidebar/proposals/:id/approve',
      {
        onRequest: personOnly('approving'),
        schema: {
          tags,
          summary:
            'Approve a proposal: applied at once if the table is still at its version (409 stale: a fresh one is offered)',
          security: personSecurity,
          params: IdParams,
          body: Type.Optional(ProposalDecisionBody),
          response: { 200: Proposal, ...errorResponses(403, 404, 409, 422) },
        },
      },
      async (request) =>
        sidebar.approve(person(request.sidebarActor, 'approving'), request.params.id, request.body?.note),
    );
    app.post(
      '/sidebar/proposals/:id/reject',
      {
        onRequest: personOnly('rejecting'),
        schema: {
          tags,
          summary: 'Reject a proposal, with a note the agent reads',
          security: personSecurity,
          params: IdParams,
          body: Type.Optional(ProposalDecisionBody),
          response: { 200: Proposal, ...errorResponses(403, 404, 409) },
        },
      },
      async (request) =>
        sidebar.reject(person(request.sidebarActor, 'rejecting'), request.params.id, request.body?.note),
    );
  };
}
