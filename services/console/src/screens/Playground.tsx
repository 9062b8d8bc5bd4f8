/**
 * The playground: an exposure's tools, resources and prompts used as an agent uses them, through
 * the real gateway. Opening it asks the control plane for a short-lived playground key of the
 * exposure (`POST /api/v2/aeis/{id}/playground-keys`; the exposure's own key is never needed) and
 * connects the MCP SDK's Client to the gateway with it. A tool's run shows its result, structured
 * content, duration and the audit row it wrote (caller `@console`, also in live logs).
 */
import { useEffect, useState, type FormEvent } from 'react';
import type { Aei, AuditEvent, PlaygroundKey } from '@bindery/contracts';
import { PLAYGROUND_CALLER } from '@bindery/contracts/entries';
import { api, withQuery, type Page } from '../api.ts';
import { SelectField, TextField } from '../forms.tsx';
import { listAll } from '../lists.ts';
import { Link } from '../router.tsx';
import { ArgumentsEditor, useArguments } from '../schema-form.tsx';
import { ErrorMessage, JsonTree, Notice, useAction, useLoad } from '../ui.tsx';
import type * as Mcp from '../mcp-session.ts';
import './editing.css';

interface Session {
  client: Mcp.Client;
  catalog: Mcp.Catalog;
  expiresAt: string;
}

export function Playground() {
  const asked = new URLSearchParams(window.location.search).get('exposure') ?? '';
  const aeis = useLoad(() => listAll<Aei>('/api/v2/aeis'), []);
  const [aeiId, setAeiId] = useState(asked);
  const items = aeis.data?.items ?? [];
  const chosen = aeiId || items[0]?.id || '';
  return (
    <>
      <h1>Playground</h1>
      <p className="muted">
        Call an exposure’s tools, read its resources and get its prompts through the gateway, as an agent
        would. Runs are real: writes change data, and every call is audited with caller{' '}
        <code>{PLAYGROUND_CALLER}</code>.
      </p>
      <ErrorMessage error={aeis.error} />
      {aeis.data && items.length === 0 && (
        <p>
          No exposures yet: make one under <Link to="/exposures">Exposures</Link>.
        </p>
      )}
      {items.length > 0 && (
        <div className="form-row">
          <SelectField
            label="Exposure"
            value={chosen}
            onChange={setAeiId}
            options={items.map((aei) => ({
              value: aei.id,
              label: `${aei.name} (${aei.exposure_mode}${aei.status === 'disabled' ? ', disabled' : ''})`,
            }))}
          />
        </div>
      )}
      {chosen !== '' && <Connected key={chosen} aeiId={chosen} />}
    </>
  );
}

function Connected({ aeiId }: { aeiId: string }) {
  const [session, setSession] = useState<Session | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    let closed = false;
    let client: Mcp.Client | undefined;
    setSession(null);
    setError(null);
    (async () => {
      const key = await api<PlaygroundKey>(
        'POST',
        `/api/v2/aeis/${encodeURIComponent(aeiId)}/playground-keys`,
      );
      const mcp = await import('../mcp-session.ts');
      client = await mcp.connect(key.mcp_url, key.api_key);
      if (closed) return;
      const catalog = await mcp.catalog(client);
      if (!closed) setSession({ client, catalog, expiresAt: key.expires_at });
    })().catch((failure: unknown) => {
      if (!closed) setError(failure);
    });
    return () => {
      closed = true;
      void client?.close();
    };
  }, [aeiId, attempt]);

  if (error) {
    return (
      <section className="card">
        <ErrorMessage error={error} />
        <button type="button" onClick={() => setAttempt((count) => count + 1)}>
          Connect again
        </button>
      </section>
    );
  }
  if (!session) return <p className="loading">Connecting to the gateway…</p>;
  const { catalog } = session;
  return (
    <>
      <p className="muted" data-testid="playground-session">
        Connected: {catalog.tools.length} tools, {catalog.resources.length} resources,{' '}
        {catalog.prompts.length} prompts. The playground key expires at{' '}
        {new Date(session.expiresAt).toLocaleTimeString()}.{' '}
        <button type="button" className="secondary small" onClick={() => setAttempt((count) => count + 1)}>
          Reconnect
        </button>
      </p>
      {catalog.truncated && <Notice>Only the first pages of a long list are shown.</Notice>}
      <ToolsPanel aeiId={aeiId} client={session.client} tools={catalog.tools} />
      {catalog.resources.length > 0 && (
        <ResourcesPanel client={session.client} resources={catalog.resources} />
      )}
      {catalog.prompts.length > 0 && <PromptsPanel client={session.client} prompts={catalog.prompts} />}
    </>
  );
}

function ToolsPanel({ aeiId, client, tools }: { aeiId: string; client: Mcp.Client; tools: Mcp.Tool[] }) {
  const [name, setName] = useState(tools[0]?.name ?? '');
  const tool = tools.find((item) => item.name === name);
  return (
    <section className="card" aria-labelledby="playground-tools">
      <h2 id="playground-tools">Tools</h2>
      {tools.length === 0 ? (
        <p>
          This exposure serves no tools: bind and enable one on its{' '}
          <Link to={`/exposures/${encodeURIComponent(aeiId)}`}>page</Link>.
        </p>
      ) : (
        <>
          <div className="form-row">
            <SelectField
              label="Tool"
              value={name}
              onChange={setName}
              options={tools.map((item) => item.name)}
            />
          </div>
          {tool && <ToolRunner key={tool.name} aeiId={aeiId} client={client} tool={tool} />}
        </>
      )}
    </section>
  );
}

interface Run {
  result: Mcp.CallToolResult;
  durationMs: number;
  startedAt: number;
}

/** The audit row of a run: the newest row of this tool by the playground since the run began. */
async function auditRowOf(aeiId: string, tool: string, startedAt: number): Promise<AuditEvent | null> {
  for (let attempt = 0; attempt < 6; attempt += 1) {
    const page = await api<Page<AuditEvent>>(
      'GET',
      withQuery('/api/v2/audit', { aei_id: aeiId, caller: PLAYGROUND_CALLER, limit: 20 }),
    );
    // Clocks of browser and server differ a little: a few seconds of slack.
    const row = page.items.find(
      (item) => item.tool_name === tool && Date.parse(item.created_at) >= startedAt - 5_000,
    );
    if (row) return row;
    await new Promise((resolve) => setTimeout(resolve, 250 * (attempt + 1)));
  }
  return null;
}

function ToolRunner({ aeiId, client, tool }: { aeiId: string; client: Mcp.Client; tool: Mcp.Tool }) {
  const args = useArguments(tool.inputSchema);
  const [run, setRun] = useState<Run | null>(null);
  const [audit, setAudit] = useState<{ row: AuditEvent | null; error: unknown } | null>(null);
  const action = useAction();
  const { busy, error } = action;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!args.checked.ok) return;
    const checked = args.checked.value as Record<string, unknown>;
    setRun(null);
    setAudit(null);
    const startedAt = Date.now();
    const started = performance.now();
    await action.run(async () => {
      const result = (await client.callTool({ name: tool.name, arguments: checked })) as Mcp.CallToolResult;
      setRun({ result, durationMs: performance.now() - started, startedAt });
      auditRowOf(aeiId, tool.name, startedAt).then(
        (row) => setAudit({ row, error: null }),
        (failure: unknown) => setAudit({ row: null, error: failure }),
      );
    });
  };
  return (
    <form onSubmit={(event) => void submit(event)} aria-label={`Run ${tool.name}`} className="runner">
      {tool.description && <p>{tool.description}</p>}
      <details>
        <summary>Input schema</summary>
        <pre tabIndex={0}>{JSON.stringify(tool.inputSchema, null, 2)}</pre>
      </details>
      <ArgumentsEditor state={args} />
      <div className="actions">
        <button type="submit" disabled={busy || !args.checked.ok}>
          {busy ? 'Running…' : 'Run'}
        </button>
      </div>
      <ErrorMessage error={error} />
      {run && <RunResult run={run} />}
      {audit && (
        <div className="audit-row" data-testid="run-audit">
          <h3>Audit row</h3>
          <ErrorMessage error={audit.error} />
          {audit.row === null && audit.error === null && <p className="muted">No audit row found yet.</p>}
          {audit.row && (
            <dl className="facts">
              <dt>Status</dt>
              <dd data-testid="audit-status">{audit.row.status}</dd>
              <dt>Tool</dt>
              <dd>{audit.row.tool_name}</dd>
              <dt>Caller</dt>
              <dd>{audit.row.caller ?? '—'}</dd>
              <dt>Duration (server)</dt>
              <dd>{audit.row.duration_ms === null ? '—' : `${audit.row.duration_ms} ms`}</dd>
              {audit.row.error_code && (
                <>
                  <dt>Error code</dt>
                  <dd>{audit.row.error_code}</dd>
                </>
              )}
              <dt>Request</dt>
              <dd>
                <code>{audit.row.request_id ?? '—'}</code>
              </dd>
              <dt>At</dt>
              <dd>{new Date(audit.row.created_at).toLocaleString()}</dd>
            </dl>
          )}
          <p>
            <Link to="/logs">Open live logs</Link>
          </p>
        </div>
      )}
    </form>
  );
}

function RunResult({ run }: { run: Run }) {
  const { result } = run;
  return (
    <div className="run-result" data-testid="run-result">
      <h3>
        Result{' '}
        <span className={`badge ${result.isError ? 'bad' : 'good'}`}>
          {result.isError ? 'tool error' : 'ok'}
        </span>{' '}
        <span className="muted" data-testid="run-duration">
          {run.durationMs.toFixed(0)} ms
        </span>
      </h3>
      {result.content.map((item, index) =>
        item.type === 'text' ? (
          <pre key={index} tabIndex={0}>
            {item.text}
          </pre>
        ) : (
          <details key={index}>
            <summary>{item.type} content</summary>
            <pre tabIndex={0}>{JSON.stringify(item, null, 2)}</pre>
          </details>
        ),
      )}
      {result.structuredContent !== undefined && (
        <details open>
          <summary>Structured content</summary>
          <JsonTree value={result.structuredContent} />
        </details>
      )}
      {result._meta !== undefined && (
        <details>
          <summary>_meta</summary>
          <pre tabIndex={0}>{JSON.stringify(result._meta, null, 2)}</pre>
        </details>
      )}
    </div>
  );
}

function ResourcesPanel({ client, resources }: { client: Mcp.Client; resources: Mcp.Resource[] }) {
  const [read, setRead] = useState<{ uri: string; answer: Mcp.ReadResourceResult } | null>(null);
  const { error, run } = useAction();
  const open = (uri: string) => run(async () => setRead({ uri, answer: await client.readResource({ uri }) }));
  return (
    <section className="card" aria-labelledby="playground-resources">
      <h2 id="playground-resources">Resources</h2>
      <ul className="resource-list">
        {resources.map((resource) => (
          <li key={resource.uri}>
            <button type="button" className="secondary small" onClick={() => void open(resource.uri)}>
              Read
            </button>{' '}
            <strong>{resource.name}</strong> <code>{resource.uri}</code>
            {resource.mimeType && <span className="muted"> {resource.mimeType}</span>}
          </li>
        ))}
      </ul>
      <ErrorMessage error={error} />
      {read && (
        <div data-testid="resource-contents">
          <h3>
            <code>{read.uri}</code>
          </h3>
          {read.answer.contents.map((content, index) =>
            'text' in content ? (
              <pre key={index} tabIndex={0}>
                {content.text}
              </pre>
            ) : (
              <p key={index} className="muted">
                Binary content ({content.mimeType ?? 'no type'}), {Math.floor((content.blob.length * 3) / 4)}{' '}
                bytes.
              </p>
            ),
          )}
        </div>
      )}
    </section>
  );
}

function PromptsPanel({ client, prompts }: { client: Mcp.Client; prompts: Mcp.Prompt[] }) {
  const [name, setName] = useState(prompts[0]?.name ?? '');
  const [values, setValues] = useState<Record<string, string>>({});
  const [answer, setAnswer] = useState<Mcp.GetPromptResult | null>(null);
  const { error, run } = useAction();
  const prompt = prompts.find((item) => item.name === name);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const args = Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ''));
    setAnswer((await run(() => client.getPrompt({ name, arguments: args }))) ?? null);
  };
  return (
    <section className="card" aria-labelledby="playground-prompts">
      <h2 id="playground-prompts">Prompts</h2>
      <form className="form-grid" onSubmit={(event) => void submit(event)} aria-label="Get a prompt">
        <SelectField
          label="Prompt"
          value={name}
          onChange={(value) => {
            setName(value);
            setValues({});
            setAnswer(null);
          }}
          options={prompts.map((item) => item.name)}
        />
        {prompt?.description && <p className="muted">{prompt.description}</p>}
        {prompt?.arguments?.map((argument) => (
          <TextField
            key={argument.name}
            label={argument.name}
            optional={!argument.required}
            hint={argument.description}
            value={values[argument.name] ?? ''}
            onChange={(value) => setValues((previous) => ({ ...previous, [argument.name]: value }))}
            literal={false}
            autoComplete="off"
          />
        ))}
        <div className="actions">
          <button type="submit">Get prompt</button>
        </div>
      </form>
      <ErrorMessage error={error} />
      {answer && (
        <ol className="prompt-messages" data-testid="prompt-messages">
          {answer.messages.map((message, index) => (
            <li key={index}>
              <strong>{message.role}</strong>
              <pre tabIndex={0}>
                {message.content.type === 'text'
                  ? message.content.text
                  : JSON.stringify(message.content, null, 2)}
              </pre>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
