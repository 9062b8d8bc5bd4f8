import { useState } from 'react';
import type { Adi, AdiKind } from '@bindery/contracts';
import { PagedList, usePaged } from '../ui.tsx';
import { NewCustomTool } from './CustomTool.tsx';
import { NewHttpTool } from './HttpTool.tsx';
import { Link } from '../router.tsx';
import { NewContextTool } from './ToolForms.tsx';

// The kinds a control plane may run (ADI_KINDS in the contracts; a type-only import keeps their code out).
const KINDS: AdiKind[] = ['context', 'custom', 'http', 'mcp'];

export function Tools() {
  const [kind, setKind] = useState('');
  const adis = usePaged<Adi>('/api/v2/adis', { kind: kind || undefined });
  return (
    <>
      <h1>Tools (ADIs)</h1>
      <section className="card">
        <div className="section-head">
          <h2>Tools</h2>
          <label className="inline">
            Kind{' '}
            <select value={kind} onChange={(event) => setKind(event.target.value)}>
              <option value="">All kinds</option>
              {KINDS.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
        </div>
        <PagedList list={adis} empty="No tools of this kind.">
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Kind</th>
                  <th scope="col">What it does</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {adis.items.map((adi) => (
                  <tr key={adi.id}>
                    <td>
                      <strong>{adi.name}</strong>
                      <div className="muted">{adi.description}</div>
                    </td>
                    <td>
                      <span className="badge">{adi.kind}</span>
                    </td>
                    <td>
                      {adi.kind === 'context' ? (
                        <code>
                          {adi.operation_type} {adi.json_path}
                        </code>
                      ) : (
                        <span className="muted">{adi.category ?? '—'}</span>
                      )}
                    </td>
                    <td>{adi.status === 'ok' ? 'ok' : <span className="warn">context missing</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </PagedList>
      </section>
      <p>
        More sources of tools: <Link to="/tools/import">import an OpenAPI document</Link> ·{' '}
        <Link to="/tools/upstreams">upstream MCP servers</Link>
      </p>
      <NewContextTool onCreated={() => adis.reload()} />
      <NewCustomTool onCreated={() => adis.reload()} />
      <NewHttpTool onCreated={() => adis.reload()} />
    </>
  );
}
