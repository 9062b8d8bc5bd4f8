import { useMemo, useState, type FormEvent } from 'react';
import type { CreateTableBody, Project, Table, TableSummary } from '@bindery/contracts';
import { api } from '../api.ts';
import { Field } from '../forms.tsx';
import { checkJson, JsonText } from '../json-text.tsx';
import { Link, navigate } from '../router.tsx';
import { ErrorMessage, LoadMore, Opener, usePaged } from '../ui.tsx';
import './editing.css';

export function Data() {
  const projects = usePaged<Project>('/api/v2/projects');
  const [projectId, setProjectId] = useState('');
  const tables = usePaged<TableSummary>('/api/v2/tables', { project_id: projectId || undefined });
  const projectName = (id: string | null) =>
    id === null ? '—' : (projects.items.find((project) => project.id === id)?.name ?? id);
  return (
    <>
      <h1>Data</h1>
      <section className="card">
        <h2>Projects</h2>
        <ErrorMessage error={projects.error} />
        {projects.items.length === 0 && !projects.loading && !projects.error && <p>No projects yet.</p>}
        <ul className="chips">
          {projects.items.map((project) => (
            <li key={project.id}>
              <strong>{project.name}</strong> <span className="muted">{project.slug}</span>
            </li>
          ))}
        </ul>
        <LoadMore hasMore={projects.hasMore} loading={projects.loading} onClick={projects.loadMore} />
      </section>
      <section className="card">
        <div className="section-head">
          <h2>Tables</h2>
          <label className="inline">
            Project{' '}
            <select value={projectId} onChange={(event) => setProjectId(event.target.value)}>
              <option value="">All</option>
              {projects.items.map((project) => (
                <option key={project.id} value={project.id}>
                  {project.name}
                </option>
              ))}
            </select>
          </label>
        </div>
        <ErrorMessage error={tables.error} />
        {tables.items.length === 0 && !tables.loading && !tables.error && <p>No tables yet.</p>}
        {tables.items.length > 0 && (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Project</th>
                  <th scope="col">Version</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {tables.items.map((table) => (
                  <tr key={table.id}>
                    <td>
                      <Link to={`/data/tables/${table.id}`}>{table.name}</Link>
                    </td>
                    <td>{projectName(table.project_id)}</td>
                    <td>{table.version}</td>
                    <td>{new Date(table.updated_at).toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <LoadMore hasMore={tables.hasMore} loading={tables.loading} onClick={tables.loadMore} />
      </section>
      <section className="card" aria-labelledby="new-table">
        <h2 id="new-table">Make a table</h2>
        <p className="muted">A table holds one JSON document: the data your context tools read and write.</p>
        <Opener label="New table">
          {(close) => <NewTableForm projects={projects.items} onClose={close} />}
        </Opener>
      </section>
    </>
  );
}

function NewTableForm({ projects, onClose }: { projects: Project[]; onClose: () => void }) {
  const [name, setName] = useState('');
  const [projectId, setProjectId] = useState('');
  const [text, setText] = useState('{}');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const checked = useMemo(() => checkJson(text, { value: {} }), [text]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!checked.ok) return;
    const body: CreateTableBody = {
      name: name.trim(),
      data: checked.value as CreateTableBody['data'],
      ...(projectId !== '' && { project_id: projectId }),
    };
    setBusy(true);
    try {
      const table = await api<Table>('POST', '/api/v2/tables', { body });
      navigate(`/data/tables/${encodeURIComponent(table.id)}`);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="New table">
      <Field label="Table name">
        {(id) => (
          <input
            id={id}
            value={name}
            onChange={(event) => setName(event.target.value)}
            required
            maxLength={200}
            autoComplete="off"
          />
        )}
      </Field>
      <Field label="Project" optional>
        {(id) => (
          <select id={id} value={projectId} onChange={(event) => setProjectId(event.target.value)}>
            <option value="">None</option>
            {projects.map((project) => (
              <option key={project.id} value={project.id}>
                {project.name}
              </option>
            ))}
          </select>
        )}
      </Field>
      <JsonText label="Data (JSON)" text={text} onChange={setText} checked={checked} minRows={6} />
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="submit" disabled={busy || !checked.ok || name.trim() === ''}>
          {busy ? 'Creating…' : 'Create table'}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
