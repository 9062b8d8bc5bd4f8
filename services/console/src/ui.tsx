/** Shared pieces: error messages, paged lists, copy buttons and a read-only JSON tree. */
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { api, messageOf, withQuery, type Page } from './api.ts';

export function ErrorMessage({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <p className="error" role="alert">
      {messageOf(error)}
    </p>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

/** Loads an API call's answer; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    setLoading(true);
    try {
      setData(await run());
      setError(null);
    } catch (failure) {
      setError(failure);
    } finally {
      setLoading(false);
    }
  }, [run]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, loading, reload };
}

/** A list the API paginates: the first page, then "Load more" while there is a next_cursor. */
export function usePaged<T>(path: string, query: Record<string, string | undefined> = {}, limit = 50) {
  const key = withQuery(path, query);
  const [items, setItems] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const fetchPage = useCallback(
    async (after: string | undefined, append: boolean) => {
      const mine = ++generation.current;
      setLoading(true);
      try {
        const page = await api<Page<T>>('GET', withQuery(path, { ...query, limit, cursor: after }));
        if (mine !== generation.current) return;
        setItems((previous) => (append ? [...previous, ...page.items] : page.items));
        setCursor(page.next_cursor);
        setError(null);
      } catch (failure) {
        if (mine === generation.current) setError(failure);
      } finally {
        if (mine === generation.current) setLoading(false);
      }
    },
    [key, limit],
  );
  useEffect(() => {
    void fetchPage(undefined, false);
  }, [fetchPage]);
  return {
    items,
    error,
    loading,
    hasMore: cursor !== null,
    loadMore: () => (cursor === null ? undefined : void fetchPage(cursor, true)),
    reload: () => void fetchPage(undefined, false),
  };
}

export function LoadMore({
  hasMore,
  loading,
  onClick,
}: {
  hasMore: boolean;
  loading: boolean;
  onClick: () => void;
}) {
  if (!hasMore) return null;
  return (
    <button type="button" className="secondary" onClick={onClick} disabled={loading}>
      {loading ? 'Loading…' : 'Load more'}
    </button>
  );
}

/**
 * A paged list's frame: its error, `empty` (a paragraph) once it is known to have no items, the
 * items (`children`, only when there are some) and "Load more".
 */
export function PagedList({
  list,
  empty,
  children,
}: {
  list: { items: unknown[]; error: unknown; loading: boolean; hasMore: boolean; loadMore: () => void };
  empty: ReactNode;
  children: ReactNode;
}) {
  return (
    <>
      <ErrorMessage error={list.error} />
      {list.items.length === 0 && !list.loading && !list.error && <p>{empty}</p>}
      {list.items.length > 0 && children}
      <LoadMore hasMore={list.hasMore} loading={list.loading} onClick={list.loadMore} />
    </>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
  };
  return (
    <span className="copy">
      <button type="button" className="secondary small" onClick={() => void copy()}>
        {label}
      </button>
      <span className="copy-state" aria-live="polite">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text and copy it' : ''}
      </span>
    </span>
  );
}

/** A secret or a config shown with its copy button. */
export function CopyBlock({ label, text }: { label: string; text: string }) {
  return (
    <div className="copy-block">
      <div className="copy-head">
        <strong>{label}</strong>
        <CopyButton text={text} label={`Copy ${label}`} />
      </div>
      <pre tabIndex={0}>{text}</pre>
    </div>
  );
}

/** A new secret, shown this once: what to store, then "I stored it: hide the key". */
export function ShownOnce({
  testId,
  notice,
  onHide,
  children,
}: {
  testId: string;
  notice: ReactNode;
  onHide: () => void;
  children: ReactNode;
}) {
  return (
    <div className="new-key" data-testid={testId}>
      <Notice>{notice}</Notice>
      {children}
      <button type="button" className="secondary" onClick={onHide}>
        I stored it: hide the key
      </button>
    </div>
  );
}

/** A client's configuration snippet: the file it goes into and what to merge there. */
interface ClientFile {
  file: string;
  config: unknown;
}

/** The Claude Desktop, VS Code and Cursor snippets, each named with its file and copyable. */
export function ClientFileBlocks({
  configs,
}: {
  configs: { claude_desktop: ClientFile; vscode: ClientFile; cursor: ClientFile };
}) {
  return (
    <>
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
    </>
  );
}

/** A read-only, collapsible view of any JSON value (details/summary: keyboard-usable as is). */
export function JsonTree({ value, name, depth = 0 }: { value: unknown; name?: string; depth?: number }) {
  const label = name === undefined ? null : <span className="json-key">{name}: </span>;
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value)
      ? value.map((item, index) => [String(index), item] as const)
      : Object.entries(value as Record<string, unknown>);
    const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    return (
      <details className="json-node" open={depth < 3}>
        <summary>
          {label}
          <span className="json-count">{summary}</span>
        </summary>
        <ul>
          {entries.map(([key, item]) => (
            <li key={key}>
              <JsonTree value={item} name={key} depth={depth + 1} />
            </li>
          ))}
        </ul>
      </details>
    );
  }
  return (
    <div className="json-leaf">
      {label}
      <span className={`json-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
    </div>
  );
}

/** A section that shows its form only once asked (nothing is loaded before). */
export function Opener({ label, children }: { label: string; children: (close: () => void) => ReactNode }) {
  const [open, setOpen] = useState(false);
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        {label}
      </button>
    );
  }
  return <>{children(() => setOpen(false))}</>;
}

/**
 * An action a button starts: `busy` while it runs, `error` its failure (cleared when one succeeds).
 * `run(action)` answers what the action returned, or undefined when it failed.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    try {
      const result = await action();
      setError(null);
      return result;
    } catch (failure) {
      setError(failure);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, setError, run };
}
