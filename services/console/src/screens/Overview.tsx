import { useEffect } from 'react';
import type { AuditSummary, GatewayList, GatewayProbe } from '@bindery/contracts';
import { api, countAll } from '../api.ts';
import { Link } from '../router.tsx';
import { ErrorMessage, useLoad } from '../ui.tsx';
import './overview.css';

/** How often the traffic and the gateways are read again while the overview is open. */
const REFRESH_MS = 30_000;
const TRAFFIC_MINUTES = 60;

async function probe(path: string): Promise<string> {
  const response = await fetch(path);
  const body = (await response.json().catch(() => ({}))) as { status?: string };
  return `${body.status ?? 'no status'} (HTTP ${response.status})`;
}

function Count({ path, label, to }: { path: string; label: string; to: string }) {
  const { data, error } = useLoad(() => countAll(path), [path]);
  return (
    <div className="stat card">
      <Link to={to}>{label}</Link>
      <strong className="stat-value" data-testid={`count-${to.slice(1)}`}>
        {data ? `${data.count}${data.more ? '+' : ''}` : error ? '—' : '…'}
      </strong>
      <ErrorMessage error={error} />
    </div>
  );
}

/** An error rate (0..1) as a percentage with at most one decimal: "0 %", "33.3 %", "100 %". */
function percent(rate: number): string {
  return `${Number((rate * 100).toFixed(1))} %`;
}

function clock(iso: string): string {
  return new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** Calls per minute as bars (errors in their own colour at the foot of each), with a summary for screen readers. */
function TrafficChart({ summary }: { summary: AuditSummary }) {
  const { buckets, totals } = summary;
  const peak = Math.max(1, ...buckets.map((b) => b.calls));
  const height = 40;
  const label =
    `Calls per minute over the last ${summary.minutes} minutes: ${totals.calls} in total, ` +
    `at most ${buckets.reduce((most, b) => Math.max(most, b.calls), 0)} in one minute, ` +
    `${totals.errors} ${totals.errors === 1 ? 'error' : 'errors'} (${percent(totals.error_rate)}).`;
  return (
    <svg
      className="traffic-chart"
      role="img"
      aria-label={label}
      viewBox={`0 0 ${buckets.length} ${height}`}
      preserveAspectRatio="none"
      data-testid="traffic-chart"
    >
      <line className="traffic-axis" x1={0} y1={height - 0.25} x2={buckets.length} y2={height - 0.25} />
      {buckets.map((bucket, index) => {
        if (bucket.calls === 0) return null;
        const callsHeight = Math.max(1, (bucket.calls / peak) * height);
        const errorsHeight = bucket.errors === 0 ? 0 : Math.max(0.75, (bucket.errors / peak) * height);
        return (
          <g key={bucket.minute}>
            <rect
              className="traffic-bar"
              x={index + 0.1}
              width={0.8}
              y={height - callsHeight}
              height={callsHeight}
            />
            {errorsHeight > 0 && (
              <rect
                className="traffic-bar-error"
                x={index + 0.1}
                width={0.8}
                y={height - errorsHeight}
                height={errorsHeight}
              />
            )}
          </g>
        );
      })}
    </svg>
  );
}

function Traffic({ load }: { load: ReturnType<typeof useLoad<AuditSummary>> }) {
  const { data, error } = load;
  const busy = data?.buckets.filter((b) => b.calls > 0) ?? [];
  return (
    <section className="card traffic" aria-labelledby="traffic-heading">
      <div className="section-head">
        <h2 id="traffic-heading">Traffic (last hour)</h2>
        {data && (
          <span className="muted">
            <time dateTime={data.from}>{clock(data.from)}</time>–
            <time dateTime={data.to}>{clock(data.to)}</time>
          </span>
        )}
      </div>
      <ErrorMessage error={error} />
      {data ? (
        <>
          <dl className="traffic-totals">
            <div>
              <dt>Calls</dt>
              <dd data-testid="traffic-calls" data-value={data.totals.calls}>
                {data.totals.calls}
              </dd>
            </div>
            <div>
              <dt>Errors</dt>
              <dd data-testid="traffic-errors" data-value={data.totals.errors}>
                {data.totals.errors}
              </dd>
            </div>
            <div>
              <dt>Error rate</dt>
              <dd data-testid="traffic-error-rate" data-value={data.totals.error_rate}>
                {percent(data.totals.error_rate)}
              </dd>
            </div>
          </dl>
          <TrafficChart summary={data} />
          <div className="traffic-scale muted" aria-hidden="true">
            <span>{clock(data.from)}</span>
            <span>now</span>
          </div>
          <p className="hint">
            Tool calls, resource reads and refusals on your exposures, per minute; errors (in their own
            colour) are calls that failed or were refused. <Link to="/logs">See them live</Link>.
          </p>
          <details className="traffic-table">
            <summary>Calls per minute as a table</summary>
            {busy.length === 0 ? (
              <p className="muted">No calls in the last {data.minutes} minutes.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="muted">Minutes not listed had no calls.</caption>
                  <thead>
                    <tr>
                      <th scope="col">Minute</th>
                      <th scope="col">Calls</th>
                      <th scope="col">Errors</th>
                    </tr>
                  </thead>
                  <tbody>
                    {busy.map((bucket) => (
                      <tr key={bucket.minute}>
                        <td>
                          <time dateTime={bucket.minute}>{clock(bucket.minute)}</time>
                        </td>
                        <td>{bucket.calls}</td>
                        <td>{bucket.errors}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </details>
        </>
      ) : (
        !error && <p className="muted">Loading…</p>
      )}
    </section>
  );
}

const GATEWAY_STATES: Record<GatewayProbe['status'], string> = {
  ready: 'ready',
  degraded: 'degraded: its control plane is failing',
  waiting: 'waiting for the control plane',
  failing: 'failing',
  unreachable: 'unreachable',
};

function Gateways({ load }: { load: ReturnType<typeof useLoad<GatewayList>> }) {
  const { data, error, loading, reload } = load;
  return (
    <section className="card gateways" aria-labelledby="gateways-heading">
      <h2 id="gateways-heading">Gateways</h2>
      <ErrorMessage error={error} />
      {data && (
        <>
          {data.gateways.length === 0 ? (
            <p className="muted">
              No gateway is configured (<code>GATEWAY_URLS</code>): gateways see changes only when their cache
              expires, and their readiness is not shown here.
            </p>
          ) : (
            <ul className="gateway-list">
              {data.gateways.map((gateway, index) => (
                <li key={`${index}:${gateway.url}`} data-testid="gateway" data-status={gateway.status}>
                  <code className="gateway-url">{gateway.url}</code>
                  <span className={`gateway-status ${gateway.status}`}>
                    {GATEWAY_STATES[gateway.status]}
                    {gateway.http_status !== null && ` (HTTP ${gateway.http_status})`}
                  </span>
                  <span className="muted gateway-detail">{gateway.detail}</span>
                </li>
              ))}
            </ul>
          )}
          <dl className="facts">
            <dt>Public URL</dt>
            <dd>
              <code>{data.public_url}</code>
            </dd>
            {data.demo && (
              <>
                <dt>Demo</dt>
                <dd data-testid="demo">
                  <Link to={`/exposures/${encodeURIComponent(data.demo.aei_id)}`}>{data.demo.name}</Link> at{' '}
                  <code>{data.demo.mcp_url}</code> with its api_key as a Bearer token (rotate the key on its
                  page for a new one).
                </dd>
              </>
            )}
          </dl>
        </>
      )}
      <button type="button" className="secondary small" onClick={() => void reload()} disabled={loading}>
        Check again
      </button>
    </section>
  );
}

export function Overview() {
  const health = useLoad(
    async () => ({ healthz: await probe('/healthz'), readyz: await probe('/readyz') }),
    [],
  );
  const traffic = useLoad(
    () => api<AuditSummary>('GET', `/api/v2/audit/summary?minutes=${TRAFFIC_MINUTES}`),
    [],
  );
  const gateways = useLoad(() => api<GatewayList>('GET', '/api/v2/gateways'), []);
  const { reload: reloadTraffic } = traffic;
  const { reload: reloadGateways } = gateways;
  useEffect(() => {
    const timer = setInterval(() => {
      void reloadTraffic();
      void reloadGateways();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reloadTraffic, reloadGateways]);
  return (
    <div className="overview">
      <h1>Overview</h1>
      <section className="card">
        <h2>Control plane</h2>
        <ErrorMessage error={health.error} />
        <dl className="facts">
          <dt>Health (/healthz)</dt>
          <dd>{health.data?.healthz ?? '…'}</dd>
          <dt>Readiness (/readyz)</dt>
          <dd>{health.data?.readyz ?? '…'}</dd>
        </dl>
        <button type="button" className="secondary small" onClick={() => void health.reload()}>
          Check again
        </button>
      </section>
      <Gateways load={gateways} />
      <Traffic load={traffic} />
      <section className="stats">
        <Count path="/api/v2/tables" label="Tables" to="/data" />
        <Count path="/api/v2/adis" label="Tools (ADIs)" to="/tools" />
        <Count path="/api/v2/aeis" label="Exposures (AEIs)" to="/exposures" />
      </section>
      <section className="card">
        <h2>First steps</h2>
        <ol className="steps">
          <li>
            Create a table with your JSON data: <code>POST /api/v2/tables</code> with{' '}
            <code>{'{"name": "crm", "data": {...}}'}</code>. It shows under <Link to="/data">Data</Link>.
          </li>
          <li>
            Turn a part of it into a tool: <code>POST /api/v2/adis</code> with a <code>table_id</code>, a{' '}
            <code>json_path</code> and an <code>operation_type</code> (see <Link to="/tools">Tools</Link>).
          </li>
          <li>
            Create an exposure (<code>POST /api/v2/aeis</code>) and bind the tool to it (
            <code>POST /api/v2/aeis/{'{id}'}/bindings</code>); then open it under{' '}
            <Link to="/exposures">Exposures</Link> to rename tools and see what the agent sees.
          </li>
          <li>
            Rotate the exposure&apos;s key to get its MCP URL and ready-to-paste client configs, and connect
            your agent. The full API is documented at <a href="/docs">/docs</a>.
          </li>
        </ol>
      </section>
    </div>
  );
}
