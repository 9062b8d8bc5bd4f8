/**
 * The sidebar: a terminal on your own contexts, open beside any screen. Reads answer at once;
 * a write (yours or an agent's) becomes a proposal listed under the terminal with its change (each
 * place before and after, and the RFC 6902 patch) and the table's rules' verdicts, for you to
 * approve or reject. Proposals arrive live (`/events`, read with fetch since the admin token goes
 * in a header). The session's token, shown once when a session starts, lets an agent drive it.
 */
import { useCallback, useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import {
  PROPOSAL_VIEW_PLACES,
  type Proposal,
  type SidebarCommandAnswer,
  type TableSummary,
} from '@bindery/contracts';
import { api, ApiError, storedToken } from './api.ts';
import { parseEvents } from './live-audit.ts';
import { CopyBlock, ErrorMessage } from './ui.tsx';
import './sidebar.css';

const SESSION_KEY = 'bindery.sidebarSession';
const HISTORY_KEY = 'bindery.sidebarHistory';
const MAX_LINES = 400;
const VERBS = [
  'help',
  'tables',
  'use',
  'cd',
  'pwd',
  'ls',
  'cat',
  'query',
  'schema',
  'set',
  'merge',
  'add',
  'rm',
  'mv',
  'cp',
  'undo',
  'proposals',
];

interface Line {
  kind: 'input' | 'output' | 'error';
  text: string;
}

interface Session {
  id: string;
  status: 'active' | 'paused' | 'ended';
  /** The agent's token: known only to the tab that started the session. */
  token?: string;
}

async function startSession(tableId: string | undefined): Promise<Session> {
  const created = await api<{ id: string; token: string }>('POST', '/api/v2/sidebar/sessions', {
    body: tableId === undefined ? {} : { table_id: tableId },
  });
  // Kept like the admin token (this tab only), so the agent's token stays at hand until it ends.
  sessionStorage.setItem(SESSION_KEY, JSON.stringify({ id: created.id, token: created.token }));
  return { id: created.id, status: 'active', token: created.token };
}

/** The session this tab started, and its token. */
function keptSession(): { id: string; token: string } | null {
  try {
    const kept = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as {
      id?: unknown;
      token?: unknown;
    } | null;
    return typeof kept?.id === 'string' && typeof kept.token === 'string'
      ? { id: kept.id, token: kept.token }
      : null;
  } catch {
    return null;
  }
}

/**
 * Ends the session this tab started (logging out): its token must not outlive the person's
 * sign-in. Best effort: a token already refused cannot end it, and it expires anyway.
 */
export async function endKeptSession(): Promise<void> {
  const kept = keptSession();
  const token = storedToken();
  sessionStorage.removeItem(SESSION_KEY);
  if (kept === null || token === null) return;
  // The token given outright: a refusal here must not log out again.
  await api('PATCH', `/api/v2/sidebar/sessions/${encodeURIComponent(kept.id)}`, {
    token,
    body: { status: 'ended' },
  }).catch(() => undefined);
}

/** The table the current screen shows, if it is a table's page. */
function tableOnScreen(path: string): string | undefined {
  const match = /^\/data\/tables\/([^/]+)$/u.exec(path);
  return match ? decodeURIComponent(match[1]!) : undefined;
}

export function Sidebar({ path, onClose }: { path: string; onClose: () => void }) {
  const [session, setSession] = useState<Session | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [lines, setLines] = useState<Line[]>([
    { kind: 'output', text: 'Type help for the commands. Writes become proposals you approve below.' },
  ]);
  const [proposals, setProposals] = useState<Proposal[]>([]);
  const [live, setLive] = useState(false);

  const print = useCallback((added: Line[]) => {
    setLines((current) => [...current, ...added].slice(-MAX_LINES));
  }, []);

  const run = useCallback(
    async (sessionId: string, command: string, echo = true) => {
      if (echo) print([{ kind: 'input', text: command }]);
      try {
        const answer = await api<SidebarCommandAnswer>(
          'POST',
          `/api/v2/sidebar/sessions/${encodeURIComponent(sessionId)}/commands`,
          { body: { command } },
        );
        print([{ kind: answer.error ? 'error' : 'output', text: answer.output }]);
      } catch (failure) {
        print([{ kind: 'error', text: failure instanceof Error ? failure.message : String(failure) }]);
        if (failure instanceof ApiError && failure.status === 409) setSession(null);
      }
    },
    [print],
  );

  // Open the tab's session, or start one (in the table on screen, if any).
  useEffect(() => {
    if (session !== null) return;
    let cancelled = false;
    const kept = keptSession();
    const open = async (): Promise<Session> => {
      if (kept !== null) {
        try {
          const found = await api<Session & { expires_at: string }>(
            'GET',
            `/api/v2/sidebar/sessions/${encodeURIComponent(kept.id)}`,
          );
          // An ended or expired session is left for a new one.
          if (found.status !== 'ended' && Date.parse(found.expires_at) > Date.now()) {
            return { ...found, token: kept.token };
          }
        } catch (failure) {
          if (!(failure instanceof ApiError) || failure.status !== 404) throw failure;
        }
      }
      return startSession(tableOnScreen(path));
    };
    open().then(
      (opened) => {
        if (!cancelled) setSession(opened);
      },
      (failure: unknown) => !cancelled && setError(failure),
    );
    return () => {
      cancelled = true;
    };
  }, [session, path]);

  // The session's proposals, live (one stream per session, whatever else of it changes).
  const sessionId = session?.id;
  useEffect(() => {
    if (sessionId === undefined) return;
    const controller = new AbortController();
    let retry: number | undefined;
    const follow = async () => {
      try {
        const response = await fetch(`/api/v2/sidebar/sessions/${encodeURIComponent(sessionId)}/events`, {
          headers: { accept: 'text/event-stream', authorization: `Bearer ${storedToken() ?? ''}` },
          cache: 'no-store',
          signal: controller.signal,
        });
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        setLive(true);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const parsed = parseEvents(buffer + value);
          buffer = parsed.rest;
          for (const event of parsed.events) {
            if (event.event !== 'proposals') continue;
            const body = JSON.parse(event.data) as { session: Session; items: Proposal[] };
            setProposals(body.items);
            setSession((current) =>
              current && current.status !== body.session.status
                ? { ...current, status: body.session.status }
                : current,
            );
          }
        }
      } catch {
        // Reconnects below, unless the sidebar closed.
      }
      setLive(false);
      if (!controller.signal.aborted) retry = window.setTimeout(() => void follow(), 2_000);
    };
    void follow();
    return () => {
      controller.abort();
      window.clearTimeout(retry);
    };
  }, [sessionId]);

  const setStatus = async (status: Session['status']) => {
    if (!session) return;
    try {
      const updated = await api<Session>(
        'PATCH',
        `/api/v2/sidebar/sessions/${encodeURIComponent(session.id)}`,
        {
          body: { status },
        },
      );
      if (status === 'ended') {
        sessionStorage.removeItem(SESSION_KEY);
        setSession(null);
        setProposals([]);
        print([{ kind: 'output', text: 'Session ended; a new one starts.' }]);
      } else setSession({ ...session, status: updated.status });
    } catch (failure) {
      setError(failure);
    }
  };

  const pending = proposals.filter((p) => p.status === 'pending' || p.status === 'blocked');
  const decided = proposals.filter((p) => p.status !== 'pending' && p.status !== 'blocked').slice(0, 5);
  return (
    <aside className="sidebar" aria-label="Sidebar">
      <header className="sidebar-head">
        <h2>Sidebar</h2>
        <span className={live ? 'badge live' : 'badge'}>{live ? 'live' : 'connecting'}</span>
        {session && (
          <span className="muted small" title="Sidebar session">
            {session.status === 'paused' ? 'agent paused' : ''}
          </span>
        )}
        <button type="button" className="secondary small" onClick={onClose}>
          Close
        </button>
      </header>
      <ErrorMessage error={error} />
      {session && (
        <>
          <Terminal lines={lines} onCommand={(command) => run(session.id, command)} />
          <section className="proposals" aria-label="Proposals">
            <h3>Waiting for you ({pending.length})</h3>
            {pending.length === 0 && <p className="muted small">No write waits for a verdict.</p>}
            {pending.map((p) => (
              <ProposalCard key={p.id} proposal={p} print={print} />
            ))}
            {decided.length > 0 && (
              <details>
                <summary>Recently decided</summary>
                {decided.map((p) => (
                  <p key={p.id} className="small">
                    <code>{p.command}</code> — {p.status}
                    {p.applied_version !== null && ` at version ${p.applied_version}`}
                    {p.note && `: ${p.note}`}
                  </p>
                ))}
              </details>
            )}
          </section>
          <AgentPanel session={session} onStatus={setStatus} />
        </>
      )}
    </aside>
  );
}

function Terminal({ lines, onCommand }: { lines: Line[]; onCommand: (command: string) => Promise<void> }) {
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const history = useRef<string[]>(JSON.parse(sessionStorage.getItem(HISTORY_KEY) ?? '[]') as string[]);
  const cursor = useRef(history.current.length);
  const tables = useRef<string[] | null>(null);
  const screen = useRef<HTMLDivElement>(null);
  useEffect(() => {
    screen.current?.scrollTo({ top: screen.current.scrollHeight });
  }, [lines]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const command = input.trim();
    if (command === '' || busy) return;
    history.current = [...history.current.filter((h) => h !== command), command].slice(-100);
    sessionStorage.setItem(HISTORY_KEY, JSON.stringify(history.current));
    cursor.current = history.current.length;
    setInput('');
    setBusy(true);
    try {
      await onCommand(command);
    } finally {
      setBusy(false);
    }
  };

  const complete = async () => {
    const words = input.split(/\s+/);
    if (words.length === 1) {
      const matches = VERBS.filter((v) => v.startsWith(words[0]!));
      if (matches.length === 1) setInput(`${matches[0]} `);
      return;
    }
    if (words[0] === 'use' && words.length === 2) {
      tables.current ??= (await api<{ items: TableSummary[] }>('GET', '/api/v2/tables?limit=200')).items.map(
        (t) => t.name,
      );
      const matches = tables.current.filter((name) => name.startsWith(words[1]!));
      if (matches.length === 1) setInput(`use ${matches[0]} `);
    }
  };

  const onKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'ArrowUp' || event.key === 'ArrowDown') {
      event.preventDefault();
      const next = cursor.current + (event.key === 'ArrowUp' ? -1 : 1);
      cursor.current = Math.max(0, Math.min(history.current.length, next));
      setInput(history.current[cursor.current] ?? '');
    } else if (event.key === 'Tab') {
      event.preventDefault();
      void complete();
    }
  };

  return (
    <div className="terminal">
      <div
        className="terminal-screen"
        ref={screen}
        role="log"
        aria-live="polite"
        aria-label="Terminal output"
      >
        {lines.map((line, i) => (
          <pre key={i} className={`terminal-${line.kind}`}>
            {line.kind === 'input' ? `$ ${line.text}` : line.text}
          </pre>
        ))}
      </div>
      <form onSubmit={submit} className="terminal-input">
        <span aria-hidden="true">$</span>
        <input
          aria-label="Command"
          value={input}
          onChange={(event) => setInput(event.target.value)}
          onKeyDown={onKey}
          spellCheck={false}
          autoCapitalize="off"
          autoComplete="off"
          disabled={busy}
          placeholder="use TABLE /path, then ls, query, set…"
        />
      </form>
    </div>
  );
}

function ProposalCard({ proposal: p, print }: { proposal: Proposal; print: (lines: Line[]) => void }) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const broken = p.verdicts.filter((v) => !v.ok);
  const decide = async (verdict: 'approve' | 'reject') => {
    setBusy(true);
    try {
      const decided = await api<Proposal>(
        'POST',
        `/api/v2/sidebar/proposals/${encodeURIComponent(p.id)}/${verdict}`,
        {
          body: note === '' ? {} : { note },
        },
      );
      print([
        {
          kind: 'output',
          text:
            decided.status === 'applied'
              ? `${p.command}: applied at version ${decided.applied_version}`
              : `${p.command}: rejected`,
        },
      ]);
      setError(null);
    } catch (failure) {
      setError(failure);
      if (failure instanceof ApiError && failure.status === 409) {
        print([{ kind: 'error', text: failure.message }]);
      }
    } finally {
      setBusy(false);
    }
  };
  return (
    <article className={`proposal ${p.status}`} aria-label={`Proposal ${p.command}`}>
      <header>
        <code>{p.command}</code>
        <span className="muted small">
          by {p.proposed_by === 'agent' ? 'the agent' : 'you'} · {p.table_name} version {p.base_version}
        </span>
      </header>
      <table className="diff">
        <thead>
          <tr>
            <th scope="col">Path</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {p.view.map((place) => (
            <tr key={place.path}>
              <td>
                <code>{place.path || '/'}</code>
              </td>
              <td className="before">
                {'before' in place ? <pre>{JSON.stringify(place.before, null, 2)}</pre> : <em>none</em>}
              </td>
              <td className="after">
                {'after' in place ? <pre>{JSON.stringify(place.after, null, 2)}</pre> : <em>removed</em>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {p.view.length >= PROPOSAL_VIEW_PLACES && (
        <p className="warn small">
          Only the first {PROPOSAL_VIEW_PLACES} places are shown: the patch below has all {p.patch.length}{' '}
          operations.
        </p>
      )}
      <details>
        <summary>Patch (RFC 6902, {p.patch.length} operations)</summary>
        <pre>{JSON.stringify(p.patch, null, 2)}</pre>
      </details>
      {p.verdicts.length > 0 && (
        <ul className="verdicts" aria-label="Rules">
          {p.verdicts.map((v, i) => (
            <li key={i} className={v.ok ? 'ok' : 'broken'}>
              {v.ok ? '✓' : '✗'} {v.rule}
              {v.path !== undefined && ` ${v.path}`}: {v.message}
            </li>
          ))}
        </ul>
      )}
      <ErrorMessage error={error} />
      {p.status === 'blocked' ? (
        <p className="warn small">
          Blocked by {broken.map((v) => v.rule).join(', ')}: it cannot be approved.
        </p>
      ) : (
        <div className="decide">
          <input
            aria-label="Note for the agent"
            placeholder="Note (optional)"
            value={note}
            onChange={(event) => setNote(event.target.value)}
          />
          <button type="button" disabled={busy} onClick={() => void decide('approve')}>
            Approve
          </button>
          <button type="button" className="secondary" disabled={busy} onClick={() => void decide('reject')}>
            Reject
          </button>
        </div>
      )}
    </article>
  );
}

function AgentPanel({
  session,
  onStatus,
}: {
  session: Session;
  onStatus: (status: Session['status']) => void;
}) {
  return (
    <details className="agent">
      <summary>Let an agent work here</summary>
      {session.token ? (
        <>
          <p className="small">
            An agent drives this session with its token; its writes wait here for your verdict. The token is
            shown in this tab only, and ends with the session.
          </p>
          <CopyBlock
            label="For bindery-mcp --sidebar"
            text={`BINDERY_CONTROL_PLANE_URL=${window.location.origin} BINDERY_SIDEBAR_SESSION=${session.id} BINDERY_SIDEBAR_TOKEN=${session.token} bindery-mcp --sidebar`}
          />
        </>
      ) : (
        <p className="small">
          This session's token was shown when it started. End it to start one with a new token.
        </p>
      )}
      <p className="decide">
        {session.status === 'paused' ? (
          <button type="button" className="secondary small" onClick={() => onStatus('active')}>
            Resume the agent
          </button>
        ) : (
          <button type="button" className="secondary small" onClick={() => onStatus('paused')}>
            Pause the agent
          </button>
        )}
        <button type="button" className="secondary small" onClick={() => onStatus('ended')}>
          End the session
        </button>
      </p>
    </details>
  );
}
