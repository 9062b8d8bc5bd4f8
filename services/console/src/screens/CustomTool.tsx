/**
 * The form of a custom JavaScript tool: its code, input schema (and optional output schema), an
 * optional context of one of your tables, the hosts `ctx.fetch` may reach and the secrets it reads.
 * "Run with these arguments" tries it before it is saved (`POST /api/v2/adis/trial-runs`: checked
 * as a create, run in the same sandbox, nothing stored, no context written) with arguments typed in
 * a form made from the input schema; "Create tool" saves it. Every refusal shows the server's message.
 */
import { useMemo, useRef, useState, type FormEvent } from 'react';
import type {
  Adi,
  CreateCustomAdiBody,
  Secret,
  TableSummary,
  TrialRunBody,
  TrialRunResult,
} from '@bindery/contracts';
import { api, messageOf } from '../api.ts';
import { CheckField, Field, JsonPathField, namedOptions, SelectField, TextAreaField } from '../forms.tsx';
import { checkJson, JsonText, pretty } from '../json-text.tsx';
import { listAll } from '../lists.ts';
import { ArgumentsEditor, useArguments } from '../schema-form.tsx';
import { ErrorMessage, JsonTree, Opener, useAction, useLoad } from '../ui.tsx';
import { CreateToolActions, ToolNameFields } from './ToolForms.tsx';
import './editing.css';
import './tool-kinds.css';

export const CODE_TEMPLATE = `export default async function (args, ctx) {
  // args: the arguments, checked against the input schema.
  // ctx.context.read(path), ctx.context.write(op, args), ctx.fetch(url, init) and ctx.secrets.NAME
  // exist when the tool declares a context, allowed hosts and secrets.
  console.log('called with', args);
  return { greeting: \`Hello, \${args.name}!\` };
}
`;

const INPUT_SCHEMA_TEMPLATE = pretty({
  type: 'object',
  properties: { name: { type: 'string', description: 'Who to greet' } },
  required: ['name'],
  additionalProperties: false,
});

/** Lines of a textarea: trimmed, without blanks. */
const linesOf = (text: string) =>
  text
    .split(/[\n,]/)
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** "… (line 2, column 17) …" in a server message: where a syntax error is. */
export function positionIn(message: string): { line: number; column: number } | null {
  const match = /line (\d+), column (\d+)/.exec(message);
  return match ? { line: Number(match[1]), column: Number(match[2]) } : null;
}

/** The offset in `text` of a 1-based line and column. */
function offsetOf(text: string, line: number, column: number): number {
  const lines = text.split('\n');
  let offset = 0;
  for (let index = 0; index < Math.min(line - 1, lines.length); index += 1) {
    offset += (lines[index] ?? '').length + 1;
  }
  return Math.min(text.length, offset + Math.max(0, column - 1));
}

export function NewCustomTool({ onCreated }: { onCreated: (adi: Adi) => void }) {
  return (
    <section className="card" aria-labelledby="new-custom-tool">
      <h2 id="new-custom-tool">Make a custom JavaScript tool</h2>
      <p className="muted">
        Your own JavaScript, run in a sandbox: it may read (or write) one context of your tables, call the
        hosts you list and read the secrets you name. Try it with arguments before you save it.
      </p>
      <Opener label="New custom tool">
        {(close) => <CustomToolForm onCreated={onCreated} onClose={close} />}
      </Opener>
    </section>
  );
}

type Access = 'none' | 'read' | 'write';

function CustomToolForm({ onCreated, onClose }: { onCreated: (adi: Adi) => void; onClose: () => void }) {
  const tables = useLoad(() => listAll<TableSummary>('/api/v2/tables'), []);
  const secrets = useLoad(() => listAll<Secret>('/api/v2/secrets'), []);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [code, setCode] = useState(CODE_TEMPLATE);
  const [inputText, setInputText] = useState(INPUT_SCHEMA_TEMPLATE);
  const [outputText, setOutputText] = useState('');
  const [access, setAccess] = useState<Access>('none');
  const [tableId, setTableId] = useState('');
  const [jsonPath, setJsonPath] = useState('');
  const [hostsText, setHostsText] = useState('');
  const [chosenSecrets, setChosenSecrets] = useState<string[]>([]);
  const creating = useAction();
  const [created, setCreated] = useState<Adi | null>(null);
  const trying = useAction();
  const [run, setRun] = useState<TrialRunResult | null>(null);
  const busy = trying.busy || creating.busy;
  const codeRef = useRef<HTMLTextAreaElement>(null);
  const table = tableId || tables.data?.items[0]?.id || '';

  const inputChecked = useMemo(
    () => checkJson(inputText, { message: 'An input schema is needed.' }),
    [inputText],
  );
  const outputChecked = useMemo(() => checkJson(outputText, { value: undefined }), [outputText]);
  // The arguments form follows the input schema as long as it is JSON.
  const schema = inputChecked.ok ? inputChecked.value : null;
  const args = useArguments(schema);

  /** The create body as typed, or why it cannot be sent. */
  const body = (): CreateCustomAdiBody | string => {
    if (!inputChecked.ok) return `Input schema: ${inputChecked.message}`;
    if (!outputChecked.ok) return `Output schema: ${outputChecked.message}`;
    const isObject = (value: unknown) => value !== null && typeof value === 'object' && !Array.isArray(value);
    if (!isObject(inputChecked.value))
      return 'Input schema: a JSON Schema object, such as {"type": "object"}.';
    if (outputChecked.value !== undefined && !isObject(outputChecked.value)) {
      return 'Output schema: a JSON Schema object, or empty for none.';
    }
    const hosts = linesOf(hostsText);
    return {
      kind: 'custom',
      code,
      input_schema: inputChecked.value as Record<string, unknown>,
      ...(outputChecked.value !== undefined && {
        output_schema: outputChecked.value as Record<string, unknown>,
      }),
      ...(access !== 'none' && {
        context: { table_id: table, json_path: jsonPath, write: access === 'write' },
      }),
      ...(hosts.length > 0 && { allowed_hosts: hosts }),
      ...(chosenSecrets.length > 0 && { secrets: chosenSecrets }),
      ...(name.trim() !== '' && { name: name.trim() }),
      ...(description.trim() !== '' && { description: description.trim() }),
    };
  };

  const tryIt = async () => {
    const config = body();
    setRun(null);
    if (typeof config === 'string') return trying.setError(new Error(config));
    if (!args.checked.ok) return trying.setError(new Error(`Arguments: ${args.checked.message}`));
    const request: TrialRunBody = {
      kind: 'custom',
      config,
      arguments: args.checked.value as Record<string, unknown>,
    };
    await trying.run(async () =>
      setRun(await api<TrialRunResult>('POST', '/api/v2/adis/trial-runs', { body: request })),
    );
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const config = body();
    setCreated(null);
    if (typeof config === 'string') return creating.setError(new Error(config));
    await creating.run(async () => {
      const adi = await api<Adi>('POST', '/api/v2/adis', { body: config });
      setCreated(adi);
      onCreated(adi);
    });
  };

  /** Puts the caret where a syntax error is. */
  const goTo = (line: number, column: number) => {
    const area = codeRef.current;
    if (!area) return;
    const offset = offsetOf(code, line, column);
    area.focus();
    area.setSelectionRange(offset, offset);
  };

  const toggleSecret = (secret: string, on: boolean) =>
    setChosenSecrets((previous) =>
      on
        ? [...previous.filter((item) => item !== secret), secret]
        : previous.filter((item) => item !== secret),
    );

  const tableItems = tables.data?.items ?? [];
  const secretItems = secrets.data?.items ?? [];
  return (
    <form
      className="form-grid tool-form"
      onSubmit={(event) => void submit(event)}
      aria-label="New custom tool"
    >
      <ToolNameFields
        kind="custom"
        placeholder="greet"
        name={name}
        onName={setName}
        description={description}
        onDescription={setDescription}
      />
      <Field
        label="Code"
        hint={
          <>
            An ES module whose default export is <code>async function (args, ctx)</code>; what it returns
            (JSON) is the tool’s result. Tab moves to the next field.
          </>
        }
      >
        {(id, hint) => (
          <textarea
            id={id}
            ref={codeRef}
            className="code-editor"
            aria-describedby={hint}
            value={code}
            rows={Math.min(30, Math.max(8, code.split('\n').length + 1))}
            onChange={(event) => setCode(event.target.value)}
            spellCheck={false}
            autoCapitalize="off"
            autoComplete="off"
            wrap="off"
          />
        )}
      </Field>
      <JsonText
        label="Input schema (JSON Schema)"
        text={inputText}
        onChange={setInputText}
        checked={inputChecked}
        validMessage="Valid JSON: the arguments form below follows it."
      />
      <JsonText
        label="Output schema (optional)"
        text={outputText}
        onChange={setOutputText}
        checked={outputText.trim() === '' ? null : outputChecked}
        validMessage="Valid JSON: answers are checked against it."
        minRows={2}
      />
      <fieldset className="tool-group">
        <legend>Context</legend>
        <SelectField
          label="Access to a table’s data"
          value={access}
          onChange={setAccess}
          options={[
            { value: 'none', label: 'None' },
            { value: 'read', label: 'Read-only (ctx.context.read)' },
            { value: 'write', label: 'Read-write (ctx.context.read and write)' },
          ]}
        />
        {access !== 'none' && (
          <>
            <ErrorMessage error={tables.error} />
            {tables.data && tableItems.length === 0 ? (
              <p className="warn">No tables yet: create one under Data first.</p>
            ) : (
              <SelectField
                label="Table"
                value={table}
                onChange={setTableId}
                options={namedOptions(tableItems)}
              />
            )}
            <JsonPathField value={jsonPath} onChange={setJsonPath} />
          </>
        )}
      </fieldset>
      <TextAreaField
        label="Allowed fetch hosts"
        optional
        hint="One per line: host or host:port (e.g. api.example.com). Empty: the tool has no ctx.fetch."
        value={hostsText}
        onChange={setHostsText}
        rows={2}
      />
      <fieldset className="tool-group">
        <legend>Secrets (ctx.secrets.NAME)</legend>
        <ErrorMessage error={secrets.error} />
        {secrets.data && secretItems.length === 0 && <p className="muted">You have no secrets yet.</p>}
        <div className="checks">
          {secretItems.map((secret) => (
            <CheckField
              key={secret.name}
              checked={chosenSecrets.includes(secret.name)}
              onChange={(on) => toggleSecret(secret.name, on)}
            >
              {' '}
              <code>{secret.name}</code>
            </CheckField>
          ))}
        </div>
      </fieldset>

      <section className="trial" aria-labelledby="custom-tool-trial">
        <h3 id="custom-tool-trial">Try it</h3>
        <p className="muted">
          Runs the code as it is now, unsaved, in the same sandbox and limits as a call. A context is only
          read: writes are refused until the tool is saved.
        </p>
        {schema === null ? (
          <p className="warn">Fix the input schema to type arguments.</p>
        ) : (
          <ArgumentsEditor state={args} />
        )}
        <div className="actions">
          <button type="button" className="secondary" disabled={busy} onClick={() => void tryIt()}>
            {trying.busy ? 'Running…' : 'Run with these arguments'}
          </button>
        </div>
        <RunError error={trying.error} onGoTo={goTo} />
        {run && <TrialOutcome run={run} />}
      </section>

      <CreateToolActions
        error={creating.error}
        created={created}
        busy={creating.busy}
        disabled={busy}
        onClose={onClose}
      />
    </form>
  );
}

/** A refused trial run: the server's message, and a way to the line of a syntax error. */
function RunError({ error, onGoTo }: { error: unknown; onGoTo: (line: number, column: number) => void }) {
  if (error === null || error === undefined) return null;
  const position = positionIn(messageOf(error));
  return (
    <div className="run-error" data-testid="trial-error">
      <ErrorMessage error={error} />
      {position && (
        <button
          type="button"
          className="secondary small"
          onClick={() => onGoTo(position.line, position.column)}
        >
          Go to line {position.line}, column {position.column}
        </button>
      )}
    </div>
  );
}

function TrialOutcome({ run }: { run: TrialRunResult }) {
  return (
    <div className="run-result" data-testid="trial-result" aria-live="polite">
      <h4>
        Result <span className={`badge ${run.ok ? 'good' : 'bad'}`}>{run.ok ? 'ok' : 'tool error'}</span>{' '}
        <span className="muted" data-testid="trial-duration">
          {run.duration_ms.toFixed(0)} ms
        </span>
      </h4>
      {run.ok ? (
        <JsonTree value={run.result} />
      ) : (
        <p className="error" role="alert">
          {run.error ? `${run.error.message} (${run.error.code})` : 'The tool failed.'}
        </p>
      )}
      <h4>Console</h4>
      {run.console.length === 0 ? (
        <p className="muted">Nothing written to the console.</p>
      ) : (
        <ol className="console-lines" data-testid="trial-console" tabIndex={0} aria-label="Console output">
          {run.console.map((line, index) => (
            <li key={index} className={`console-${line.level}`}>
              <span className="console-level">{line.level}</span> {line.message}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
