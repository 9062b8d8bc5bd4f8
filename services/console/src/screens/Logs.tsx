/**
 * Live logs: the audit trail as it is written (`GET /api/v2/audit/stream`), newest first, the last
 * MAX_ROWS kept. Filters restart the stream; pause stops it and resume picks up where it stopped
 * (Last-Event-ID), as does every reconnection.
 */
import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { Aei, AuditEvent, AuditStatus, UpstreamServer } from '@bindery/contracts';
import { api, type Page } from '../api.ts';
import { SelectField } from '../forms.tsx';
import { listAll } from '../lists.ts';
import { followAudit, type AuditFilters, type StreamState } from '../live-audit.ts';
import { Link } from '../router.tsx';
import { ErrorMessage, useLoad } from '../ui.tsx';
import { LogTail } from './Upstreams.tsx';
import './logs.css';

const MAX_ROWS = 500;
const STATUSES: AuditStatus[] = ['ok', 'error', 'refused', 'replayed', 'input_required'];

function StateLine({ state, paused }: { state: StreamState; paused: boolean }) {
  const [label, detail, tone]: [string, string, string] = paused
    ? ['Paused', 'new events are not shown until you resume', 'idle']
    : state.kind === 'live'
      ? ['Live', 'new events appear as they are written', 'live']
      : state.kind === 'connecting'
        ? ['Connecting…', '', 'idle']
        : state.kind === 'reconnecting'
          ? ['Reconnecting', `in ${Math.ceil(state.inMs / 1000)} s: ${state.reason}`, 'warn']
          : ['Error', state.message, 'bad'];
  return (
    <p
      className={`stream-state ${tone}`}
      role="status"
      data-testid="stream-state"
      data-state={paused ? 'paused' : state.kind}
    >
      <span className="dot" aria-hidden="true" />
      <strong>{label}</strong>
      {detail && <span className="muted"> {detail}</span>}
    </p>
  );
}

function time(iso: string): string {
  const date = new Date(iso);
  return `${date.toLocaleTimeString([], { hour12: false })}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

export function Logs() {
  const [filters, setFilters] = useState<AuditFilters>({});
  const [draft, setDraft] = useState({ tool_name: '', caller: '' });
  const [paused, setPaused] = useState(false);
  const [rows, setRows] = useState<AuditEvent[]>([]);
  const [state, setState] = useState<StreamState>({ kind: 'connecting' });
  /** Where a stream with these filters resumes (after a pause): the last event it received. */
  const resume = useRef<{ key: string; id: string | undefined }>({ key: '', id: undefined });
  const exposures = useLoad(() => api<Page<Aei>>('GET', '/api/v2/aeis?limit=200'), []);
  const exposureName = new Map((exposures.data?.items ?? []).map((aei) => [aei.id, aei.name]));
  const key = JSON.stringify(filters);

  useEffect(() => {
    if (paused) return;
    const from = resume.current.key === key ? resume.current.id : undefined;
    const follower = followAudit(filters, from, {
      onEvents(events) {
        setRows((previous) => {
          const known = new Set(previous.map((row) => row.id));
          const fresh = events.filter((event) => !known.has(event.id)).reverse();
          return [...fresh, ...previous].slice(0, MAX_ROWS);
        });
      },
      onState: setState,
      // The token was refused: any API call now logs the console out with the server's message.
      onUnauthorized: () => void api('GET', '/api/v2/me').catch(() => {}),
    });
    return () => {
      resume.current = { key, id: follower.lastEventId() };
      follower.stop();
    };
    // `key` stands for `filters` (a new object on every apply, the same filters or not).
  }, [key, paused]);

  const apply = (next: AuditFilters) => {
    const clean = Object.fromEntries(Object.entries(next).filter(([, value]) => value)) as AuditFilters;
    if (JSON.stringify(clean) === key) return;
    setRows([]);
    setState({ kind: 'connecting' });
    setFilters(clean);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply({ ...filters, tool_name: draft.tool_name.trim(), caller: draft.caller.trim() });
  };

  return (
    <>
      <h1>Live logs</h1>
      <section className="card">
        <form className="log-filters" onSubmit={submit} aria-label="Filters">
          <label>
            Exposure
            <select
              value={filters.aei_id ?? ''}
              onChange={(event) => apply({ ...filters, aei_id: event.target.value })}
            >
              <option value="">All exposures</option>
              {(exposures.data?.items ?? []).map((aei) => (
                <option key={aei.id} value={aei.id}>
                  {aei.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Tool
            <input
              value={draft.tool_name}
              placeholder="any tool"
              onChange={(event) => setDraft({ ...draft, tool_name: event.target.value })}
            />
          </label>
          <label>
            Caller
            <input
              value={draft.caller}
              placeholder="any caller"
              onChange={(event) => setDraft({ ...draft, caller: event.target.value })}
            />
          </label>
          <label>
            Status
            <select
              value={filters.status ?? ''}
              onChange={(event) => apply({ ...filters, status: event.target.value })}
            >
              <option value="">Any status</option>
              {STATUSES.map((status) => (
                <option key={status} value={status}>
                  {status}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="secondary">
            Apply
          </button>
          <button type="button" onClick={() => setPaused(!paused)} aria-pressed={paused}>
            {paused ? 'Resume' : 'Pause'}
          </button>
        </form>
        <ErrorMessage error={exposures.error} />
        <StateLine state={state} paused={paused} />
        {rows.length === 0 ? (
          <p className="muted">No events yet: calls made from now on appear here as they happen.</p>
        ) : (
          <div className="table-wrap">
            <table data-testid="log-rows">
              <caption className="muted">
                {rows.length === MAX_ROWS ? `The latest ${MAX_ROWS} events` : `${rows.length} events`}, newest
                first
              </caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Status</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Exposure</th>
                  <th scope="col">Caller</th>
                  <th scope="col">Request</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((row) => (
                  <tr key={row.id} data-tool={row.tool_name ?? ''} data-status={row.status}>
                    <td>
                      <time dateTime={row.created_at}>{time(row.created_at)}</time>
                    </td>
                    <td>
                      <strong>{row.tool_name ?? '—'}</strong>
                      <div className="muted">
                        {row.action}
                        {row.operation && ` · ${row.operation}`}
                      </div>
                      {row.details && <div className="muted">{sidebarDetails(row.details)}</div>}
                    </td>
                    <td>
                      <span className={`log-status ${row.status}`}>{row.status}</span>
                      {row.error_code && <div className="muted">{row.error_code}</div>}
                    </td>
                    <td>{row.duration_ms === null ? '—' : `${row.duration_ms} ms`}</td>
                    <td>{row.aei_id ? (exposureName.get(row.aei_id) ?? row.aei_id) : '—'}</td>
                    <td>
                      {row.caller ?? <span className="muted">api key</span>}
                      {row.source_used && <div className="muted">{row.source_used}</div>}
                    </td>
                    <td>
                      <code>{row.request_id ?? '—'}</code>
                      {row.trace_id && <TraceLink traceId={row.trace_id} url={row.trace_url} />}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <UpstreamLogs />
    </>
  );
}

/**
 * A call's trace: a link to the operator's tracing backend when the control plane has its
 * template (TRACE_URL_TEMPLATE), else the id to look up there (whole on hover).
 */
function TraceLink({ traceId, url }: { traceId: string; url: string | undefined }) {
  const shown = `trace ${traceId.slice(0, 12)}…`;
  return (
    <div className="muted" data-trace-id={traceId}>
      {url ? (
        <a href={url} target="_blank" rel="noreferrer" title={traceId}>
          {shown}
        </a>
      ) : (
        <code title={traceId} aria-label={`trace ${traceId}`}>
          {shown}
        </code>
      )}
    </div>
  );
}

/** How often the upstream log tail is read again while it is shown. */
const UPSTREAM_LOG_REFRESH_MS = 5_000;

/** The stderr tail of one upstream server, read again every few seconds. */
function UpstreamLogs() {
  const servers = useLoad(() => listAll<UpstreamServer>('/api/v2/upstream-servers'), []);
  const [id, setId] = useState('');
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((count) => count + 1), UPSTREAM_LOG_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const items = servers.data?.items ?? [];
  const chosen = items.find((server) => server.id === id) ?? items[0];
  return (
    <section className="card" aria-labelledby="upstream-logs">
      <h2 id="upstream-logs">Upstream server logs</h2>
      <ErrorMessage error={servers.error} />
      {servers.data && items.length === 0 && (
        <p>
          No upstream MCP servers: add one under <Link to="/tools/upstreams">upstream servers</Link>.
        </p>
      )}
      {chosen && (
        <>
          <SelectField
            label="Server"
            value={chosen.id}
            onChange={setId}
            options={items.map((server) => ({ value: server.id, label: server.name }))}
          />
          <LogTail
            key={chosen.id}
            path={`/api/v2/upstream-servers/${encodeURIComponent(chosen.id)}/logs`}
            transport={chosen.transport}
            syncs={tick}
          />
        </>
      )}
    </section>
  );
}

/** A sidebar row's details in a line: who proposed, the versions before and after, broken rules. */
function sidebarDetails(details: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof details.proposed_by === 'string')
    parts.push(`proposed by ${details.proposed_by === 'agent' ? 'an agent' : 'the person'}`);
  if (typeof details.version_before === 'number') {
    parts.push(
      typeof details.version_after === 'number'
        ? `version ${details.version_before} → ${details.version_after}`
        : `on version ${details.version_before}`,
    );
  }
  const verdicts = Array.isArray(details.verdicts)
    ? (details.verdicts as { ok?: boolean; rule?: string }[])
    : [];
  const broken = verdicts.filter((v) => v.ok === false).map((v) => v.rule);
  if (broken.length > 0) parts.push(`breaks ${broken.join(', ')}`);
  return parts.join(' · ');
}
