import { useMemo, useState, type FormEvent } from 'react';
import type { CreateTableBody, Project, Table, TableSummary } from '@bindery/contracts';
import { api } from '../api.ts';
import { namedOptions, NameField, SelectField, SubmitAndClose } from '../forms.tsx';
import { checkJson, JsonText } from '../json-text.tsx';
import { Link, navigate } from '../router.tsx';
import { ErrorMessage, LoadMore, Opener, PagedList, usePaged } from '../ui.tsx';
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
        <PagedList list={tables} empty="No tables yet.">
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
        </PagedList>
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
      <NameField label="Table name" value={name} onChange={setName} />
      <SelectField
        label="Project"
        optional
        value={projectId}
        onChange={setProjectId}
        options={[{ value: '', label: 'None' }, ...namedOptions(projects)]}
      />
      <JsonText label="Data (JSON)" text={text} onChange={setText} checked={checked} minRows={6} />
      <ErrorMessage error={error} />
      <SubmitAndClose
        label="Create table"
        busyLabel="Creating…"
        busy={busy}
        disabled={busy || !checked.ok || name.trim() === ''}
        onClose={onClose}
      />
    </form>
  );
}
