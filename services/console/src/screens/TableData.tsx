/**
 * A table's page: its data as a read-only tree, and an editor for the whole document (a textarea
 * checked as JSON before anything is sent). A save carries the ETag the edit started from as
 * If-Match, so a table changed meanwhile is refused (412) and never overwritten: the page says so
 * with the server's message and offers to reload, keeping the unsaved text to copy.
 */
import { useCallback, useEffect, useMemo, useState, type FormEvent } from 'react';
import type { Table, TableRules, TableSummary } from '@bindery/contracts';
import { api, ApiError } from '../api.ts';
import { Link } from '../router.tsx';
import { checkJson, JsonText, pretty } from '../json-text.tsx';
import { CopyBlock, ErrorMessage, JsonTree, Notice, useAction, useLoad } from '../ui.tsx';
import './editing.css';

interface Loaded {
  table: Table;
  /** The answer's ETag (`"<version>"`): what a save sends as If-Match. */
  etag: string;
}

async function loadTable(id: string): Promise<Loaded> {
  const seen: { etag: string | null } = { etag: null };
  const table = await api<Table>('GET', `/api/v2/tables/${encodeURIComponent(id)}`, {
    onHeaders: (headers) => (seen.etag = headers.get('etag')),
  });
  return { table, etag: seen.etag ?? `"${table.version}"` };
}

/** The text as a table's data, or why it cannot be. */
const check = (text: string) =>
  checkJson(text, { message: 'Empty: a table holds a JSON value ({} at least).' });

/** A refusal because the table moved on since the edit began. */
const isConflict = (error: unknown) =>
  error instanceof ApiError && (error.status === 412 || error.status === 409);

export function TableView({ id }: { id: string }) {
  const [current, setCurrent] = useState<Loaded | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const refresh = useCallback(async (): Promise<Loaded | null> => {
    try {
      const loaded = await loadTable(id);
      setCurrent(loaded);
      setLoadError(null);
      return loaded;
    } catch (failure) {
      setLoadError(failure);
      return null;
    }
  }, [id]);
  useEffect(() => {
    setCurrent(null);
    void refresh();
  }, [refresh]);

  const table = current?.table;
  return (
    <>
      <p>
        <Link to="/data">← Data</Link>
      </p>
      <h1>{table ? `Table ${table.name}` : 'Table'}</h1>
      <ErrorMessage error={loadError} />
      {current && table && (
        <>
          <section className="card">
            <p className="muted">
              {table.id} · version {table.version}
            </p>
            <div className="json-tree" aria-label="Table data">
              <JsonTree value={table.data} />
            </div>
          </section>
          <DataEditor key={table.id} current={current} refresh={refresh} />
          <RulesEditor key={`rules-${table.id}`} tableId={table.id} />
        </>
      )}
    </>
  );
}

function DataEditor({ current, refresh }: { current: Loaded; refresh: () => Promise<Loaded | null> }) {
  /** The version the edit started from: its ETag goes with the save. */
  const [base, setBase] = useState<Loaded | null>(null);
  const [draft, setDraft] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [conflict, setConflict] = useState<unknown>(null);
  /** Text a conflict kept from being saved, offered to copy after the reload. */
  const [unsaved, setUnsaved] = useState<string | null>(null);
  const [saved, setSaved] = useState<TableSummary | null>(null);
  const [busy, setBusy] = useState(false);
  const checked = useMemo(() => (base === null ? null : check(draft)), [base, draft]);
  const original = useMemo(() => (base === null ? null : pretty(base.table.data)), [base]);

  const start = (from: Loaded) => {
    setBase(from);
    setDraft(pretty(from.table.data));
    setError(null);
    setConflict(null);
    setSaved(null);
  };
  const stop = () => {
    setBase(null);
    setDraft('');
    setError(null);
    setConflict(null);
    setUnsaved(null);
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    if (base === null || checked === null || !checked.ok || conflict !== null) return;
    setBusy(true);
    try {
      const summary = await api<TableSummary>(
        'PUT',
        `/api/v2/tables/${encodeURIComponent(base.table.id)}/data`,
        {
          body: checked.value,
          headers: { 'if-match': base.etag },
        },
      );
      stop();
      setSaved(summary);
      await refresh();
    } catch (failure) {
      if (isConflict(failure)) setConflict(failure);
      else setError(failure);
    } finally {
      setBusy(false);
    }
  };
  const reload = async () => {
    const kept = draft;
    setBusy(true);
    const latest = await refresh();
    setBusy(false);
    if (latest === null) return;
    start(latest);
    setUnsaved(kept);
  };

  if (base === null) {
    return (
      <section className="card" aria-labelledby="edit-data">
        <h2 id="edit-data">Edit data</h2>
        {saved && <Notice>Saved: the table is at version {saved.version}.</Notice>}
        <p className="muted">
          Replaces the whole document (<code>PUT /api/v2/tables/{'{id}'}/data</code>) if nobody changed it
          meanwhile. Tools whose path is gone afterwards show “context missing”.
        </p>
        <button type="button" onClick={() => start(current)}>
          Edit data
        </button>
      </section>
    );
  }
  const unchanged = draft === original;
  return (
    <section className="card" aria-labelledby="edit-data">
      <h2 id="edit-data">Edit data</h2>
      <form onSubmit={(event) => void save(event)} className="json-editor">
        <label htmlFor="table-json">
          Data as JSON <span className="muted">(editing version {base.table.version})</span>
        </label>
        <textarea
          id="table-json"
          value={draft}
          onChange={(event) => setDraft(event.target.value)}
          spellCheck={false}
          autoCapitalize="off"
          autoComplete="off"
          rows={Math.min(24, Math.max(8, draft.split('\n').length + 1))}
          aria-invalid={checked !== null && !checked.ok}
          aria-describedby="table-json-check"
        />
        <p
          id="table-json-check"
          className={checked?.ok ? 'muted' : 'warn'}
          aria-live="polite"
          data-testid="json-check"
        >
          {checked?.ok ? 'Valid JSON.' : checked?.message}
        </p>
        {conflict !== null && (
          <div className="conflict" data-testid="conflict">
            <ErrorMessage error={conflict} />
            <p>
              The table changed since you began editing: nothing was saved. Reload it to edit its current
              data; your text stays here to copy.
            </p>
            <button type="button" disabled={busy} onClick={() => void reload()}>
              Reload the table
            </button>
          </div>
        )}
        <ErrorMessage error={error} />
        <div className="actions">
          <button type="submit" disabled={busy || conflict !== null || !checked?.ok || unchanged}>
            {busy ? 'Saving…' : 'Save data'}
          </button>
          <button
            type="button"
            className="secondary"
            disabled={!checked?.ok}
            onClick={() => checked?.ok && setDraft(pretty(checked.value))}
          >
            Format
          </button>
          <button type="button" className="secondary" onClick={stop}>
            Cancel
          </button>
        </div>
      </form>
      {unsaved !== null && (
        <details className="unsaved" data-testid="unsaved">
          <summary>Your unsaved text</summary>
          <CopyBlock label="Unsaved text" text={unsaved} />
        </details>
      )}
    </section>
  );
}

const RULES_EXAMPLE: TableRules = {
  protect: [{ path: '/customers', deny: ['delete'] }],
  person_only: ['/settings'],
  max_items_per_change: 50,
};

/**
 * The table's rules as JSON (`GET`/`PUT /api/v2/tables/{id}/rules`): every write of the data,
 * whoever makes it, must keep them; the server checks the text and says what is wrong.
 */
function RulesEditor({ tableId }: { tableId: string }) {
  const path = `/api/v2/tables/${encodeURIComponent(tableId)}/rules`;
  const loaded = useLoad(() => api<TableRules>('GET', path), [path]);
  const [draft, setDraft] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const { busy, error, run } = useAction();
  const text = draft ?? (loaded.data ? pretty(loaded.data) : '');
  const checked = useMemo(() => (draft === null ? null : checkJson(draft, { value: {} })), [draft]);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    if (!checked?.ok) return;
    const stored = await run(() => api<TableRules>('PUT', path, { body: checked.value }));
    if (stored !== undefined) {
      setDraft(pretty(stored));
      setSaved(true);
    }
  };
  return (
    <section className="card" aria-labelledby="table-rules">
      <h2 id="table-rules">Rules</h2>
      <p className="muted">
        Every write must keep these, from every tool and in the sidebar: <code>protect</code> paths from{' '}
        <code>write</code> or <code>delete</code>, a JSON <code>schema</code> the data (or{' '}
        <code>schema_path</code>) must still satisfy, <code>max_items_per_change</code>, and{' '}
        <code>person_only</code> paths no tool or agent may change. A write that breaks one is refused (
        <code>RULE_VIOLATED</code>) and nothing is written.
      </p>
      <ErrorMessage error={loaded.error} />
      {saved && <Notice>Rules saved.</Notice>}
      <form onSubmit={(event) => void save(event)}>
        <JsonText
          label="Rules as JSON ({} for none)"
          text={text}
          onChange={(next) => {
            setDraft(next);
            setSaved(false);
          }}
          checked={checked}
        />
        <ErrorMessage error={error} />
        <div className="actions">
          <button type="submit" disabled={busy || draft === null || !checked?.ok}>
            {busy ? 'Saving…' : 'Save rules'}
          </button>
          {text.trim() === '{}' && (
            <button type="button" className="secondary" onClick={() => setDraft(pretty(RULES_EXAMPLE))}>
              Start from an example
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
