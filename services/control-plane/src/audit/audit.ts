/**
 * The audit trail: one row per tool execution (and refusal), readable by its owner. Rows are
 * written by the app's AuditWriter (audit-writer.ts), in batches.
 */
import { createHash } from 'node:crypto';
import type {
  AuditEvent as AuditEventBody,
  AuditListQuery,
  AuditStatus,
  ErrorCode,
} from '@bindery/contracts';
import type { AuditEvent } from '../generated/prisma/client.ts';
import type { Db, Principal } from '../domain/context.ts';
import { pageWindow, toPage } from '../domain/pagination.ts';

export type { AuditStatus };

const AUDIT_STATUSES: readonly AuditStatus[] = ['ok', 'error', 'refused', 'replayed', 'input_required'];

export interface ExecutionRecord {
  userId: string;
  action:
    | 'tool.execute'
    | 'legacy.execute'
    | 'resource.read'
    | 'upstream.resource.read'
    | 'upstream.prompt.get'
    | 'upstream.task.update'
    | 'upstream.task.cancel';
  aeiId?: string | null;
  bindingId?: string | null;
  adiId?: string | null;
  toolName?: string | null;
  operation?: string | null;
  status: AuditStatus;
  errorCode?: ErrorCode | null;
  durationMs: number;
  args: unknown;
  requestId?: string | null;
  /** The caller of a caller entry's session (absent: an api_key session). */
  caller?: string | null;
  /** The source hint the call came with, as sent. */
  sourceHint?: string | null;
  /** Where the gateway found the tool: "native", or "mcp:{server slug}". */
  sourceUsed?: string | null;
  /** The call's trace id, when the services trace (tracing.ts). */
  traceId?: string | null;
}

/** JSON with object keys sorted, so equal values always give the same text (and digest). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 of the arguments' canonical JSON: proves what was called without storing the data. */
export function argumentsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

/**
 * A row as the API answers it; `traceUrl`: the operator's trace page template (TRACE_URL_TEMPLATE),
 * which gives a row with a trace id its link.
 */
export function auditBody(e: AuditEvent, traceUrl?: string): AuditEventBody {
  return {
    id: e.id,
    action: e.action,
    aei_id: e.aeiId,
    binding_id: e.bindingId,
    adi_id: e.adiId,
    tool_name: e.toolName,
    operation: e.operation,
    status: AUDIT_STATUSES.find((s) => s === e.status) ?? 'error',
    error_code: e.errorCode,
    duration_ms: e.durationMs,
    args_digest: e.argsDigest,
    request_id: e.requestId,
    caller: e.caller,
    source_hint: e.sourceHint,
    source_used: e.sourceUsed,
    ...(e.traceId !== null && { trace_id: e.traceId }),
    ...(e.traceId !== null &&
      traceUrl !== undefined && { trace_url: traceUrl.replaceAll('{trace_id}', e.traceId) }),
    ...(e.details !== null && { details: e.details as Record<string, unknown> }),
    created_at: e.createdAt.toISOString(),
  };
}

/** The caller's own events, newest first. */
export async function listAudit(db: Db, caller: Principal, query: AuditListQuery, traceUrl?: string) {
  const w = pageWindow(query, 'desc');
  const rows = await db.auditEvent.findMany({
    where: {
      userId: caller.userId,
      ...(query.aei_id !== undefined && { aeiId: query.aei_id }),
      ...(query.status !== undefined && { status: query.status }),
      ...(query.caller !== undefined && { caller: query.caller }),
      ...w.idAfter,
    },
    orderBy: w.orderBy,
    take: w.take,
  });
  return toPage(rows, query, (row) => auditBody(row, traceUrl));
}
