/**
 * The audit trail: `/api/v2/audit`, the caller's own events, newest first,
 * `/api/v2/audit/summary`, the same events counted per minute (audit/audit-summary.ts), and
 * `/api/v2/audit/stream`, the same events live as server-sent events (audit/audit-stream.ts).
 */
import { PassThrough, type Readable } from 'node:stream';
import { Type } from 'typebox';
import {
  AuditEvent,
  AuditListQuery,
  AuditStreamQuery,
  AuditSummary,
  AuditSummaryQuery,
  Page,
} from '@bindery/contracts';
import type { AuditEvent as AuditEventBody } from '@bindery/contracts';
import { listAudit } from '../audit/audit.ts';
import { auditSummary } from '../audit/audit-summary.ts';
import type { AuditStreamHub } from '../audit/audit-stream.ts';
import { DomainError } from '../domain/errors.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

/** Bytes a stream may have waiting for a slow client; beyond, it is cut (the client resumes with Last-Event-ID). */
const MAX_PENDING_BYTES = 1024 * 1024;

function lastEventId(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const id = Array.isArray(value) ? value[0] : value;
  if (id === undefined || id === '') return undefined;
  if (id.length > 64 || !/^[A-Za-z0-9_]+$/.test(id)) {
    throw new DomainError('VALIDATION_FAILED', 'Last-Event-ID must be the id of one of your audit events', {
      field: 'Last-Event-ID',
    });
  }
  return id;
}

function frame(event: AuditEventBody): string {
  return `event: audit\nid: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`;
}

export function auditRoutes(streams: AuditStreamHub, traceUrl: string | undefined) {
  return async (app: AdminApp): Promise<void> => {
    const db = app.domain.prisma;
    app.get(
      '/audit',
      {
        schema: {
          tags: ['audit'],
          summary: 'Your audit events (tool executions and refusals), newest first',
          security: adminSecurity,
          querystring: AuditListQuery,
          response: { 200: Page(AuditEvent), ...errorResponses() },
        },
      },
      async (request) => listAudit(db, request.principal, request.query, traceUrl),
    );

    app.get(
      '/audit/summary',
      {
        schema: {
          tags: ['audit'],
          summary: 'Your audit events counted per minute over the last N minutes',
          description:
            'The events `GET /api/v2/audit` lists (on your own exposures), counted per minute: ' +
            '`buckets` has one entry per minute, oldest first, minutes without events included ' +
            'with zeros; `errors` counts the events whose status is `error` or `refused`. ' +
            '`minutes` is 1 to 1440 (60 by default), the current minute included.',
          security: adminSecurity,
          querystring: AuditSummaryQuery,
          response: { 200: AuditSummary, ...errorResponses() },
        },
      },
      async (request) => auditSummary(db, request.principal, request.query),
    );

    app.get(
      '/audit/stream',
      {
        schema: {
          tags: ['audit'],
          summary: 'Your audit events live, as server-sent events, as they are written',
          description:
            'A text/event-stream of `event: audit` messages (`id:` the event id, `data:` the event ' +
            'as JSON), oldest first, for the events written from the moment the stream opens; ' +
            'with `Last-Event-ID`, first those after that event. `: keep-alive` comments every ' +
            `${streams.options.keepAliveMs / 1000} s. At most ${streams.options.perUser} streams per ` +
            'user (429 beyond).',
          security: adminSecurity,
          querystring: AuditStreamQuery,
          response: {
            200: {
              description: 'server-sent events',
              content: { 'text/event-stream': { schema: Type.Unsafe<Readable>({ type: 'string' }) } },
            },
            ...errorResponses(),
          },
        },
      },
      async (request, reply) => {
        const after = lastEventId(request.headers['last-event-id']);
        const ticket = streams.reserve(request.principal.userId, request.query, after);
        const body = new PassThrough();
        let keepAlive: NodeJS.Timeout | undefined = undefined;
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          clearInterval(keepAlive);
          ticket.release();
          body.destroy();
        };
        const sink = {
          event(event: AuditEventBody) {
            if (done) return;
            body.write(frame(event));
            // A client not reading: cut it rather than hold its events without bound.
            if (body.writableLength > MAX_PENDING_BYTES) {
              request.log.warn(
                { pending: body.writableLength },
                'audit stream cut: its client does not read',
              );
              reply.raw.destroy();
              finish();
            }
          },
          drained: () =>
            new Promise<void>((resolve) => {
              if (done || !body.writableNeedDrain) return resolve();
              body.once('drain', resolve);
              body.once('close', resolve);
            }),
          end: () => {
            if (done) return;
            body.end();
            done = true;
            clearInterval(keepAlive);
            ticket.release();
          },
        };
        // The client may go while the stream starts: its slot is freed all the same.
        reply.raw.on('close', finish);
        try {
          await ticket.start(sink);
        } catch (error) {
          finish();
          throw error;
        }
        if (done) {
          // The client went while it started: nothing to answer.
          reply.hijack();
          reply.raw.destroy();
          return;
        }
        keepAlive = setInterval(() => {
          if (!done) body.write(': keep-alive\n\n');
        }, streams.options.keepAliveMs);
        keepAlive.unref();
        // The first bytes send the headers at once: the client knows the stream is live.
        body.write(': live\n\n');
        return reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-accel-buffering', 'no')
          .send(body);
      },
    );
  };
}
