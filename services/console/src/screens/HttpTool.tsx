/**
 * The form of an HTTP API tool: the method and URL template, where each argument goes (a `{name}`
 * of the path, the query string, a header or the JSON body), static headers and headers holding
 * one of your secrets, the timeout, the largest answer, an optional JMESPath on the answer, and the
 * input schema (derived from the arguments, or your own). The server checks it all when it is
 * saved and shows its message when it refuses; the SSRF guard checks the address at call time.
 */
import { useMemo, useState, type FormEvent } from 'react';
import type { Adi, CreateHttpAdiBody, HttpMethod, HttpParamLocation, Secret } from '@bindery/contracts';
import { api } from '../api.ts';
import { CheckField, SelectField, TextField } from '../forms.tsx';
import { checkJson, JsonText, pretty } from '../json-text.tsx';
import { listAll } from '../lists.ts';
import { ErrorMessage, Opener, useAction, useLoad } from '../ui.tsx';
import { CreateToolActions, ToolNameFields } from './ToolForms.tsx';
import './editing.css';
import './tool-kinds.css';

// HTTP_METHODS, HTTP_PARAM_LOCATIONS and HTTP_PARAM_TYPES of the contracts (type-only imports keep
// their code out of the bundle).
const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];
const LOCATIONS: HttpParamLocation[] = ['path', 'query', 'header', 'body'];
const TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object'] as const;
type ParamType = (typeof TYPES)[number];
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RESPONSE_BYTES = 1024 * 1024;

interface ParamRow {
  key: number;
  name: string;
  in: HttpParamLocation;
  wire: string;
  type: ParamType;
  required: boolean;
  description: string;
}

interface HeaderRow {
  key: number;
  name: string;
  value: string;
}

interface SecretHeaderRow {
  key: number;
  name: string;
  prefix: string;
  secret: string;
}

let nextKey = 0;
const newKey = () => (nextKey += 1);

/** The schema the server derives from the arguments when none is given (input-schema.ts there). */
export function derivedSchema(params: readonly ParamRow[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const param of params) {
    if (param.name.trim() === '') continue;
    properties[param.name.trim()] = {
      type: param.type,
      ...(param.description.trim() !== '' && { description: param.description.trim() }),
    };
    if (param.in === 'path' || param.required) required.push(param.name.trim());
  }
  return {
    type: 'object',
    properties,
    ...(required.length > 0 && { required }),
    additionalProperties: false,
  };
}

/** `{id}` placeholders of a URL template's path, in order. */
function placeholdersOf(url: string): string[] {
  const path = url.replace(/^[a-z]+:\/\/[^/]*/i, '').split('?')[0] ?? '';
  return [...path.matchAll(/\{([^{}]+)\}/g)].map((match) => match[1] ?? '');
}

export function NewHttpTool({ onCreated }: { onCreated: (adi: Adi) => void }) {
  return (
    <section className="card" aria-labelledby="new-http-tool">
      <h2 id="new-http-tool">Make an HTTP API tool</h2>
      <p className="muted">
        One request to an HTTP API per call: the arguments fill the URL’s path, query, headers or JSON body;
        secrets go in headers and are never shown to the agent.
      </p>
      <Opener label="New HTTP tool">
        {(close) => <HttpToolForm onCreated={onCreated} onClose={close} />}
      </Opener>
    </section>
  );
}

function HttpToolForm({ onCreated, onClose }: { onCreated: (adi: Adi) => void; onClose: () => void }) {
  const secrets = useLoad(() => listAll<Secret>('/api/v2/secrets'), []);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [method, setMethod] = useState<HttpMethod>('GET');
  const [url, setUrl] = useState('');
  const [params, setParams] = useState<ParamRow[]>([]);
  const [headers, setHeaders] = useState<HeaderRow[]>([]);
  const [secretHeaders, setSecretHeaders] = useState<SecretHeaderRow[]>([]);
  const [timeout, setTimeoutText] = useState('');
  const [maxBytes, setMaxBytes] = useState('');
  const [resultPath, setResultPath] = useState('');
  const [ownSchema, setOwnSchema] = useState(false);
  const [schemaText, setSchemaText] = useState('');
  const { busy, error, setError, run } = useAction();
  const [created, setCreated] = useState<Adi | null>(null);
  const secretNames = (secrets.data?.items ?? []).map((secret) => secret.name);
  const derived = useMemo(() => derivedSchema(params), [params]);
  const schemaChecked = useMemo(
    () => checkJson(schemaText, { message: 'An input schema is needed.' }),
    [schemaText],
  );
  const missingPlaceholders = placeholdersOf(url).filter(
    (placeholder) =>
      !params.some(
        (param) => param.in === 'path' && (param.wire.trim() || param.name.trim()) === placeholder,
      ),
  );

  const changeParam = (key: number, change: Partial<ParamRow>) =>
    setParams((rows) => rows.map((row) => (row.key === key ? { ...row, ...change } : row)));
  const addParam = (initial: Partial<ParamRow> = {}) =>
    setParams((rows) => [
      ...rows,
      {
        key: newKey(),
        name: '',
        in: method === 'GET' || method === 'HEAD' || method === 'DELETE' ? 'query' : 'body',
        wire: '',
        type: 'string',
        required: false,
        description: '',
        ...initial,
      },
    ]);
  const changeHeader = (key: number, change: Partial<HeaderRow>) =>
    setHeaders((rows) => rows.map((row) => (row.key === key ? { ...row, ...change } : row)));
  const changeSecretHeader = (key: number, change: Partial<SecretHeaderRow>) =>
    setSecretHeaders((rows) => rows.map((row) => (row.key === key ? { ...row, ...change } : row)));

  const toggleOwnSchema = (on: boolean) => {
    if (on && schemaText.trim() === '') setSchemaText(pretty(derived));
    setOwnSchema(on);
  };

  /** The create body as typed, or why it cannot be sent. */
  const body = (): CreateHttpAdiBody | string => {
    const number = (text: string, label: string) => {
      if (text.trim() === '') return undefined;
      const value = Number(text);
      return Number.isInteger(value) ? value : `${label}: a whole number.`;
    };
    const timeoutMs = number(timeout, 'Timeout');
    const responseBytes = number(maxBytes, 'Largest answer');
    if (typeof timeoutMs === 'string') return timeoutMs;
    if (typeof responseBytes === 'string') return responseBytes;
    if (ownSchema && !schemaChecked.ok) return `Input schema: ${schemaChecked.message}`;
    const allHeaders: Record<string, string> = {};
    for (const row of headers) if (row.name.trim() !== '') allHeaders[row.name.trim()] = row.value;
    for (const row of secretHeaders) {
      if (row.name.trim() === '') continue;
      if (row.secret === '') return `Header ${row.name.trim()}: choose a secret.`;
      allHeaders[row.name.trim()] = `${row.prefix}{{secret.${row.secret}}}`;
    }
    const rows = params.filter((row) => row.name.trim() !== '');
    return {
      kind: 'http',
      method,
      url: url.trim(),
      ...(rows.length > 0 && {
        params: rows.map((row) => ({
          name: row.name.trim(),
          in: row.in,
          ...(row.wire.trim() !== '' && { key: row.wire.trim() }),
          type: row.type,
          ...(row.in !== 'path' && row.required && { required: true }),
          ...(row.description.trim() !== '' && { description: row.description.trim() }),
        })),
      }),
      ...(Object.keys(allHeaders).length > 0 && { headers: allHeaders }),
      ...(timeoutMs !== undefined && { timeout_ms: timeoutMs }),
      ...(responseBytes !== undefined && { max_response_bytes: responseBytes }),
      ...(resultPath.trim() !== '' && { result_path: resultPath.trim() }),
      ...(ownSchema && schemaChecked.ok && { input_schema: schemaChecked.value as Record<string, unknown> }),
      ...(name.trim() !== '' && { name: name.trim() }),
      ...(description.trim() !== '' && { description: description.trim() }),
    };
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const request = body();
    setCreated(null);
    if (typeof request === 'string') return setError(new Error(request));
    await run(async () => {
      const adi = await api<Adi>('POST', '/api/v2/adis', { body: request });
      setCreated(adi);
      onCreated(adi);
    });
  };

  return (
    <form className="form-grid tool-form" onSubmit={(event) => void submit(event)} aria-label="New HTTP tool">
      <ToolNameFields
        kind="http"
        placeholder="get_weather"
        name={name}
        onName={setName}
        description={description}
        onDescription={setDescription}
      />
      <SelectField label="Method" value={method} onChange={setMethod} options={METHODS} />
      <TextField
        label="URL template"
        hint={
          <>
            An absolute http(s) URL; <code>{'{name}'}</code> in the path is filled from a path argument, e.g.{' '}
            <code>{'https://api.example.com/users/{id}'}</code>.
          </>
        }
        value={url}
        onChange={setUrl}
        placeholder="https://api.example.com/users/{id}"
        inputMode="url"
        required
      />

      <fieldset className="tool-group">
        <legend>Arguments</legend>
        {params.length === 0 && (
          <p className="muted">No arguments: the tool sends the same request every time.</p>
        )}
        <div className="row-editor">
          {params.map((row, index) => (
            <div className="row-item" key={row.key} role="group" aria-label={`Argument ${index + 1}`}>
              <TextField
                label="Name"
                value={row.name}
                onChange={(value) => changeParam(row.key, { name: value })}
              />
              <SelectField
                label="Goes in"
                value={row.in}
                onChange={(value) => changeParam(row.key, { in: value })}
                options={LOCATIONS}
              />
              <SelectField
                label="Type"
                value={row.type}
                onChange={(value) => changeParam(row.key, { type: value })}
                options={TYPES}
              />
              <TextField
                label="Name on the wire"
                optional
                hint={row.in === 'body' ? 'Empty: the argument is the whole JSON body.' : 'Empty: its name.'}
                value={row.wire}
                onChange={(value) => changeParam(row.key, { wire: value })}
              />
              <TextField
                label="Description"
                optional
                value={row.description}
                onChange={(value) => changeParam(row.key, { description: value })}
                literal={false}
              />
              <CheckField
                checked={row.in === 'path' || row.required}
                disabled={row.in === 'path'}
                onChange={(checked) => changeParam(row.key, { required: checked })}
              >
                Required
              </CheckField>
              <button
                type="button"
                className="secondary small"
                onClick={() => setParams((rows) => rows.filter((item) => item.key !== row.key))}
              >
                Remove argument {index + 1}
              </button>
            </div>
          ))}
        </div>
        <div className="actions">
          <button type="button" className="secondary small" onClick={() => addParam()}>
            Add an argument
          </button>
          {missingPlaceholders.map((placeholder) => (
            <button
              key={placeholder}
              type="button"
              className="secondary small"
              onClick={() => addParam({ name: placeholder, in: 'path', required: true })}
            >
              Add path argument {`{${placeholder}}`}
            </button>
          ))}
        </div>
      </fieldset>

      <fieldset className="tool-group">
        <legend>Headers</legend>
        <div className="row-editor">
          {headers.map((row, index) => (
            <div className="row-item" key={row.key} role="group" aria-label={`Header ${index + 1}`}>
              <TextField
                label="Header name"
                value={row.name}
                onChange={(value) => changeHeader(row.key, { name: value })}
                placeholder="Accept"
              />
              <TextField
                label="Value"
                value={row.value}
                onChange={(value) => changeHeader(row.key, { value })}
                placeholder="application/json"
              />
              <button
                type="button"
                className="secondary small"
                onClick={() => setHeaders((rows) => rows.filter((item) => item.key !== row.key))}
              >
                Remove header {index + 1}
              </button>
            </div>
          ))}
          {secretHeaders.map((row, index) => (
            <div className="row-item" key={row.key} role="group" aria-label={`Secret header ${index + 1}`}>
              <TextField
                label="Header name"
                value={row.name}
                onChange={(value) => changeSecretHeader(row.key, { name: value })}
                placeholder="Authorization"
              />
              <TextField
                label="Before the secret"
                optional
                value={row.prefix}
                onChange={(value) => changeSecretHeader(row.key, { prefix: value })}
                placeholder="Bearer "
              />
              <SelectField
                label="Secret"
                value={row.secret}
                onChange={(value) => changeSecretHeader(row.key, { secret: value })}
                options={[{ value: '', label: '(choose)' }, ...secretNames]}
              />
              <button
                type="button"
                className="secondary small"
                onClick={() => setSecretHeaders((rows) => rows.filter((item) => item.key !== row.key))}
              >
                Remove secret header {index + 1}
              </button>
            </div>
          ))}
        </div>
        <ErrorMessage error={secrets.error} />
        {secrets.data && secretNames.length === 0 && (
          <p className="muted">You have no secrets yet: add one under Secrets to send it in a header.</p>
        )}
        <div className="actions">
          <button
            type="button"
            className="secondary small"
            onClick={() => setHeaders((rows) => [...rows, { key: newKey(), name: '', value: '' }])}
          >
            Add a header
          </button>
          <button
            type="button"
            className="secondary small"
            disabled={secretNames.length === 0}
            onClick={() =>
              setSecretHeaders((rows) => [
                ...rows,
                { key: newKey(), name: 'Authorization', prefix: 'Bearer ', secret: secretNames[0] ?? '' },
              ])
            }
          >
            Add a secret header
          </button>
        </div>
      </fieldset>

      <fieldset className="tool-group">
        <legend>Answer</legend>
        <TextField
          label="Timeout (ms)"
          optional
          hint={`The whole call, 100 to 60000; default ${DEFAULT_TIMEOUT_MS}.`}
          inputMode="numeric"
          value={timeout}
          onChange={setTimeoutText}
          placeholder={String(DEFAULT_TIMEOUT_MS)}
          literal={false}
        />
        <TextField
          label="Largest answer (bytes)"
          optional
          hint={`Default ${DEFAULT_RESPONSE_BYTES} (1 MiB), at most 10 MiB.`}
          inputMode="numeric"
          value={maxBytes}
          onChange={setMaxBytes}
          placeholder={String(DEFAULT_RESPONSE_BYTES)}
          literal={false}
        />
        <TextField
          label="JMESPath on the answer"
          optional
          hint="Keeps part of a JSON answer, e.g. items[].name."
          value={resultPath}
          onChange={setResultPath}
        />
      </fieldset>

      <fieldset className="tool-group">
        <legend>Input schema</legend>
        <CheckField checked={ownSchema} onChange={toggleOwnSchema}>
          Write the input schema myself (it must match the arguments)
        </CheckField>
        {ownSchema ? (
          <JsonText
            label="Input schema (JSON Schema)"
            text={schemaText}
            onChange={setSchemaText}
            checked={schemaChecked}
          />
        ) : (
          <>
            <p className="muted">Derived from the arguments when the tool is saved:</p>
            <pre tabIndex={0} aria-label="Derived input schema" data-testid="derived-schema">
              {pretty(derived)}
            </pre>
          </>
        )}
      </fieldset>

      <CreateToolActions error={error} created={created} busy={busy} onClose={onClose} />
    </form>
  );
}
