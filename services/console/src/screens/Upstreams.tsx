/**
 * Upstream MCP servers: the list (transport, status, circuit, pool, last sync, tools), a panel per
 * server (its spec and tools, "Sync now" with the sync's report, the stderr tail of its stdio
 * children, delete after a confirm step) and a form to add one over stdio or HTTP. A server that
 * requires OAuth shows the person's account on it, with Connect (the browser goes to the server's
 * authorization server and comes back here, `?server=` naming the server and `oauth=connected` or
 * `oauth_error=` saying how it went, in a sentence of the console's) and Disconnect.
 */
import { useEffect, useId, useState, type FormEvent } from 'react';
import {
  UPSTREAM_OAUTH_FAILURES,
  type CreateUpstreamServerBody,
  type UpstreamConnectAnswer,
  type UpstreamConnection,
  type UpstreamOAuthFailure,
  type UpstreamServer,
  type UpstreamServerLogs,
} from '@bindery/contracts';
import { api } from '../api.ts';
import {
  CheckField,
  NameField,
  RadioChoice,
  SelectField,
  SubmitAndClose,
  TextAreaField,
  TextField,
} from '../forms.tsx';
import { Link } from '../router.tsx';
import { ErrorMessage, Notice, Opener, PagedList, useAction, useLoad, usePaged } from '../ui.tsx';
import './editing.css';
import './sources.css';

/** What `POST /upstream-servers/{id}/sync` answers. */
interface SyncReport {
  added: string[];
  updated: string[];
  missing: string[];
  warnings: string[];
  server: UpstreamServer;
}

const when = (timestamp: string | null) =>
  timestamp === null ? 'never' : new Date(timestamp).toLocaleString();

const STATUS_TEXT: Record<UpstreamServer['status'], string> = {
  ok: 'ok',
  starting: 'starting (not synced yet)',
  failing: 'failing',
  circuit_open: 'circuit open',
  stopped: 'stopped (idle)',
  needs_connection: 'needs its owner to connect',
};

function StatusBadge({ status }: { status: UpstreamServer['status'] }) {
  const tone = status === 'ok' ? 'good' : status === 'failing' || status === 'circuit_open' ? 'bad' : '';
  return <span className={`badge status-badge ${tone}`}>{STATUS_TEXT[status]}</span>;
}

/** The circuit breaker's state, as the status tells it. */
const circuitOf = (server: UpstreamServer) =>
  server.status === 'circuit_open' ? 'open: calls fail at once until a probe succeeds' : 'closed';

function poolText(server: UpstreamServer): string {
  const running = `${server.pool.instances} running`;
  return server.shared_with.length === 0
    ? `${running}, own pool`
    : `${running}, shared with ${server.shared_with.length} other server${server.shared_with.length === 1 ? '' : 's'}`;
}

const where = (server: UpstreamServer) =>
  server.transport === 'stdio'
    ? [server.command ?? '', ...(server.args ?? [])].join(' ')
    : (server.url ?? '');

/** What the address says on arrival: the server to open, and how a Connect went. */
interface Arrival {
  server: string | null;
  connected: boolean;
  error: string | null;
}

/**
 * What the console says of a Connect that failed: a sentence of its own for each reason the
 * callback gives (never text from the address, which anyone can write into a link).
 */
function failureText(reason: string | null): string | null {
  if (reason === null) return null;
  return Object.hasOwn(UPSTREAM_OAUTH_FAILURES, reason)
    ? UPSTREAM_OAUTH_FAILURES[reason as UpstreamOAuthFailure]
    : UPSTREAM_OAUTH_FAILURES.failed;
}

/**
 * Reads `?server=`, `oauth=connected` and `oauth_error=` once, and takes the last two out of the
 * address (a reload must not announce the connection again).
 */
function useArrival(): Arrival {
  const [arrival] = useState<Arrival>(() => {
    const query = new URLSearchParams(window.location.search);
    return {
      server: query.get('server'),
      connected: query.get('oauth') === 'connected',
      error: failureText(query.get('oauth_error')),
    };
  });
  useEffect(() => {
    const query = new URLSearchParams(window.location.search);
    if (!query.has('oauth') && !query.has('oauth_error')) return;
    query.delete('oauth');
    query.delete('oauth_error');
    const rest = query.toString();
    window.history.replaceState(null, '', `${window.location.pathname}${rest === '' ? '' : `?${rest}`}`);
  }, []);
  return arrival;
}

/** Reads of the list while a connected server's first sync runs in the background (one a second). */
const SYNC_POLLS = 15;

/** The server was connected and its tools were not synced since (the sync runs in the background). */
const awaitingSync = (server: UpstreamServer) =>
  server.connection?.status === 'connected' &&
  server.connection.connected_at !== null &&
  (server.last_sync_at === null || server.last_sync_at < server.connection.connected_at);

export function Upstreams() {
  const servers = usePaged<UpstreamServer>('/api/v2/upstream-servers');
  const arrival = useArrival();
  const [selected, setSelected] = useState<string | null>(arrival.server);
  const [polls, setPolls] = useState(0);
  const detailId = useId();
  const chosen = servers.items.find((server) => server.id === selected);
  const connectedTo = arrival.connected
    ? servers.items.find((server) => server.id === arrival.server)
    : undefined;
  // Back from a Connect: the list is read again until the sync the connection started is done.
  useEffect(() => {
    if (!connectedTo || !awaitingSync(connectedTo) || polls >= SYNC_POLLS) return;
    const timer = setTimeout(() => {
      setPolls((count) => count + 1);
      servers.reload();
    }, 1000);
    return () => clearTimeout(timer);
  }, [connectedTo, polls]);
  return (
    <>
      <p className="back-link">
        <Link to="/tools">← Back to Tools</Link>
      </p>
      <h1>Upstream MCP servers</h1>
      <p className="muted">
        MCP servers the control plane runs (stdio) or reaches (HTTP): their tools become tools of kind mcp,
        synced when a server is added and whenever you ask.
      </p>
      {connectedTo && (
        <Notice>
          Connected to <strong>{connectedTo.name}</strong>
          {awaitingSync(connectedTo) ? ': its tools are being synced.' : '.'}
        </Notice>
      )}
      {arrival.error !== null && (
        <p className="error" role="alert">
          Not connected: {arrival.error}
        </p>
      )}
      <section className="card" aria-labelledby="upstream-list">
        <h2 id="upstream-list">Your servers</h2>
        <PagedList list={servers} empty="No upstream servers yet.">
          <div className="table-wrap">
            <table className="stack upstreams">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Transport</th>
                  <th scope="col">Status</th>
                  <th scope="col">Circuit</th>
                  <th scope="col">Pool</th>
                  <th scope="col">Last sync</th>
                  <th scope="col">Tools</th>
                </tr>
              </thead>
              <tbody>
                {servers.items.map((server) => (
                  <tr key={server.id} data-testid={`upstream-${server.slug}`}>
                    <td>
                      <button
                        type="button"
                        className="link-button"
                        aria-expanded={selected === server.id}
                        aria-controls={selected === server.id ? detailId : undefined}
                        onClick={() => setSelected(selected === server.id ? null : server.id)}
                      >
                        {server.name}
                      </button>
                      <div className="muted where">{where(server)}</div>
                    </td>
                    <td data-label="Transport">{server.transport}</td>
                    <td data-label="Status">
                      <StatusBadge status={server.status} />
                    </td>
                    <td data-label="Circuit">{server.status === 'circuit_open' ? 'open' : 'closed'}</td>
                    <td data-label="Pool">{poolText(server)}</td>
                    <td data-label="Last sync">{when(server.last_sync_at)}</td>
                    <td data-label="Tools" className="tool-count">
                      {server.tool_count}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </PagedList>
      </section>
      {chosen && (
        <ServerPanel
          key={chosen.id}
          id={detailId}
          initial={chosen}
          names={Object.fromEntries(servers.items.map((server) => [server.id, server.name]))}
          onChanged={() => servers.reload()}
          onDeleted={() => {
            setSelected(null);
            servers.reload();
          }}
          onClose={() => setSelected(null)}
        />
      )}
      <section className="card" aria-labelledby="new-upstream">
        <h2 id="new-upstream">Add a server</h2>
        <p className="muted">
          Adding a server starts it (or connects to it) and lists its tools at once; if that fails, the server
          is kept with its error so you can fix it and sync again.
        </p>
        <Opener label="New upstream server">
          {(close) => (
            <NewServerForm
              onClose={close}
              onCreated={(server) => {
                servers.reload();
                setSelected(server.id);
              }}
            />
          )}
        </Opener>
      </section>
    </>
  );
}

/** One server: its details, sync, log tail and delete. */
function ServerPanel({
  id,
  initial,
  names,
  onChanged,
  onDeleted,
  onClose,
}: {
  id: string;
  initial: UpstreamServer;
  /** Names of the user's servers by id (those sharing this one's pool). */
  names: Record<string, string>;
  onChanged: () => void;
  onDeleted: () => void;
  onClose: () => void;
}) {
  const path = `/api/v2/upstream-servers/${encodeURIComponent(initial.id)}`;
  const [server, setServer] = useState(initial);
  // The list read again (after a sync, a create): the panel shows the newer answer.
  useEffect(() => setServer(initial), [initial]);
  // Bumped by every sync: the log tail is read again (a sync may start a process).
  const [syncs, setSyncs] = useState(0);
  const [report, setReport] = useState<SyncReport | null>(null);
  const [syncError, setSyncError] = useState<unknown>(null);
  const [syncing, setSyncing] = useState(false);
  const headingId = `${id}-heading`;

  const sync = async () => {
    setSyncing(true);
    setReport(null);
    try {
      const answer = await api<SyncReport>('POST', `${path}/sync`);
      setReport(answer);
      setServer(answer.server);
      setSyncError(null);
    } catch (failure) {
      setSyncError(failure);
      // The failure is recorded on the server (status, last_error): show it.
      try {
        setServer(await api<UpstreamServer>('GET', path));
      } catch {
        // The sync's error is already shown.
      }
    } finally {
      setSyncing(false);
      setSyncs((count) => count + 1);
      onChanged();
    }
  };

  return (
    <section className="card server-panel" id={id} aria-labelledby={headingId}>
      <div className="section-head">
        <h2 id={headingId}>{server.name}</h2>
        <button type="button" className="secondary small" onClick={onClose}>
          Close panel
        </button>
      </div>
      <dl className="facts">
        <dt>Transport</dt>
        <dd>{server.transport}</dd>
        {server.transport === 'stdio' ? (
          <>
            <dt>Command</dt>
            <dd>
              <code>{where(server)}</code>
            </dd>
            {server.cwd && (
              <>
                <dt>Working directory</dt>
                <dd>
                  <code>{server.cwd}</code>
                </dd>
              </>
            )}
            {server.env && Object.keys(server.env).length > 0 && (
              <>
                <dt>Environment</dt>
                <dd>
                  {Object.entries(server.env).map(([name, value]) => (
                    <div key={name}>
                      <code>
                        {name}={value}
                      </code>
                    </div>
                  ))}
                </dd>
              </>
            )}
          </>
        ) : (
          <>
            <dt>URL</dt>
            <dd>
              <code>{server.url}</code>
            </dd>
            {server.headers && Object.keys(server.headers).length > 0 && (
              <>
                <dt>Headers</dt>
                <dd>
                  {Object.entries(server.headers).map(([name, value]) => (
                    <div key={name}>
                      <code>
                        {name}: {value}
                      </code>
                    </div>
                  ))}
                </dd>
              </>
            )}
            {server.auth === 'oauth' && server.connection && (
              <AccountFact
                path={path}
                name={server.name}
                connection={server.connection}
                onChanged={(next) => {
                  setServer(next);
                  onChanged();
                }}
              />
            )}
          </>
        )}
        <dt>Status</dt>
        <dd data-testid="server-status">
          <StatusBadge status={server.status} />
        </dd>
        {server.last_error !== null && (
          <>
            <dt>Last error</dt>
            <dd className="warn" data-testid="server-last-error">
              {server.last_error}
            </dd>
          </>
        )}
        <dt>Circuit</dt>
        <dd>{circuitOf(server)}</dd>
        <dt>Last sync</dt>
        <dd>{when(server.last_sync_at)}</dd>
        <dt>Pool</dt>
        <dd>
          {server.pool.instances} running · {server.pool.in_flight} calls in flight · {server.pool.restarts}{' '}
          restarts
          {server.shared_with.length > 0 && (
            <div className="muted">
              One pool serves this server and{' '}
              {server.shared_with.map((other) => names[other] ?? other).join(', ')} (same spec).
            </div>
          )}
        </dd>
        <dt>Sessions</dt>
        <dd>
          {server.session_mode === 'shared'
            ? 'shared by every caller'
            : 'one upstream session per MCP session'}
        </dd>
        <dt>Limits</dt>
        <dd>
          {server.limits.max_instances} instance{server.limits.max_instances === 1 ? '' : 's'} ·{' '}
          {server.limits.concurrent_calls} calls each · {server.limits.call_timeout_ms / 1000} s per call ·
          idle after {server.limits.idle_timeout_ms / 1000} s
        </dd>
        <dt>Tools taken</dt>
        <dd>{server.expose_tools.length === 0 ? 'all' : server.expose_tools.join(', ')}</dd>
        <dt>Prefix</dt>
        <dd>
          <code>{server.slug}</code>
        </dd>
      </dl>
      {server.warnings.length > 0 && (
        <>
          <h3>Warnings of the last sync</h3>
          <ul className="warnings">
            {server.warnings.map((warning) => (
              <li key={warning}>{warning}</li>
            ))}
          </ul>
        </>
      )}
      <h3>Tools ({server.tool_count})</h3>
      {server.tools.length === 0 ? (
        <p className="muted">No tools synced.</p>
      ) : (
        <ul className="chips" aria-label={`Tools of ${server.name}`}>
          {server.tools.map((tool) => (
            <li key={tool.adi_id}>
              <code>{tool.name}</code>
              {tool.name !== tool.upstream_name && <span className="muted"> ({tool.upstream_name})</span>}
              {tool.missing && <span className="badge bad">missing upstream</span>}
            </li>
          ))}
        </ul>
      )}
      <div className="actions">
        <button type="button" onClick={() => void sync()} disabled={syncing}>
          {syncing ? 'Syncing…' : 'Sync now'}
        </button>
      </div>
      <ErrorMessage error={syncError} />
      {report && <SyncOutcome report={report} />}
      <LogTail path={`${path}/logs`} transport={server.transport} syncs={syncs} />
      <DeleteServer path={path} name={server.name} onDeleted={onDeleted} />
    </section>
  );
}

const CONNECTION_TEXT: Record<UpstreamConnection['status'], string> = {
  not_connected: 'Not connected',
  connected: 'Connected',
  needs_consent: 'Needs your consent again',
};

/**
 * The person's account on a server that requires OAuth: the connection in words, and Connect (the
 * browser leaves for the server's authorization server, which sends it back here), Connect again
 * (a scope is missing: asked for with those granted) or Disconnect (the tokens are revoked).
 */
function AccountFact({
  path,
  name,
  connection,
  onChanged,
}: {
  path: string;
  name: string;
  connection: UpstreamConnection;
  onChanged: (server: UpstreamServer) => void;
}) {
  const { busy, error, run } = useAction();
  const [revoked, setRevoked] = useState<boolean | null>(null);
  // Set once the browser is sent away: the buttons stay off until the page is gone.
  const [leaving, setLeaving] = useState(false);
  const connect = () =>
    run(async () => {
      setRevoked(null);
      const answer = await api<UpstreamConnectAnswer>('POST', `${path}/oauth/connect`);
      // The answer set the cookie that binds the flow to this browser, which leaves now.
      setLeaving(true);
      window.location.assign(answer.authorization_url);
    });
  const disconnect = () =>
    run(async () => {
      const answer = await api<{ revoked: boolean }>('DELETE', `${path}/oauth/connection`);
      setRevoked(answer.revoked);
      onChanged(await api<UpstreamServer>('GET', path));
    });
  const status = connection.status;
  return (
    <>
      <dt>Account</dt>
      <dd data-testid="server-account">
        <div className={status === 'connected' ? undefined : 'warn'}>
          <strong>{CONNECTION_TEXT[status]}</strong>
          {status === 'not_connected' && ': calls of its tools fail until you connect your account'}
          {status === 'needs_consent' && (
            <>
              : the server asks for{' '}
              {connection.required_scope === null ? (
                'a scope it did not name'
              ) : (
                <code>{connection.required_scope}</code>
              )}
              , which your account has not granted
            </>
          )}
          .
        </div>
        {status !== 'not_connected' && (
          <div className="muted">
            Scope granted: {connection.scope === null ? 'not said' : <code>{connection.scope}</code>} · token{' '}
            {connection.expires_at === null
              ? 'without an expiry'
              : `expires ${when(connection.expires_at)} (renewed on its own)`}
            {connection.issuer !== null && (
              <>
                {' '}
                · issued by <code>{connection.issuer}</code>
              </>
            )}
          </div>
        )}
        <div className="actions">
          {status !== 'connected' && (
            <button type="button" className="small" onClick={() => void connect()} disabled={busy || leaving}>
              {busy || leaving ? 'Connecting…' : status === 'needs_consent' ? 'Connect again' : 'Connect'}
            </button>
          )}
          {status !== 'not_connected' && (
            <button
              type="button"
              className="secondary small"
              onClick={() => void disconnect()}
              disabled={busy || leaving}
            >
              Disconnect
            </button>
          )}
        </div>
        {revoked !== null && status === 'not_connected' && (
          <Notice>
            Disconnected from {name}:{' '}
            {revoked
              ? 'its authorization server revoked your tokens.'
              : 'your tokens were deleted here (its authorization server did not confirm their revocation).'}
          </Notice>
        )}
        <ErrorMessage error={error} />
      </dd>
    </>
  );
}

function SyncOutcome({ report }: { report: SyncReport }) {
  const rows: [string, string[]][] = [
    ['Added', report.added],
    ['Updated', report.updated],
    ['Missing upstream', report.missing],
  ];
  const nothing = rows.every(([, names]) => names.length === 0);
  return (
    <div className="sync-outcome" role="status" aria-label="Sync outcome">
      <p>
        <strong>Synced.</strong>{' '}
        {nothing
          ? `No change: ${report.server.tool_count} tool${report.server.tool_count === 1 ? '' : 's'}.`
          : `${report.server.tool_count} tool${report.server.tool_count === 1 ? '' : 's'} now.`}
      </p>
      {!nothing && (
        <dl className="facts">
          {rows
            .filter(([, names]) => names.length > 0)
            .map(([label, names]) => (
              <div key={label} className="fact-row">
                <dt>{label}</dt>
                <dd>{names.join(', ')}</dd>
              </div>
            ))}
        </dl>
      )}
      {report.warnings.length > 0 && (
        <ul className="warnings">
          {report.warnings.map((warning) => (
            <li key={warning}>{warning}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A server's stderr tail (`GET /api/v2/upstream-servers/{id}/logs`), read again when `syncs` changes. */
export function LogTail({
  path,
  transport,
  syncs,
}: {
  path: string;
  transport: UpstreamServer['transport'];
  syncs: number;
}) {
  const logs = useLoad(() => api<UpstreamServerLogs>('GET', path), [path, syncs]);
  const text = (logs.data?.lines ?? [])
    .map((line) => `${new Date(line.at).toLocaleTimeString()}  ${line.text}`)
    .join('\n');
  return (
    <div className="log-tail">
      <div className="section-head">
        <h3>Log tail (stderr)</h3>
        <button
          type="button"
          className="secondary small"
          onClick={() => void logs.reload()}
          disabled={logs.loading}
        >
          {logs.loading ? 'Loading…' : 'Refresh log'}
        </button>
      </div>
      <ErrorMessage error={logs.error} />
      {logs.data && logs.data.lines.length === 0 && (
        <p className="muted">
          {transport === 'stdio'
            ? 'Nothing written to stderr by this server’s processes in this control plane yet.'
            : 'An HTTP server has no stderr here: see the server’s own logs.'}
        </p>
      )}
      {logs.data && logs.data.lines.length > 0 && (
        <pre tabIndex={0} aria-label="Log lines" data-testid="log-lines">
          {text}
        </pre>
      )}
      {logs.data && logs.data.dropped > 0 && (
        <p className="muted">{logs.data.dropped} older lines were dropped.</p>
      )}
    </div>
  );
}

function DeleteServer({ path, name, onDeleted }: { path: string; name: string; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const remove = async () => {
    setBusy(true);
    try {
      await api<null>('DELETE', path);
      setError(null);
      onDeleted();
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return (
    <div className="delete-server">
      {!confirming ? (
        <button type="button" className="danger" onClick={() => setConfirming(true)}>
          Delete server
        </button>
      ) : (
        <div className="confirm" role="group" aria-label={`Confirm: delete ${name}`}>
          <p>
            Its processes stop. Its tools stay, but calling them fails until they are removed or the server is
            added again.
          </p>
          <div className="actions">
            <button type="button" className="danger" onClick={() => void remove()} disabled={busy}>
              {busy ? 'Deleting…' : `Delete ${name}`}
            </button>
            <button type="button" className="secondary" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      <ErrorMessage error={error} />
    </div>
  );
}

/** Non-blank lines of a textarea. */
const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** `NAME=value` (env) or `Name: value` (headers) lines as a record; a line without it is named. */
function pairs(text: string, separator: '=' | ':', what: string): Record<string, string> {
  const record: Record<string, string> = {};
  for (const line of lines(text)) {
    const at = line.indexOf(separator);
    if (at <= 0)
      throw new Error(`${what}: "${line}" is not ${separator === '=' ? 'NAME=value' : 'Name: value'}`);
    record[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return record;
}

/** The OAuth settings the form was given (only those filled in). */
function oauthSettings(clientId: string, clientSecret: string, scope: string) {
  return {
    ...(clientId.trim() !== '' && { client_id: clientId.trim() }),
    ...(clientSecret.trim() !== '' && { client_secret: clientSecret.trim() }),
    ...(scope.trim() !== '' && { scope: scope.trim().split(/\s+/).join(' ') }),
  };
}

function NewServerForm({
  onCreated,
  onClose,
}: {
  onCreated: (server: UpstreamServer) => void;
  onClose: () => void;
}) {
  const [transport, setTransport] = useState<'stdio' | 'http'>('stdio');
  const [name, setName] = useState('');
  const [command, setCommand] = useState('');
  const [args, setArgs] = useState('');
  const [env, setEnv] = useState('');
  const [cwd, setCwd] = useState('');
  const [url, setUrl] = useState('');
  const [headers, setHeaders] = useState('');
  const [oauth, setOAuth] = useState(false);
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [scope, setScope] = useState('');
  const [exposeTools, setExposeTools] = useState('');
  const [sessionMode, setSessionMode] = useState<'shared' | 'per_session'>('shared');
  const { busy, error, setError, run } = useAction();
  const [created, setCreated] = useState<UpstreamServer | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    let body: CreateUpstreamServerBody;
    try {
      const expose = exposeTools
        .split(/[,\n]/)
        .map((item) => item.trim())
        .filter((item) => item !== '');
      const common = {
        name: name.trim(),
        ...(expose.length > 0 && { expose_tools: expose }),
        session_mode: sessionMode,
      };
      body =
        transport === 'stdio'
          ? {
              ...common,
              transport: 'stdio',
              command: command.trim(),
              args: args.split('\n').filter((line) => line.trim() !== ''),
              env: pairs(env, '=', 'Environment'),
              ...(cwd.trim() !== '' && { cwd: cwd.trim() }),
            }
          : {
              ...common,
              transport: 'http',
              url: url.trim(),
              headers: pairs(headers, ':', 'Headers'),
              ...(oauth && { auth: 'oauth', oauth: oauthSettings(clientId, clientSecret, scope) }),
            };
    } catch (failure) {
      setError(failure);
      return;
    }
    setCreated(null);
    await run(async () => {
      const server = await api<UpstreamServer>('POST', '/api/v2/upstream-servers', { body });
      setCreated(server);
      setName('');
      onCreated(server);
    });
  };

  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="New upstream server">
      <RadioChoice
        legend="Transport"
        value={transport}
        onChange={setTransport}
        options={[
          { value: 'stdio', label: 'stdio: a command the control plane runs' },
          { value: 'http', label: 'HTTP: a Streamable HTTP (or SSE) URL' },
        ]}
      />
      <NameField label="Server name" value={name} onChange={setName} />
      {transport === 'stdio' ? (
        <>
          <TextField
            label="Command"
            hint="The executable; the operator allows commands with UPSTREAM_STDIO_COMMANDS."
            value={command}
            onChange={setCommand}
            required
            maxLength={1024}
            placeholder="npx"
          />
          <TextAreaField
            label="Arguments"
            optional
            hint="One per line, as written (no shell quoting)."
            className="mono"
            value={args}
            rows={3}
            onChange={setArgs}
            literal={false}
            spellCheck={false}
          />
          <TextAreaField
            label="Environment"
            optional
            hint={
              <>
                One <code>NAME=value</code> per line; a value may reference a secret:{' '}
                <code>{'{{secret.NAME}}'}</code>.
              </>
            }
            className="mono"
            value={env}
            rows={2}
            onChange={setEnv}
            literal={false}
            spellCheck={false}
          />
          <TextField label="Working directory" optional value={cwd} onChange={setCwd} maxLength={1024} />
        </>
      ) : (
        <>
          <TextField
            label="URL"
            hint="The server’s MCP endpoint, such as https://example.com/mcp."
            type="url"
            value={url}
            onChange={setUrl}
            required
            maxLength={2048}
          />
          <TextAreaField
            label="Headers"
            optional
            hint={
              <>
                One <code>Name: value</code> per line; a value may reference a secret:{' '}
                <code>{'Bearer {{secret.NAME}}'}</code>.
              </>
            }
            className="mono"
            value={headers}
            rows={2}
            onChange={setHeaders}
            literal={false}
            spellCheck={false}
          />
          <CheckField checked={oauth} onChange={setOAuth}>
            Requires OAuth: each person connects their own account to it
          </CheckField>
          {oauth && (
            <>
              <TextField
                label="Client ID"
                optional
                hint="A client registered with the server’s authorization server; empty: Bindery registers itself."
                value={clientId}
                onChange={setClientId}
                maxLength={512}
              />
              <TextField
                label="Client secret"
                optional
                hint={
                  <>
                    That client’s secret, as a secret reference: <code>{'{{secret.NAME}}'}</code>.
                  </>
                }
                className="mono"
                value={clientSecret}
                onChange={setClientSecret}
                placeholder="{{secret.NAME}}"
              />
              <TextField
                label="Scope"
                optional
                hint="The scopes to ask for, separated by spaces; empty: those the server names."
                value={scope}
                onChange={setScope}
                maxLength={1024}
              />
            </>
          )}
        </>
      )}
      <TextField
        label="Tools to take"
        optional
        hint="Names or globs such as search_*, comma separated; empty takes all."
        value={exposeTools}
        onChange={setExposeTools}
      />
      <SelectField
        label="Sessions"
        value={sessionMode}
        onChange={setSessionMode}
        options={[
          { value: 'shared', label: 'shared: every caller’s calls share the pool' },
          { value: 'per_session', label: 'per session: each MCP session gets its own upstream session' },
        ]}
      />
      <ErrorMessage error={error} />
      {created && created.auth === 'oauth' && created.connection?.status !== 'connected' ? (
        <Notice>
          Added <strong>{created.name}</strong>: it requires OAuth. Press Connect in its panel to connect your
          account, and its tools are listed.
        </Notice>
      ) : (
        created && (
          <Notice>
            Added <strong>{created.name}</strong>: {STATUS_TEXT[created.status]}, {created.tool_count} tool
            {created.tool_count === 1 ? '' : 's'}
            {created.last_error !== null && ` (${created.last_error})`}.
          </Notice>
        )
      )}
      <SubmitAndClose
        label="Add server"
        busyLabel="Adding…"
        busy={busy}
        disabled={busy || name.trim() === ''}
        onClose={onClose}
      />
    </form>
  );
}
