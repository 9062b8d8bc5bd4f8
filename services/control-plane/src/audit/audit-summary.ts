/**
 * The audit trail counted per minute (`GET /api/v2/audit/summary`): the caller's own tool events,
 * the ones `listAudit` (audit.ts) shows them, over the last N minutes, in one query. The sidebar's
 * rows are not calls (a rejected proposal is no failed call) and are left out.
 *
 * The table has no index on created_at; its (user_id, id) index serves instead: ids begin with
 * their creation time (ids.ts), so `id >= auditIdFloor(...)` is a range scan of the caller's
 * recent rows. The floor starts `ID_CLOCK_SLACK_MS` earlier than the window, since an id's time
 * comes from the control plane's clock and created_at from the database's: a control plane whose
 * clock is behind the database's makes ids older than their rows' created_at. created_at then puts
 * each row in its minute.
 */
import type { AuditSummary, AuditSummaryQuery } from '@bindery/contracts';
import { auditIdFloor } from './audit-stream.ts';
import type { Db, Principal } from '../domain/context.ts';

const MINUTE_MS = 60_000;
export const DEFAULT_SUMMARY_MINUTES = 60;
/** How far an id's clock (a control plane's) may run behind created_at's (the database's). */
const ID_CLOCK_SLACK_MS = 5 * MINUTE_MS;

interface MinuteRow {
  /** Whole minutes since the epoch. */
  minute: number;
  calls: number;
  errors: number;
}

/** The caller's calls and errors (status error or refused) per minute, oldest first, zeros included. */
export async function auditSummary(
  db: Db,
  caller: Principal,
  query: AuditSummaryQuery,
  now: number = Date.now(),
): Promise<AuditSummary> {
  const minutes = query.minutes ?? DEFAULT_SUMMARY_MINUTES;
  const end = Math.floor(now / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const start = end - minutes * MINUTE_MS;
  const from = new Date(start);
  const to = new Date(end);
  // Minutes as whole minutes since the epoch and bounds as ISO instants (with their "Z"): nothing
  // here depends on the database session's time zone, which the drivers' Date parameters and
  // date_trunc on a timestamptz would.
  const rows = await db.$queryRaw<MinuteRow[]>`
    SELECT floor(extract(epoch FROM "created_at") / 60)::int AS "minute",
           count(*)::int AS "calls",
           (count(*) FILTER (WHERE "status" IN ('error', 'refused')))::int AS "errors"
      FROM "audit_event"
     WHERE "user_id" = ${caller.userId}
       AND "action" NOT LIKE 'sidebar.%'
       AND "id" >= ${auditIdFloor(start - ID_CLOCK_SLACK_MS)}
       AND "created_at" >= ${from.toISOString()}::timestamptz
       AND "created_at" < ${to.toISOString()}::timestamptz
     GROUP BY 1`;
  const byMinute = new Map(rows.map((row) => [row.minute * MINUTE_MS, row]));
  const buckets: AuditSummary['buckets'] = [];
  let calls = 0;
  let errors = 0;
  for (let minute = start; minute < end; minute += MINUTE_MS) {
    const row = byMinute.get(minute);
    const bucket = {
      minute: new Date(minute).toISOString(),
      calls: row?.calls ?? 0,
      errors: row?.errors ?? 0,
    };
    calls += bucket.calls;
    errors += bucket.errors;
    buckets.push(bucket);
  }
  return {
    minutes,
    from: from.toISOString(),
    to: to.toISOString(),
    buckets,
    totals: { calls, errors, error_rate: calls === 0 ? 0 : errors / calls },
  };
}
