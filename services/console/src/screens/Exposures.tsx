import { useState, type FormEvent } from 'react';
import type { Aei, AeiConnection, Binding, ToolPreview, UpdateBindingBody } from '@bindery/contracts';
import { api } from '../api.ts';
import { Link } from '../router.tsx';
import { CopyBlock, ErrorMessage, LoadMore, Notice, useLoad, usePaged } from '../ui.tsx';
import { BindTool } from './ToolForms.tsx';

type AeiWithKey = Aei & { api_key: string } & AeiConnection;

export function Exposures() {
  const aeis = usePaged<Aei>('/api/v2/aeis');
  return (
    <>
      <h1>Exposures (AEIs)</h1>
      <section className="card">
        <ErrorMessage error={aeis.error} />
        {aeis.items.length === 0 && !aeis.loading && !aeis.error && <p>No exposures yet.</p>}
        {aeis.items.length > 0 && (
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
        )}
        <LoadMore hasMore={aeis.hasMore} loading={aeis.loading} onClick={aeis.loadMore} />
      </section>
    </>
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
      <KeyRotation path={`${base}/rotate-key`} onRotated={() => void aei.reload()} />
      <section className="card">
        <h2>Bindings</h2>
        <ErrorMessage error={bindings.error} />
        {bindings.items.length === 0 && !bindings.loading && !bindings.error && (
          <p>No tools bound yet: bind one below.</p>
        )}
        {bindings.items.length > 0 && (
          <div className="table-wrap">
            <table className="bindings">
              <thead>
                <tr>
                  <th scope="col">Tool name</th>
                  <th scope="col">Description</th>
                  <th scope="col">Enabled</th>
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
        )}
        <LoadMore hasMore={bindings.hasMore} loading={bindings.loading} onClick={bindings.loadMore} />
        <BindTool
          aeiPath={base}
          bound={bindings.items.map((binding) => binding.adi_id)}
          onBound={() => {
            bindings.reload();
            setChanges((count) => count + 1);
          }}
        />
      </section>
      <section className="card" aria-labelledby="agent-view">
        <h2 id="agent-view">What the agent sees</h2>
        <p className="muted">
          The tool list this exposure serves over MCP (<code>tools/list</code>), from{' '}
          <code>GET /api/v2/aeis/{'{id}'}/tools</code>.
          {aei.data?.exposure_mode === 'progressive' &&
            ' This exposure is progressive: agents discover these tools through its catalog tools.'}
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
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const patch = async (body: UpdateBindingBody) => {
    setBusy(true);
    try {
      const updated = await api<Binding>('PATCH', path, { body });
      setBinding(updated);
      setName(updated.tool_name);
      setDescription(updated.tool_description ?? '');
      setError(null);
      onChanged();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
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
    </tr>
  );
}

function KeyRotation({ path, onRotated }: { path: string; onRotated: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [rotated, setRotated] = useState<AeiWithKey | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const rotate = async () => {
    setBusy(true);
    try {
      setRotated(await api<AeiWithKey>('POST', path));
      setError(null);
      setConfirming(false);
      onRotated();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  const configs = rotated?.client_configs;
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
      {rotated && configs && (
        <div className="new-key" data-testid="new-key">
          <Notice>The new key is shown this once only: store it now.</Notice>
          <CopyBlock label="API key" text={rotated.api_key} />
          <CopyBlock label="MCP URL" text={rotated.mcp_url} />
          <CopyBlock label="MCP URL (key in the Authorization header)" text={rotated.mcp_url_header} />
          <h3>Client configs</h3>
          <CopyBlock
            label={`Claude Desktop (${configs.claude_desktop.file})`}
            text={JSON.stringify(configs.claude_desktop.config, null, 2)}
          />
          <CopyBlock
            label={`VS Code (${configs.vscode.file})`}
            text={JSON.stringify(configs.vscode.config, null, 2)}
          />
          <CopyBlock
            label={`Cursor (${configs.cursor.file})`}
            text={JSON.stringify(configs.cursor.config, null, 2)}
          />
          <CopyBlock label="MCP Inspector" text={configs.mcp_inspector.command} />
          {rotated.stdio_configs && (
            <details>
              <summary>Stdio entry configs (caller {rotated.stdio_configs.caller})</summary>
              <p className="muted">{rotated.stdio_configs.note}</p>
              <CopyBlock
                label="Claude Desktop (stdio)"
                text={JSON.stringify(rotated.stdio_configs.claude_desktop.config, null, 2)}
              />
              <CopyBlock
                label="VS Code (stdio)"
                text={JSON.stringify(rotated.stdio_configs.vscode.config, null, 2)}
              />
              <CopyBlock
                label="Cursor (stdio)"
                text={JSON.stringify(rotated.stdio_configs.cursor.config, null, 2)}
              />
            </details>
          )}
          <button type="button" className="secondary" onClick={() => setRotated(null)}>
            I stored it: hide the key
          </button>
        </div>
      )}
    </section>
  );
}
