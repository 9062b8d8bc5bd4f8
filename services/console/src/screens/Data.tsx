import { useState } from 'react';
import type { Project, TableSummary } from '@bindery/contracts';
import { Link } from '../router.tsx';
import { ErrorMessage, LoadMore, usePaged } from '../ui.tsx';

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
    </>
  );
}
