/** The audit trail: `/api/v2/audit`, the caller's own events, newest first. */
import { AuditEvent, AuditListQuery, Page } from '@bindery/contracts';
import { listAudit } from '../domain/audit.ts';
import type { AdminApp } from '../http/admin-app.ts';
import { adminSecurity, errorResponses } from '../http/schemas.ts';

export async function auditRoutes(app: AdminApp): Promise<void> {
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
    async (request) => listAudit(db, request.principal, request.query),
  );
}
