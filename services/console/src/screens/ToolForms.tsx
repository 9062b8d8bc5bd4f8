/**
 * Forms that make tools and expose them: a context tool (one of the ten operations on a path of
 * one of your tables), and a binding of a tool to an exposure. What they need is loaded when they
 * open; every refusal shows the server's message.
 */
import { useState, type FormEvent } from 'react';
import type { Adi, Binding, CreateContextAdiBody, TableSummary } from '@bindery/contracts';
import { OPERATION_TYPES, type OperationType } from '@bindery/contracts/operations';
import { api } from '../api.ts';
import {
  JsonPathField,
  namedOptions,
  SelectField,
  SubmitAndClose,
  TextAreaField,
  TextField,
} from '../forms.tsx';
import { listAll } from '../lists.ts';
import { PathPicker } from '../path-picker.tsx';
import { ErrorMessage, Notice, Opener, useAction, useLoad } from '../ui.tsx';
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
  const { busy, error, run } = useAction();
  const [created, setCreated] = useState<Adi | null>(null);
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
    setCreated(null);
    await run(async () => {
      const adi = await api<Adi>('POST', '/api/v2/adis', { body });
      setCreated(adi);
      setName('');
      setDescription('');
      onCreated(adi);
    });
  };

  if (tables.data && tables.data.items.length === 0) {
    return <p>No tables yet: a context tool reads or writes a table’s data. Create a table first.</p>;
  }
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="New context tool">
      <ErrorMessage error={tables.error} />
      <SelectField
        label="Table"
        value={table}
        onChange={setTableId}
        options={namedOptions(tables.data?.items ?? [])}
        required
      />
      <SelectField label="Operation" value={operation} onChange={setOperation} options={OPERATION_TYPES} />
      <JsonPathField value={jsonPath} onChange={setJsonPath} />
      <PathPicker tableId={table} onPick={setJsonPath} />
      {operation === 'preview' && (
        <TextField
          label="Preview keys"
          hint="The keys kept on each item, comma separated; empty keeps them all."
          value={previewKeys}
          onChange={setPreviewKeys}
          placeholder="id, name"
        />
      )}
      <TextField label="Tool name" optional value={name} onChange={setName} placeholder={`${operation}_…`} />
      <TextAreaField
        label="Description"
        optional
        value={description}
        onChange={setDescription}
        rows={2}
        literal={false}
      />
      <CreateToolActions
        error={error}
        created={created}
        busy={busy}
        disabled={busy || table === ''}
        onClose={onClose}
      />
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
  const { busy, error, run } = useAction();
  const [done, setDone] = useState<Binding | null>(null);
  const items = adis.data?.items ?? [];
  const chosen = adiId || items.find((adi) => !bound.includes(adi.id))?.id || items[0]?.id || '';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(null);
    await run(async () => {
      const binding = await api<Binding>('POST', `${aeiPath}/bindings`, {
        body: { adi_id: chosen, ...(toolName.trim() !== '' && { tool_name: toolName.trim() }) },
      });
      setDone(binding);
      setToolName('');
      setAdiId('');
      onBound(binding);
    });
  };

  if (adis.data && items.length === 0) {
    return <p>No tools yet: create one under Tools first.</p>;
  }
  return (
    <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="Bind a tool">
      <ErrorMessage error={adis.error} />
      <SelectField
        label="Tool"
        value={chosen}
        onChange={setAdiId}
        options={items.map((adi) => ({
          value: adi.id,
          label: `${toolLabel(adi)}${bound.includes(adi.id) ? ' (bound here)' : ''}`,
        }))}
      />
      <TextField
        label="Tool name in this exposure"
        optional
        hint="Empty: the tool’s own name."
        value={toolName}
        onChange={setToolName}
      />
      <ErrorMessage error={error} />
      {done && (
        <Notice>
          Bound as <code>{done.tool_name}</code>.
        </Notice>
      )}
      <SubmitAndClose
        label="Bind"
        busyLabel="Binding…"
        busy={busy}
        disabled={busy || chosen === ''}
        onClose={onClose}
      />
    </form>
  );
}

/** The name and description every new tool has; `kind` names the default name's prefix. */
export function ToolNameFields({
  kind,
  placeholder,
  name,
  onName,
  description,
  onDescription,
}: {
  kind: string;
  placeholder: string;
  name: string;
  onName: (name: string) => void;
  description: string;
  onDescription: (description: string) => void;
}) {
  return (
    <>
      <TextField
        label="Tool name"
        optional
        hint={`Letters, digits, _ . and -; empty: ${kind}_… is chosen for you.`}
        value={name}
        onChange={onName}
        placeholder={placeholder}
      />
      <TextAreaField
        label="Description"
        optional
        hint="What an agent reads to decide when to call it."
        value={description}
        onChange={onDescription}
        rows={2}
        literal={false}
      />
    </>
  );
}

/** The end of a new tool's form: its refusal or what was created, "Create tool" and "Close". */
export function CreateToolActions({
  error,
  created,
  busy,
  disabled = busy,
  onClose,
}: {
  error: unknown;
  created: Adi | null;
  busy: boolean;
  disabled?: boolean;
  onClose: () => void;
}) {
  return (
    <>
      <ErrorMessage error={error} />
      {created && (
        <Notice>
          Created <code>{created.name}</code>: bind it to an exposure from the exposure’s page.
        </Notice>
      )}
      <SubmitAndClose
        label="Create tool"
        busyLabel="Creating…"
        busy={busy}
        disabled={disabled}
        onClose={onClose}
      />
    </>
  );
}
