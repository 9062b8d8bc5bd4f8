/**
 * OpenAPI import: a document (pasted, loaded from a file, or fetched by the control plane from a
 * URL) into one HTTP tool per operation of a project. "Preview" is the same import with
 * `dry_run: true`: what would be added, changed and removed; "Import" does it. Every refusal (a bad
 * document, an unreachable or refused URL) shows the server's message.
 */
import { useState, type ChangeEvent, type FormEvent } from 'react';
import type { HttpMethod, OpenApiImportBody, OpenApiImportResult, Project } from '@bindery/contracts';
import { api } from '../api.ts';
import {
  CheckField,
  Field,
  namedOptions,
  RadioChoice,
  SelectField,
  TextAreaField,
  TextField,
} from '../forms.tsx';
import { listAll } from '../lists.ts';
import { Link } from '../router.tsx';
import { ErrorMessage, Notice, useAction, useLoad } from '../ui.tsx';
import './editing.css';
import './sources.css';

// HTTP_METHODS of the contracts (a type-only import keeps their code out of the bundle).
const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];

/** "a, b\nc" → ["a", "b", "c"] */
const list = (text: string) =>
  text
    .split(/[,\n]/)
    .map((item) => item.trim())
    .filter((item) => item !== '');

type Source = 'text' | 'url';

export function OpenApiImport() {
  const projects = useLoad(() => listAll<Project>('/api/v2/projects'), []);
  const [source, setSource] = useState<Source>('text');
  const [text, setText] = useState('');
  const [fileNote, setFileNote] = useState<string | null>(null);
  const [url, setUrl] = useState('');
  const [projectId, setProjectId] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [tags, setTags] = useState('');
  const [paths, setPaths] = useState('');
  const [methods, setMethods] = useState<HttpMethod[]>([]);
  const [result, setResult] = useState<OpenApiImportResult | null>(null);
  const [resultOf, setResultOf] = useState<string | null>(null);
  const importing = useAction();
  const [dryRunning, setDryRunning] = useState(true);
  const busy = importing.busy ? (dryRunning ? 'preview' : 'import') : null;

  const body: OpenApiImportBody = {
    ...(source === 'text' ? { document: text } : { url: url.trim() }),
    project_id: projectId === '' ? null : projectId,
    ...(baseUrl.trim() !== '' && { base_url: baseUrl.trim() }),
    ...(list(tags).length > 0 && { tags: list(tags) }),
    ...(list(paths).length > 0 && { paths: list(paths) }),
    ...(methods.length > 0 && { methods }),
  };
  const bodyKey = JSON.stringify(body);
  const ready = source === 'text' ? text.trim() !== '' : url.trim() !== '';

  const run = async (dryRun: boolean) => {
    setDryRunning(dryRun);
    const answer = await importing.run(() =>
      api<OpenApiImportResult>('POST', '/api/v2/openapi-imports', { body: { ...body, dry_run: dryRun } }),
    );
    setResult(answer ?? null);
    if (answer) setResultOf(bodyKey);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void run(true);
  };

  const loadFile = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    if (!file) return;
    try {
      setText(await file.text());
      setFileNote(`Loaded ${file.name} (${file.size.toLocaleString()} bytes): it is in the box below.`);
    } catch (failure) {
      setFileNote(`Could not read ${file.name}: ${(failure as Error).message}`);
    }
  };

  const toggleMethod = (method: HttpMethod, on: boolean) =>
    setMethods((previous) => (on ? [...previous, method] : previous.filter((item) => item !== method)));

  return (
    <>
      <p className="back-link">
        <Link to="/tools">← Back to Tools</Link>
      </p>
      <h1>Import an OpenAPI document</h1>
      <p className="muted">
        Every operation of an OpenAPI 3.0/3.1 or Swagger 2.0 document becomes an HTTP tool. Importing the same
        API into the same project again updates its tools in place.
      </p>
      <form className="card import-form" onSubmit={submit} aria-label="OpenAPI import">
        <RadioChoice
          legend="The document"
          value={source}
          onChange={setSource}
          options={[
            { value: 'text', label: 'Paste it or load a file' },
            { value: 'url', label: 'Fetch it from a URL' },
          ]}
        />
        {source === 'text' ? (
          <div className="source-fields">
            <Field label="Load a file" optional hint="A .json, .yaml or .yml file, read in this browser.">
              {(id, hint) => (
                <input
                  id={id}
                  type="file"
                  aria-describedby={hint}
                  accept=".json,.yaml,.yml,application/json,application/yaml,text/yaml,text/plain"
                  onChange={(event) => void loadFile(event)}
                />
              )}
            </Field>
            {fileNote && (
              <p className="muted" role="status">
                {fileNote}
              </p>
            )}
            <TextAreaField
              label="OpenAPI document"
              hint="JSON or YAML text."
              className="mono document"
              value={text}
              rows={Math.min(20, Math.max(8, text.split('\n').length + 1))}
              onChange={setText}
              autoCapitalize="off"
            />
          </div>
        ) : (
          <TextField
            label="Document URL"
            hint="The control plane fetches it (http or https), through the same outgoing-request guard as tools."
            type="url"
            value={url}
            onChange={setUrl}
            maxLength={2048}
            placeholder="https://api.example.com/openapi.json"
          />
        )}
        <div className="form-grid">
          <SelectField
            label="Project"
            hint="The tools go into it; a re-import into the same project updates them."
            value={projectId}
            onChange={setProjectId}
            options={[{ value: '', label: 'No project' }, ...namedOptions(projects.data?.items ?? [])]}
          />
          <ErrorMessage error={projects.error} />
          <TextField
            label="Base URL"
            optional
            hint="The API’s absolute base URL; replaces the document’s servers."
            type="url"
            value={baseUrl}
            onChange={setBaseUrl}
            maxLength={2048}
            placeholder="https://api.example.com/v1"
          />
          <details className="filters">
            <summary>Filters: only some operations</summary>
            <div className="form-grid">
              <TextField
                label="Tags"
                optional
                hint="Only operations with one of these tags, comma separated."
                value={tags}
                onChange={setTags}
              />
              <TextField
                label="Path globs"
                optional
                hint={
                  <>
                    Only operations whose path matches one, comma separated: <code>*</code> is one segment,{' '}
                    <code>**</code> any, such as <code>/pets/**</code>.
                  </>
                }
                value={paths}
                onChange={setPaths}
              />
              <fieldset className="choice methods">
                <legend>Methods (none ticked: all)</legend>
                {METHODS.map((method) => (
                  <CheckField
                    key={method}
                    className="inline"
                    checked={methods.includes(method)}
                    onChange={(on) => toggleMethod(method, on)}
                  >
                    {method}
                  </CheckField>
                ))}
              </fieldset>
            </div>
          </details>
        </div>
        <ErrorMessage error={importing.error} />
        <div className="actions">
          <button type="submit" disabled={busy !== null || !ready}>
            {busy === 'preview' ? 'Previewing…' : 'Preview'}
          </button>
          <button type="button" onClick={() => void run(false)} disabled={busy !== null || !ready}>
            {busy === 'import' ? 'Importing…' : 'Import'}
          </button>
        </div>
      </form>
      {result && (
        <ImportResult
          result={result}
          stale={resultOf !== bodyKey}
          projectName={projects.data?.items.find((project) => project.id === result.project_id)?.name}
        />
      )}
    </>
  );
}

type Change = 'added' | 'changed' | 'removed';

function ImportResult({
  result,
  stale,
  projectName,
}: {
  result: OpenApiImportResult;
  stale: boolean;
  projectName: string | undefined;
}) {
  const rows: { change: Change; name: string; operation: string; id: string | null }[] = (
    ['added', 'changed', 'removed'] as const
  ).flatMap((change) =>
    result[change].map((item) => ({ change, name: item.name, operation: item.operation_id, id: item.id })),
  );
  const verbs: Record<Change, string> = result.dry_run
    ? { added: 'would be added', changed: 'would change', removed: 'would be removed' }
    : { added: 'added', changed: 'changed', removed: 'removed' };
  const counts = (['added', 'changed', 'removed'] as const)
    .map((change) => `${result[change].length} ${verbs[change]}`)
    .concat(`${result.unchanged} unchanged`)
    .join(', ');
  const where = result.project_id === null ? 'no project' : `project ${projectName ?? result.project_id}`;
  return (
    <section className="card import-result" aria-labelledby="import-result" aria-live="polite">
      <h2 id="import-result">{result.dry_run ? 'Preview' : 'Imported'}</h2>
      <p>
        <strong>{result.api}</strong> into {where}: {counts}.
      </p>
      {stale && (
        <p className="warn">
          The form changed after this {result.dry_run ? 'preview' : 'import'}: preview again to see.
        </p>
      )}
      {rows.length === 0 ? (
        <p className="muted">{result.dry_run ? 'Nothing would change.' : 'Nothing changed.'}</p>
      ) : (
        <div className="table-wrap">
          <table
            className="stack changes"
            aria-label={result.dry_run ? 'What the import would do' : 'What the import did'}
          >
            <thead>
              <tr>
                <th scope="col">Change</th>
                <th scope="col">Tool</th>
                <th scope="col">Operation</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={`${row.change}:${row.operation}:${row.name}`} className={`change-${row.change}`}>
                  <td data-label="Change">
                    <span className={`badge change ${row.change}`}>{verbs[row.change]}</span>
                  </td>
                  <td data-label="Tool">
                    <code>{row.name}</code>
                  </td>
                  <td data-label="Operation">{row.operation}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {result.warnings.length > 0 && (
        <>
          <h3>Warnings</h3>
          <ul className="warnings">
            {result.warnings.map((warning, index) => (
              <li key={index}>
                {warning.operation_id !== null && <code>{warning.operation_id}</code>} {warning.message}
              </li>
            ))}
          </ul>
        </>
      )}
      {result.secrets_to_create.length > 0 && (
        <>
          <h3>Secrets to create</h3>
          <p className="muted">The tools reference these secrets, which you do not have yet.</p>
          <ul>
            {result.secrets_to_create.map((secret) => (
              <li key={secret.name}>
                <code>{secret.name}</code> ({secret.scheme}): {secret.holds}
              </li>
            ))}
          </ul>
        </>
      )}
      {result.bindings_disabled.length > 0 && (
        <>
          <h3>Bindings disabled</h3>
          <ul>
            {result.bindings_disabled.map((binding) => (
              <li key={binding.binding_id}>
                <Link to={`/exposures/${binding.aei_id}`}>
                  <code>{binding.tool_name}</code>
                </Link>
                : {binding.reason}
              </li>
            ))}
          </ul>
        </>
      )}
      {!result.dry_run && (
        <Notice>
          {result.adis.length} tool{result.adis.length === 1 ? '' : 's'} of this API now.{' '}
          <Link to="/tools">See them in Tools</Link>, or bind them to an exposure from the exposure’s page.
        </Notice>
      )}
    </section>
  );
}
