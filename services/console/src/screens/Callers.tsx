/**
 * Callers: which exposure (profile) each caller name gets, the default profile, and the personal
 * MCP keys the caller entries take; and the connect page, `/connect?caller=vscode`, the web
 * counterpart of the `mcpd://start?caller=` link: how that caller resolves and its stdio configs.
 */
import { useEffect, useState, type FormEvent } from 'react';
import type {
  Aei,
  CallerList,
  CallerMapping,
  CallerResolution,
  McpKey,
  McpKeyWithSecret,
} from '@bindery/contracts';
import { api } from '../api.ts';
import { SelectField, TextField } from '../forms.tsx';
import { listAll } from '../lists.ts';
import { Link, navigate } from '../router.tsx';
import {
  ClientFileBlocks,
  CopyBlock,
  ErrorMessage,
  Notice,
  PagedList,
  ShownOnce,
  useAction,
  useLoad,
  usePaged,
} from '../ui.tsx';
import './editing.css';

const callerPath = (caller: string) => `/api/v2/callers/${encodeURIComponent(caller)}`;
/**
 * The exposures to pick from, read once the caller answer is in: that answer may have just made
 * the default profile, which the picker should offer too.
 */
function useExposures(after: string | undefined) {
  return useLoad(
    () => (after === undefined ? Promise.resolve(undefined) : listAll<Aei>('/api/v2/aeis')),
    [after === undefined],
  );
}

const when = (timestamp: string | null) =>
  timestamp === null ? 'never' : new Date(timestamp).toLocaleString();

export function Callers() {
  const callers = useLoad(() => api<CallerList>('GET', '/api/v2/callers'), []);
  const aeis = useExposures(callers.data?.default_profile.aei_id);
  return (
    <>
      <h1>Callers</h1>
      <p className="muted">
        A caller is who connects through your personal MCP key (<code>vscode</code>, <code>claude</code>,{' '}
        <code>cursor</code>…): each gets the exposure (profile) it is mapped to, else your default profile.
      </p>
      <section className="card" aria-labelledby="caller-map">
        <h2 id="caller-map">Caller map</h2>
        <ErrorMessage error={callers.error} />
        {callers.data && (
          <p>
            Default profile:{' '}
            <Link to={`/exposures/${callers.data.default_profile.aei_id}`}>
              {callers.data.default_profile.aei_name}
            </Link>{' '}
            <span className="muted">(what a caller mapped to no profile gets)</span>
          </p>
        )}
        {callers.data && callers.data.callers.length === 0 && <p>No caller is mapped yet.</p>}
        {callers.data && callers.data.callers.length > 0 && (
          <div className="table-wrap">
            <table className="stack" data-testid="caller-mappings">
              <thead>
                <tr>
                  <th scope="col">Caller</th>
                  <th scope="col">Profile</th>
                  <th scope="col">Mapped</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {callers.data.callers.map((mapping) => (
                  <MappingRow
                    key={mapping.caller}
                    mapping={mapping}
                    onChanged={() => void callers.reload()}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
        <h3>Map a caller</h3>
        <MapCaller
          aeis={aeis.data?.items ?? []}
          aeisError={aeis.error}
          onMapped={() => void callers.reload()}
        />
      </section>
      <PersonalKeys />
    </>
  );
}

function MappingRow({ mapping, onChanged }: { mapping: CallerMapping; onChanged: () => void }) {
  const { busy, error, run } = useAction();
  const unmap = () =>
    run(async () => {
      await api('DELETE', callerPath(mapping.caller));
      onChanged();
    });
  return (
    <tr data-caller={mapping.caller}>
      <td data-label="Caller">
        <code>{mapping.caller}</code>
      </td>
      <td data-label="Profile">
        <Link to={`/exposures/${mapping.aei_id}`}>{mapping.aei_name}</Link>
      </td>
      <td data-label="Mapped">{when(mapping.updated_at)}</td>
      <td data-label="Actions">
        <div className="actions">
          <Link to={`/connect?caller=${encodeURIComponent(mapping.caller)}`}>Connect</Link>
          <button
            type="button"
            className="secondary small"
            aria-label={`Unmap ${mapping.caller}`}
            disabled={busy}
            onClick={() => void unmap()}
          >
            Unmap
          </button>
        </div>
        <ErrorMessage error={error} />
      </td>
    </tr>
  );
}

/** Maps a caller name (typed, or fixed by the page) to one of the user's exposures. */
export function MapCaller({
  aeis,
  aeisError,
  caller: fixedCaller,
  current,
  onMapped,
}: {
  aeis: Aei[];
  aeisError: unknown;
  caller?: string;
  current?: string;
  onMapped: (mapping: CallerMapping) => void;
}) {
  const [caller, setCaller] = useState(fixedCaller ?? '');
  const [aeiId, setAeiId] = useState(current ?? '');
  const { busy, error, run } = useAction();
  const [done, setDone] = useState<CallerMapping | null>(null);
  const chosen = aeiId || aeis[0]?.id || '';
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    await run(async () => {
      // The name goes as typed: the server says what is wrong with it.
      const mapping = await api<CallerMapping>('PUT', callerPath(caller.trim()), {
        body: { aei_id: chosen },
      });
      setDone(mapping);
      if (fixedCaller === undefined) setCaller('');
      onMapped(mapping);
    });
  };
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="Map a caller">
      {fixedCaller === undefined && (
        <TextField
          label="Caller name"
          hint="Lower case, as the client names itself: vscode, claude, cursor…"
          value={caller}
          onChange={setCaller}
          placeholder="vscode"
          required
        />
      )}
      <SelectField
        label="Exposure"
        value={chosen}
        onChange={setAeiId}
        options={aeis.map((aei) => ({
          value: aei.id,
          label: `${aei.name}${aei.default_profile && !/default/i.test(aei.name) ? ' (default profile)' : ''}`,
        }))}
      />
      <ErrorMessage error={aeisError ?? error} />
      {done && (
        <Notice>
          <code>{done.caller}</code> now gets {done.aei_name}.
        </Notice>
      )}
      <div>
        <button type="submit" disabled={busy || chosen === ''}>
          {busy ? 'Mapping…' : 'Map caller'}
        </button>
      </div>
    </form>
  );
}

function PersonalKeys() {
  const keys = usePaged<McpKey>('/api/v2/mcp-keys');
  const [name, setName] = useState('');
  const { busy, error, run } = useAction();
  const [shown, setShown] = useState<{ key: McpKeyWithSecret; rotated: boolean } | null>(null);
  const create = async (event: FormEvent) => {
    event.preventDefault();
    await run(async () => {
      const key = await api<McpKeyWithSecret>('POST', '/api/v2/mcp-keys', { body: { name: name.trim() } });
      setShown({ key, rotated: false });
      setName('');
      keys.reload();
    });
  };
  return (
    <section className="card" aria-labelledby="personal-keys">
      <h2 id="personal-keys">Personal MCP keys</h2>
      <p className="muted">
        The key the caller entries take: <code>bindery-mcp &lt;caller&gt;</code> reads it from{' '}
        <code>BINDERY_KEY</code>. Each key serves your callers as the map above says.
      </p>
      <form className="form-row" onSubmit={(event) => void create(event)} aria-label="Create a personal key">
        <TextField
          label="Key name"
          value={name}
          onChange={setName}
          placeholder="laptop"
          maxLength={100}
          literal={false}
          autoComplete="off"
        />
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </form>
      <ErrorMessage error={error} />
      {shown && (
        <ShownOnce
          testId="new-personal-key"
          notice={
            <>
              {shown.rotated ? `Key “${shown.key.name}” rotated: the old one no longer works. ` : ''}
              The key is shown this once only: store it now.
            </>
          }
          onHide={() => setShown(null)}
        >
          <CopyBlock label="Personal key" text={shown.key.key} />
        </ShownOnce>
      )}
      <PagedList list={keys} empty="No personal keys yet.">
        <div className="table-wrap">
          <table className="stack" data-testid="personal-keys">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.items.map((key) => (
                <KeyRow
                  key={key.id}
                  item={key}
                  onRotated={(rotated) => {
                    setShown({ key: rotated, rotated: true });
                    keys.reload();
                  }}
                  onRevoked={() => {
                    if (shown?.key.id === key.id) setShown(null);
                    keys.reload();
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
      </PagedList>
    </section>
  );
}

function KeyRow({
  item,
  onRotated,
  onRevoked,
}: {
  item: McpKey;
  onRotated: (key: McpKeyWithSecret) => void;
  onRevoked: () => void;
}) {
  const [confirming, setConfirming] = useState<'rotate' | 'revoke' | null>(null);
  const { busy, error, run } = useAction();
  const base = `/api/v2/mcp-keys/${encodeURIComponent(item.id)}`;
  const act = () =>
    run(async () => {
      if (confirming === 'rotate') onRotated(await api<McpKeyWithSecret>('POST', `${base}/rotate`));
      else {
        await api('DELETE', base);
        onRevoked();
      }
      setConfirming(null);
    });
  return (
    <tr data-key={item.id}>
      <td data-label="Name">{item.name}</td>
      <td data-label="Key">
        <code>{item.key_prefix}…</code>
      </td>
      <td data-label="Created">{when(item.created_at)}</td>
      <td data-label="Last used">{when(item.last_used_at)}</td>
      <td data-label="Actions">
        {confirming === null ? (
          <div className="actions">
            <button
              type="button"
              className="secondary small"
              aria-label={`Rotate ${item.name}`}
              onClick={() => setConfirming('rotate')}
            >
              Rotate
            </button>
            <button
              type="button"
              className="secondary small"
              aria-label={`Revoke ${item.name}`}
              onClick={() => setConfirming('revoke')}
            >
              Revoke
            </button>
          </div>
        ) : (
          <div className="confirm" role="group" aria-label={`Confirm: ${confirming} ${item.name}`}>
            <p>
              {confirming === 'rotate'
                ? 'The key stops working at once; a new one is shown once.'
                : 'The key stops working at once, on every gateway.'}
            </p>
            <div className="actions">
              <button type="button" className="danger small" disabled={busy} onClick={() => void act()}>
                {confirming === 'rotate' ? 'Rotate now' : 'Revoke now'}
              </button>
              <button type="button" className="secondary small" onClick={() => setConfirming(null)}>
                Cancel
              </button>
            </div>
          </div>
        )}
        <ErrorMessage error={error} />
      </td>
    </tr>
  );
}

/** The caller named in `?caller=`, followed across navigations (the router follows the path only). */
function useCallerQuery(): string {
  const read = () => new URLSearchParams(window.location.search).get('caller') ?? '';
  const [caller, setCaller] = useState(read);
  useEffect(() => {
    const update = () => setCaller(read());
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, []);
  return caller;
}

export function Connect() {
  const caller = useCallerQuery();
  const [typed, setTyped] = useState(caller);
  useEffect(() => setTyped(caller), [caller]);
  const go = (event: FormEvent) => {
    event.preventDefault();
    navigate(`/connect?caller=${encodeURIComponent(typed.trim())}`);
  };
  return (
    <>
      <p>
        <Link to="/callers">← Callers</Link>
      </p>
      <h1>{caller ? `Connect ${caller}` : 'Connect a caller'}</h1>
      <form className="form-row" onSubmit={go} aria-label="Choose a caller">
        <TextField label="Caller name" value={typed} onChange={setTyped} placeholder="vscode" />
        <button type="submit" className="secondary">
          Show
        </button>
      </form>
      {caller !== '' && <Resolution key={caller} caller={caller} />}
    </>
  );
}

function Resolution({ caller }: { caller: string }) {
  const resolution = useLoad(() => api<CallerResolution>('GET', callerPath(caller)), [caller]);
  const aeis = useExposures(resolution.data?.aei_id);
  const data = resolution.data;
  const configs = data?.stdio_configs;
  return (
    <>
      <ErrorMessage error={resolution.error} />
      {data && (
        <section className="card" aria-labelledby="resolves">
          <h2 id="resolves">How it resolves</h2>
          <p data-testid="resolution">
            <code>{data.caller}</code> gets <Link to={`/exposures/${data.aei_id}`}>{data.aei_name}</Link>{' '}
            {data.via === 'map' ? '(mapped to it)' : '(mapped to no profile: your default profile)'}
          </p>
          <details>
            <summary>Map it to another exposure</summary>
            <MapCaller
              aeis={aeis.data?.items ?? []}
              aeisError={aeis.error}
              caller={caller}
              current={data.via === 'map' ? data.aei_id : undefined}
              onMapped={() => void resolution.reload()}
            />
          </details>
        </section>
      )}
      {configs && (
        <section className="card" aria-labelledby="stdio-configs" data-testid="stdio-configs">
          <h2 id="stdio-configs">Client configs</h2>
          <p className="muted">{configs.note}</p>
          <p>
            Each starts the stdio entry <code>bindery-mcp {configs.caller}</code>. Put your personal MCP key
            in <code>BINDERY_KEY</code> (<Link to="/callers">create one under Callers</Link>), then merge the
            snippet into the file it names.
          </p>
          <ClientFileBlocks configs={configs} />
        </section>
      )}
    </>
  );
}
