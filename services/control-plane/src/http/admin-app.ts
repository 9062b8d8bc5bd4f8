/**
 * The Fastify instance type admin routes are written against: TypeBox-typed schemas, and the
 * domain context decorated on the app.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { AuditStreamHub } from '../audit/audit-stream.ts';
import type { DomainContext } from '../domain/context.ts';

declare module 'fastify' {
  interface FastifyInstance {
    domain: DomainContext;
    /** The live audit streams open on this control plane (`GET /api/v2/audit/stream`). */
    auditStreams: AuditStreamHub;
  }
  interface FastifyContextConfig {
    /** The setting behind a route's own body limit, for the 413 message (BODY_LIMIT_BYTES otherwise). */
    bodyLimitSetting?: string;
  }
}

export type AdminApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
