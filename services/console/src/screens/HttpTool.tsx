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
import { Field } from '../forms.tsx';
import { checkJson, JsonText, pretty } from '../json-text.tsx';
import { listAll } from '../lists.ts';
import { ErrorMessage, Notice, Opener, useLoad } from '../ui.tsx';
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
  const [error, setError] = useState<unknown>(null);
  const [created, setCreated] = useState<Adi | null>(null);
  const [busy, setBusy] = useState(false);
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
    setBusy(true);
    try {
      const adi = await api<Adi>('POST', '/api/v2/adis', { body: request });
      setError(null);
      setCreated(adi);
      onCreated(adi);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="form-grid tool-form" onSubmit={(event) => void submit(event)} aria-label="New HTTP tool">
      <Field label="Tool name" optional hint="Letters, digits, _ . and -; empty: http_… is chosen for you.">
        {(id, hint) => (
          <input
            id={id}
            aria-describedby={hint}
            value={name}
            onChange={(event) => setName(event.target.value)}
            placeholder="get_weather"
            spellCheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      <Field label="Description" optional hint="What an agent reads to decide when to call it.">
        {(id, hint) => (
          <textarea
            id={id}
            aria-describedby={hint}
            value={description}
            rows={2}
            onChange={(event) => setDescription(event.target.value)}
          />
        )}
      </Field>
      <Field label="Method">
        {(id) => (
          <select id={id} value={method} onChange={(event) => setMethod(event.target.value as HttpMethod)}>
            {METHODS.map((item) => (
              <option key={item} value={item}>
                {item}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="URL template"
        hint={
          <>
            An absolute http(s) URL; <code>{'{name}'}</code> in the path is filled from a path argument, e.g.{' '}
            <code>{'https://api.example.com/users/{id}'}</code>.
          </>
        }
      >
        {(id, hint) => (
          <input
            id={id}
            aria-describedby={hint}
            value={url}
            onChange={(event) => setUrl(event.target.value)}
            placeholder="https://api.example.com/users/{id}"
            spellCheck={false}
            autoComplete="off"
            inputMode="url"
            required
          />
        )}
      </Field>

      <fieldset className="tool-group">
        <legend>Arguments</legend>
        {params.length === 0 && (
          <p className="muted">No arguments: the tool sends the same request every time.</p>
        )}
        <div className="row-editor">
          {params.map((row, index) => (
            <div className="row-item" key={row.key} role="group" aria-label={`Argument ${index + 1}`}>
              <Field label="Name">
                {(id) => (
                  <input
                    id={id}
                    value={row.name}
                    onChange={(event) => changeParam(row.key, { name: event.target.value })}
                    spellCheck={false}
                    autoComplete="off"
                  />
                )}
              </Field>
              <Field label="Goes in">
                {(id) => (
                  <select
                    id={id}
                    value={row.in}
                    onChange={(event) =>
                      changeParam(row.key, { in: event.target.value as HttpParamLocation })
                    }
                  >
                    {LOCATIONS.map((location) => (
                      <option key={location} value={location}>
                        {location}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <Field label="Type">
                {(id) => (
                  <select
                    id={id}
                    value={row.type}
                    onChange={(event) => changeParam(row.key, { type: event.target.value as ParamType })}
                  >
                    {TYPES.map((type) => (
                      <option key={type} value={type}>
                        {type}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <Field
                label="Name on the wire"
                optional
                hint={row.in === 'body' ? 'Empty: the argument is the whole JSON body.' : 'Empty: its name.'}
              >
                {(id, hint) => (
                  <input
                    id={id}
                    aria-describedby={hint}
                    value={row.wire}
                    onChange={(event) => changeParam(row.key, { wire: event.target.value })}
                    spellCheck={false}
                    autoComplete="off"
                  />
                )}
              </Field>
              <Field label="Description" optional>
                {(id) => (
                  <input
                    id={id}
                    value={row.description}
                    onChange={(event) => changeParam(row.key, { description: event.target.value })}
                  />
                )}
              </Field>
              <label className="check">
                <input
                  type="checkbox"
                  checked={row.in === 'path' || row.required}
                  disabled={row.in === 'path'}
                  onChange={(event) => changeParam(row.key, { required: event.target.checked })}
                />
                Required
              </label>
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
              <Field label="Header name">
                {(id) => (
                  <input
                    id={id}
                    value={row.name}
                    onChange={(event) => changeHeader(row.key, { name: event.target.value })}
                    placeholder="Accept"
                    spellCheck={false}
                    autoComplete="off"
                  />
                )}
              </Field>
              <Field label="Value">
                {(id) => (
                  <input
                    id={id}
                    value={row.value}
                    onChange={(event) => changeHeader(row.key, { value: event.target.value })}
                    placeholder="application/json"
                    spellCheck={false}
                    autoComplete="off"
                  />
                )}
              </Field>
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
              <Field label="Header name">
                {(id) => (
                  <input
                    id={id}
                    value={row.name}
                    onChange={(event) => changeSecretHeader(row.key, { name: event.target.value })}
                    placeholder="Authorization"
                    spellCheck={false}
                    autoComplete="off"
                  />
                )}
              </Field>
              <Field label="Before the secret" optional>
                {(id) => (
                  <input
                    id={id}
                    value={row.prefix}
                    onChange={(event) => changeSecretHeader(row.key, { prefix: event.target.value })}
                    placeholder="Bearer "
                    spellCheck={false}
                    autoComplete="off"
                  />
                )}
              </Field>
              <Field label="Secret">
                {(id) => (
                  <select
                    id={id}
                    value={row.secret}
                    onChange={(event) => changeSecretHeader(row.key, { secret: event.target.value })}
                  >
                    <option value="">(choose)</option>
                    {secretNames.map((secret) => (
                      <option key={secret} value={secret}>
                        {secret}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
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
        <Field
          label="Timeout (ms)"
          optional
          hint={`The whole call, 100 to 60000; default ${DEFAULT_TIMEOUT_MS}.`}
        >
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              inputMode="numeric"
              value={timeout}
              onChange={(event) => setTimeoutText(event.target.value)}
              placeholder={String(DEFAULT_TIMEOUT_MS)}
            />
          )}
        </Field>
        <Field
          label="Largest answer (bytes)"
          optional
          hint={`Default ${DEFAULT_RESPONSE_BYTES} (1 MiB), at most 10 MiB.`}
        >
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              inputMode="numeric"
              value={maxBytes}
              onChange={(event) => setMaxBytes(event.target.value)}
              placeholder={String(DEFAULT_RESPONSE_BYTES)}
            />
          )}
        </Field>
        <Field label="JMESPath on the answer" optional hint="Keeps part of a JSON answer, e.g. items[].name.">
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              value={resultPath}
              onChange={(event) => setResultPath(event.target.value)}
              spellCheck={false}
              autoComplete="off"
            />
          )}
        </Field>
      </fieldset>

      <fieldset className="tool-group">
        <legend>Input schema</legend>
        <label className="check">
          <input
            type="checkbox"
            checked={ownSchema}
            onChange={(event) => toggleOwnSchema(event.target.checked)}
          />
          Write the input schema myself (it must match the arguments)
        </label>
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

      <ErrorMessage error={error} />
      {created && (
        <Notice>
          Created <code>{created.name}</code>: bind it to an exposure from the exposure’s page.
        </Notice>
      )}
      <div className="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create tool'}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
