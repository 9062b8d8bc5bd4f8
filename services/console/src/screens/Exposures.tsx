import { useMemo, useState, type FormEvent } from 'react';
import type {
  Aei,
  AeiConnection,
  Binding,
  CreateAeiBody,
  ToolPreview,
  UpdateAeiBody,
  UpdateBindingBody,
} from '@bindery/contracts';
import { api } from '../api.ts';
import { NameField, SelectField, SubmitAndClose } from '../forms.tsx';
import { checkJson, JsonText, pretty } from '../json-text.tsx';
import { Link } from '../router.tsx';
import {
  ClientFileBlocks,
  CopyBlock,
  ErrorMessage,
  Notice,
  Opener,
  PagedList,
  ShownOnce,
  useAction,
  useLoad,
  usePaged,
} from '../ui.tsx';
import { Prompts } from './Prompts.tsx';
import { BindTool } from './ToolForms.tsx';
import './editing.css';

type ExposureMode = Aei['exposure_mode'];
type AeiStatus = Aei['status'];

type AeiWithKey = Aei & { api_key: string } & AeiConnection;

export function Exposures() {
  const aeis = usePaged<Aei>('/api/v2/aeis');
  return (
    <>
      <h1>Exposures (AEIs)</h1>
      <section className="card">
        <PagedList list={aeis} empty="No exposures yet.">
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Mode</th>
                  <th scope="col">Key</th>
                </tr>
              </thead>
              <tbody>
                {aeis.items.map((aei) => (
                  <tr key={aei.id}>
                    <td>
                      <Link to={`/exposures/${aei.id}`}>{aei.name}</Link>
                      {aei.default_profile && <span className="badge">default profile</span>}
                    </td>
                    <td>{aei.status}</td>
                    <td>{aei.exposure_mode}</td>
                    <td>
                      <code>{aei.api_key_prefix}…</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </PagedList>
      </section>
      <section className="card" aria-labelledby="new-exposure">
        <h2 id="new-exposure">Make an exposure</h2>
        <p className="muted">
          An MCP endpoint with its own key: bind tools to it, then give its URL or key to an agent.
        </p>
        <Opener label="New exposure">
          {(close) => <NewExposureForm onCreated={() => aeis.reload()} onClose={close} />}
        </Opener>
      </section>
    </>
  );
}

const MODES: { value: ExposureMode; label: string }[] = [
  { value: 'direct', label: 'direct: every bound tool in tools/list' },
  { value: 'progressive', label: 'progressive: a catalog the agent searches and calls through' },
];
const STATUSES: AeiStatus[] = ['enabled', 'disabled'];

/** The mode and status pickers of the create and settings forms. */
function ModeAndStatus({
  mode,
  status,
  onMode,
  onStatus,
}: {
  mode: ExposureMode;
  status: AeiStatus;
  onMode: (mode: ExposureMode) => void;
  onStatus: (status: AeiStatus) => void;
}) {
  return (
    <>
      <SelectField label="Mode" value={mode} onChange={onMode} options={MODES} />
      <SelectField
        label="Status"
        hint="A disabled exposure refuses every request with its key."
        value={status}
        onChange={onStatus}
        options={STATUSES}
      />
    </>
  );
}

function NewExposureForm({ onCreated, onClose }: { onCreated: () => void; onClose: () => void }) {
  const [name, setName] = useState('');
  const [mode, setMode] = useState<ExposureMode>('direct');
  const [status, setStatus] = useState<AeiStatus>('enabled');
  const { busy, error, run } = useAction();
  const [created, setCreated] = useState<AeiWithKey | null>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body: CreateAeiBody = { name: name.trim(), exposure_mode: mode, status };
    await run(async () => {
      setCreated(await api<AeiWithKey>('POST', '/api/v2/aeis', { body }));
      setName('');
      onCreated();
    });
  };
  if (created) {
    return (
      <>
        <Notice>
          Created <Link to={`/exposures/${created.id}`}>{created.name}</Link>: open it to bind tools.
        </Notice>
        <NewKey aei={created} onHide={onClose} />
      </>
    );
  }
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="New exposure">
      <NameField label="Exposure name" value={name} onChange={setName} />
      <ModeAndStatus mode={mode} status={status} onMode={setMode} onStatus={setStatus} />
      <ErrorMessage error={error} />
      <SubmitAndClose
        label="Create exposure"
        busyLabel="Creating…"
        busy={busy}
        disabled={busy || name.trim() === ''}
        onClose={onClose}
      />
    </form>
  );
}

/** Name, mode and status of an exposure, saved together. */
function ExposureSettings({ path, aei, onSaved }: { path: string; aei: Aei; onSaved: () => void }) {
  const [name, setName] = useState(aei.name);
  const [mode, setMode] = useState(aei.exposure_mode);
  const [status, setStatus] = useState(aei.status);
  const { busy, error, run } = useAction();
  const [saved, setSaved] = useState(false);
  const body: UpdateAeiBody = {
    ...(name.trim() !== aei.name && { name: name.trim() }),
    ...(mode !== aei.exposure_mode && { exposure_mode: mode }),
    ...(status !== aei.status && { status }),
  };
  const changed = Object.keys(body).length > 0;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    await run(async () => {
      await api<Aei>('PATCH', path, { body });
      setSaved(true);
      onSaved();
    });
  };
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="Exposure settings">
      <NameField label="Exposure name" value={name} onChange={setName} />
      <ModeAndStatus mode={mode} status={status} onMode={setMode} onStatus={setStatus} />
      <ErrorMessage error={error} />
      {saved && !changed && <Notice>Saved.</Notice>}
      <div className="actions">
        <button type="submit" disabled={busy || !changed || name.trim() === ''}>
          {busy ? 'Saving…' : 'Save settings'}
        </button>
      </div>
    </form>
  );
}

export function ExposureView({ id }: { id: string }) {
  const base = `/api/v2/aeis/${encodeURIComponent(id)}`;
  const aei = useLoad(() => api<Aei>('GET', base), [base]);
  const bindings = usePaged<Binding>(`${base}/bindings`);
  // Bumped by every binding change: the agent's view is read again.
  const [changes, setChanges] = useState(0);
  const tools = useLoad(() => api<{ tools: ToolPreview[] }>('GET', `${base}/tools`), [base, changes]);
  return (
    <>
      <p>
        <Link to="/exposures">← Exposures</Link>
      </p>
      <h1>{aei.data ? aei.data.name : 'Exposure'}</h1>
      <ErrorMessage error={aei.error} />
      {aei.data && (
        <dl className="facts card">
          <dt>Status</dt>
          <dd>{aei.data.status}</dd>
          <dt>Mode</dt>
          <dd>{aei.data.exposure_mode}</dd>
          <dt>Key</dt>
          <dd>
            <code>{aei.data.api_key_prefix}…</code>
          </dd>
          <dt>Config version</dt>
          <dd>{aei.data.config_version}</dd>
        </dl>
      )}
      {aei.data && (
        <section className="card" aria-labelledby="exposure-settings">
          <h2 id="exposure-settings">Settings</h2>
          <ExposureSettings
            key={aei.data.updated_at}
            path={base}
            aei={aei.data}
            onSaved={() => {
              void aei.reload();
              setChanges((count) => count + 1);
            }}
          />
          <p>
            <Link to={`/playground?exposure=${encodeURIComponent(id)}`}>Try its tools in the playground</Link>
          </p>
        </section>
      )}
      <KeyRotation path={`${base}/rotate-key`} onRotated={() => void aei.reload()} />
      <section className="card">
        <h2>Bindings</h2>
        <PagedList list={bindings} empty="No tools bound yet: bind one below.">
          <div className="table-wrap">
            <table className="bindings">
              <thead>
                <tr>
                  <th scope="col">Tool name</th>
                  <th scope="col">Description</th>
                  <th scope="col">Enabled</th>
                  <th scope="col">Input schema</th>
                </tr>
              </thead>
              <tbody>
                {bindings.items.map((binding) => (
                  <BindingRow
                    key={binding.id}
                    path={`${base}/bindings/${encodeURIComponent(binding.id)}`}
                    initial={binding}
                    onChanged={() => setChanges((count) => count + 1)}
                  />
                ))}
              </tbody>
            </table>
          </div>
        </PagedList>
        <BindTool
          aeiPath={base}
          bound={bindings.items.map((binding) => binding.adi_id)}
          onBound={() => {
            bindings.reload();
            setChanges((count) => count + 1);
          }}
        />
      </section>
      <Prompts aeiPath={base} />
      <section className="card" aria-labelledby="agent-view">
        <h2 id="agent-view">What the agent sees</h2>
        <p className="muted">
          The tool list this exposure serves over MCP (<code>tools/list</code>), from{' '}
          <code>GET /api/v2/aeis/{'{id}'}/tools</code>.
          {aei.data?.exposure_mode === 'progressive' &&
            ' This exposure is progressive: agents discover these tools through its catalog tools.'}{' '}
          Its exact <code>tools/list</code>, resources and prompts, as the gateway serves them, are in the{' '}
          <Link to={`/playground?exposure=${encodeURIComponent(id)}`}>playground</Link>.
        </p>
        <ErrorMessage error={tools.error} />
        {tools.data && tools.data.tools.length === 0 && <p>No tools: bind and enable one.</p>}
        <ul className="agent-tools" data-testid="agent-tools">
          {tools.data?.tools.map((tool) => (
            <li key={tool.name} className="agent-tool">
              <code className="tool-name">{tool.name}</code>
              <p>{tool.description}</p>
              <details open>
                <summary>Input schema</summary>
                <pre tabIndex={0}>{JSON.stringify(tool.inputSchema, null, 2)}</pre>
              </details>
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

function BindingRow({ path, initial, onChanged }: { path: string; initial: Binding; onChanged: () => void }) {
  const [binding, setBinding] = useState(initial);
  const [name, setName] = useState(initial.tool_name);
  const [description, setDescription] = useState(initial.tool_description ?? '');
  const { busy, error, run } = useAction();
  const patch = (body: UpdateBindingBody) =>
    run(async () => {
      const updated = await api<Binding>('PATCH', path, { body });
      setBinding(updated);
      setName(updated.tool_name);
      setDescription(updated.tool_description ?? '');
      onChanged();
    });
  const saveName = (event: FormEvent) => {
    event.preventDefault();
    // An empty name goes back to the tool's own name.
    void patch({ tool_name: name.trim() === '' ? null : name.trim() });
  };
  const saveDescription = (event: FormEvent) => {
    event.preventDefault();
    void patch({ tool_description: description.trim() === '' ? null : description });
  };
  return (
    <tr data-binding={binding.id}>
      <td>
        <form onSubmit={saveName} className="inline-edit">
          <input
            aria-label={`Tool name of binding ${binding.id}`}
            value={name}
            onChange={(event) => setName(event.target.value)}
            spellCheck={false}
          />
          <button type="submit" className="small" disabled={busy || name === binding.tool_name}>
            Save name
          </button>
        </form>
        <div className="muted">
          {binding.tool_name_inherited ? 'the tool’s own name' : 'renamed'} · ADI {binding.adi_id}
        </div>
        <ErrorMessage error={error} />
      </td>
      <td>
        <form onSubmit={saveDescription} className="inline-edit">
          <textarea
            aria-label={`Description of binding ${binding.id}`}
            value={description}
            rows={2}
            onChange={(event) => setDescription(event.target.value)}
            placeholder="the tool’s own description"
          />
          <button
            type="submit"
            className="small"
            disabled={busy || description === (binding.tool_description ?? '')}
          >
            Save description
          </button>
        </form>
      </td>
      <td>
        <label className="switch">
          <input
            type="checkbox"
            role="switch"
            checked={binding.enabled}
            disabled={busy}
            onChange={(event) => void patch({ enabled: event.target.checked })}
          />
          <span>{binding.enabled ? 'On' : 'Off'}</span>
        </label>
      </td>
      <td>
        <SchemaOverride
          bindingId={binding.id}
          schema={binding.input_schema}
          busy={busy}
          onSave={(input_schema) => void patch({ input_schema })}
        />
      </td>
    </tr>
  );
}

/**
 * A binding's input-schema override: JSON checked as typed, saved with the binding (the server
 * checks it narrows the tool's own schema and says why not); empty goes back to the tool's schema.
 */
function SchemaOverride({
  bindingId,
  schema,
  busy,
  onSave,
}: {
  bindingId: string;
  schema: Binding['input_schema'];
  busy: boolean;
  onSave: (schema: Record<string, unknown> | null) => void;
}) {
  const saved = schema === null ? '' : pretty(schema);
  const [text, setText] = useState(saved);
  const checked = useMemo(() => checkJson(text, { value: null }), [text]);
  const isObject =
    checked.ok &&
    (checked.value === null || (typeof checked.value === 'object' && !Array.isArray(checked.value)));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (checked.ok && isObject) onSave(checked.value as Record<string, unknown> | null);
  };
  return (
    <details className="schema-override">
      <summary>{schema === null ? 'The tool’s own' : 'Overridden'}</summary>
      <form onSubmit={submit} aria-label={`Input schema of binding ${bindingId}`}>
        <JsonText
          label="Override (JSON Schema)"
          text={text}
          onChange={setText}
          checked={checked.ok && !isObject ? { ok: false, message: 'A schema is a JSON object.' } : checked}
          validMessage={
            checked.ok && checked.value === null ? 'Empty: the tool’s own schema.' : 'Valid JSON.'
          }
        />
        <button type="submit" className="small" disabled={busy || !isObject || text === saved}>
          Save schema
        </button>
      </form>
    </details>
  );
}

function KeyRotation({ path, onRotated }: { path: string; onRotated: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [rotated, setRotated] = useState<AeiWithKey | null>(null);
  const { busy, error, run } = useAction();
  const rotate = () =>
    run(async () => {
      setRotated(await api<AeiWithKey>('POST', path));
      setConfirming(false);
      onRotated();
    });
  return (
    <section className="card">
      <h2>API key</h2>
      <ErrorMessage error={error} />
      {!confirming && !rotated && (
        <button type="button" onClick={() => setConfirming(true)}>
          Rotate key
        </button>
      )}
      {confirming && (
        <div className="confirm" role="group" aria-label="Confirm key rotation">
          <p>The current key stops working at once; clients must be given the new one.</p>
          <button type="button" className="danger" onClick={() => void rotate()} disabled={busy}>
            {busy ? 'Rotating…' : 'Rotate now'}
          </button>{' '}
          <button type="button" className="secondary" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      )}
      {rotated && <NewKey aei={rotated} onHide={() => setRotated(null)} />}
    </section>
  );
}

/** A key just made (a new exposure, a rotation): shown this once, with its URLs and client configs. */
function NewKey({ aei, onHide }: { aei: AeiWithKey; onHide: () => void }) {
  const configs = aei.client_configs;
  return (
    <ShownOnce testId="new-key" notice="The new key is shown this once only: store it now." onHide={onHide}>
      <CopyBlock label="API key" text={aei.api_key} />
      <CopyBlock label="MCP URL" text={aei.mcp_url} />
      <CopyBlock label="MCP URL (key in the Authorization header)" text={aei.mcp_url_header} />
      <h3>Client configs</h3>
      <ClientFileBlocks configs={configs} />
      <CopyBlock label="MCP Inspector" text={configs.mcp_inspector.command} />
      {aei.stdio_configs && (
        <details>
          <summary>Stdio entry configs (caller {aei.stdio_configs.caller})</summary>
          <p className="muted">{aei.stdio_configs.note}</p>
          <CopyBlock
            label="Claude Desktop (stdio)"
            text={JSON.stringify(aei.stdio_configs.claude_desktop.config, null, 2)}
          />
          <CopyBlock
            label="VS Code (stdio)"
            text={JSON.stringify(aei.stdio_configs.vscode.config, null, 2)}
          />
          <CopyBlock label="Cursor (stdio)" text={JSON.stringify(aei.stdio_configs.cursor.config, null, 2)} />
        </details>
      )}
    </ShownOnce>
  );
}
