/**
 * Forms that make tools and expose them: a context tool (one of the ten operations on a path of
 * one of your tables), and a binding of a tool to an exposure. What they need is loaded when they
 * open; every refusal shows the server's message.
 */
import { useState, type FormEvent } from 'react';
import type { Adi, Binding, CreateContextAdiBody, TableSummary } from '@bindery/contracts';
import { OPERATION_TYPES, type OperationType } from '@bindery/contracts/operations';
import { api } from '../api.ts';
import { Field } from '../forms.tsx';
import { listAll } from '../lists.ts';
import { ErrorMessage, Notice, Opener, useLoad } from '../ui.tsx';
import './editing.css';

/** "id, name" → ["id", "name"]: the preview keys, in order, without blanks. */
const keyList = (text: string) =>
  text
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '');

export function NewContextTool({ onCreated }: { onCreated: (adi: Adi) => void }) {
  return (
    <section className="card" aria-labelledby="new-context-tool">
      <h2 id="new-context-tool">Make a context tool</h2>
      <p className="muted">
        A tool running one of the ten operations on the data at a JSON path of one of your tables.
      </p>
      <Opener label="New context tool">
        {(close) => <ContextToolForm onCreated={onCreated} onClose={close} />}
      </Opener>
    </section>
  );
}

function ContextToolForm({ onCreated, onClose }: { onCreated: (adi: Adi) => void; onClose: () => void }) {
  const tables = useLoad(() => listAll<TableSummary>('/api/v2/tables'), []);
  const [tableId, setTableId] = useState('');
  const [operation, setOperation] = useState<OperationType>('get_all');
  const [jsonPath, setJsonPath] = useState('');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [previewKeys, setPreviewKeys] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [created, setCreated] = useState<Adi | null>(null);
  const [busy, setBusy] = useState(false);
  const table = tableId || tables.data?.items[0]?.id || '';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const keys = keyList(previewKeys);
    const body: CreateContextAdiBody = {
      kind: 'context',
      table_id: table,
      json_path: jsonPath,
      operation_type: operation,
      ...(name.trim() !== '' && { name: name.trim() }),
      ...(description.trim() !== '' && { description: description.trim() }),
      ...(operation === 'preview' && keys.length > 0 && { config: { preview_keys: keys } }),
    };
    setBusy(true);
    setCreated(null);
    try {
      const adi = await api<Adi>('POST', '/api/v2/adis', { body });
      setError(null);
      setCreated(adi);
      setName('');
      setDescription('');
      onCreated(adi);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  if (tables.data && tables.data.items.length === 0) {
    return <p>No tables yet: a context tool reads or writes a table’s data. Create a table first.</p>;
  }
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="New context tool">
      <ErrorMessage error={tables.error} />
      <Field label="Table">
        {(id) => (
          <select id={id} value={table} onChange={(event) => setTableId(event.target.value)} required>
            {tables.data?.items.map((item) => (
              <option key={item.id} value={item.id}>
                {item.name}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Operation">
        {(id) => (
          <select
            id={id}
            value={operation}
            onChange={(event) => setOperation(event.target.value as OperationType)}
          >
            {OPERATION_TYPES.map((op) => (
              <option key={op} value={op}>
                {op}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="JSON path"
        hint="A JSON Pointer into the table’s data, such as /customers; empty for all of it."
      >
        {(id, hint) => (
          <input
            id={id}
            aria-describedby={hint}
            value={jsonPath}
            onChange={(event) => setJsonPath(event.target.value)}
            placeholder="/customers"
            spellCheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      {operation === 'preview' && (
        <Field label="Preview keys" hint="The keys kept on each item, comma separated; empty keeps them all.">
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              value={previewKeys}
              onChange={(event) => setPreviewKeys(event.target.value)}
              placeholder="id, name"
              spellCheck={false}
              autoComplete="off"
            />
          )}
        </Field>
      )}
      <Field label="Tool name" optional>
        {(id) => (
          <input
            id={id}
            value={name}
            onChange={(event) => setName(event.target.value)}
            placeholder={`${operation}_…`}
            spellCheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      <Field label="Description" optional>
        {(id) => (
          <textarea
            id={id}
            value={description}
            rows={2}
            onChange={(event) => setDescription(event.target.value)}
          />
        )}
      </Field>
      <ErrorMessage error={error} />
      {created && (
        <Notice>
          Created <code>{created.name}</code>: bind it to an exposure from the exposure’s page.
        </Notice>
      )}
      <div className="actions">
        <button type="submit" disabled={busy || table === ''}>
          {busy ? 'Creating…' : 'Create tool'}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/** A tool as a picker shows it: its name, kind and what it works on. */
function toolLabel(adi: Adi): string {
  const what =
    adi.kind === 'context' ? `${adi.operation_type} ${adi.json_path || '(whole table)'}` : adi.kind;
  return `${adi.name} · ${what}`;
}

export function BindTool({
  aeiPath,
  bound,
  onBound,
}: {
  /** `/api/v2/aeis/{id}` */
  aeiPath: string;
  /** The ids of the tools already bound (offered, but marked). */
  bound: string[];
  onBound: (binding: Binding) => void;
}) {
  return (
    <div className="bind-tool">
      <Opener label="Bind a tool">
        {(close) => <BindToolForm aeiPath={aeiPath} bound={bound} onBound={onBound} onClose={close} />}
      </Opener>
    </div>
  );
}

function BindToolForm({
  aeiPath,
  bound,
  onBound,
  onClose,
}: {
  aeiPath: string;
  bound: string[];
  onBound: (binding: Binding) => void;
  onClose: () => void;
}) {
  const adis = useLoad(() => listAll<Adi>('/api/v2/adis'), []);
  const [adiId, setAdiId] = useState('');
  const [toolName, setToolName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<Binding | null>(null);
  const [busy, setBusy] = useState(false);
  const items = adis.data?.items ?? [];
  const chosen = adiId || items.find((adi) => !bound.includes(adi.id))?.id || items[0]?.id || '';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setDone(null);
    try {
      const binding = await api<Binding>('POST', `${aeiPath}/bindings`, {
        body: { adi_id: chosen, ...(toolName.trim() !== '' && { tool_name: toolName.trim() }) },
      });
      setError(null);
      setDone(binding);
      setToolName('');
      setAdiId('');
      onBound(binding);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  if (adis.data && items.length === 0) {
    return <p>No tools yet: create one under Tools first.</p>;
  }
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="Bind a tool">
      <ErrorMessage error={adis.error} />
      <Field label="Tool">
        {(id) => (
          <select id={id} value={chosen} onChange={(event) => setAdiId(event.target.value)}>
            {items.map((adi) => (
              <option key={adi.id} value={adi.id}>
                {`${toolLabel(adi)}${bound.includes(adi.id) ? ' (bound here)' : ''}`}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Tool name in this exposure" optional hint="Empty: the tool’s own name.">
        {(id, hint) => (
          <input
            id={id}
            aria-describedby={hint}
            value={toolName}
            onChange={(event) => setToolName(event.target.value)}
            spellCheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      <ErrorMessage error={error} />
      {done && (
        <Notice>
          Bound as <code>{done.tool_name}</code>.
        </Notice>
      )}
      <div className="actions">
        <button type="submit" disabled={busy || chosen === ''}>
          {busy ? 'Binding…' : 'Bind'}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
