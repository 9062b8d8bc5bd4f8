import { countAll } from '../api.ts';
import { Link } from '../router.tsx';
import { ErrorMessage, useLoad } from '../ui.tsx';

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

export function Overview() {
  const health = useLoad(
    async () => ({ healthz: await probe('/healthz'), readyz: await probe('/readyz') }),
    [],
  );
  return (
    <>
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
    </>
  );
}
