/**
 * A modern (MCP 2026-07-28) request, served statelessly: no session is made or read. The same
 * capability modules as a legacy session's server (`capabilities/`) register their handlers on a
 * table for this one request, with the request's own log level; `server/discover` answers the
 * versions, capabilities and identity. Every result carries `resultType`, the server's identity in
 * `_meta`, and, for lists and reads, how long it may be cached (`ttlMs`, `cacheScope`). Progress
 * and log messages travel on the request's own response as server-sent events; a client that
 * closes that response cancels the request.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import {
  ErrorCode,
  McpError,
  type RequestId,
  type ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { EVENT_STREAM_HEADERS, sseEvent } from '../../http/event-stream.ts';
import { JSONRPC } from '../../http/jsonrpc-errors.ts';
import { registerCompletion } from '../capabilities/completion.ts';
import { registerPrompts } from '../capabilities/prompts.ts';
import { registerResources } from '../capabilities/resources.ts';
import { registerTools } from '../capabilities/tools.ts';
import { HandlerTable, type RequestExtra } from '../handler-table.ts';
import { INSTRUCTIONS, SERVER_INFO } from '../server.ts';
import { sessionContext, type McpServerDeps } from '../session-context.ts';
import type { SessionRegistry } from '../sessions.ts';
import {
  META,
  MODERN_ERRORS,
  header,
  MODERN_PROTOCOL_VERSIONS,
  type Envelope,
  type ModernRequest,
} from './envelope.ts';
import { inputCapabilitiesOf, modernInputOf, retryOf } from '../tools/client-input.ts';
import { listenFilterOf } from './listen.ts';
import { declaresTasks, isTaskMethod, serveTask, tasksNotDeclared } from './tasks.ts';
import { TASKS_EXTENSION } from '@bindery/contracts';

/** Results a client may cache, and for how long (`server/utilities/caching.mdx`). */
const CACHEABLE: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/** The requests whose handlers may answer input_required (MRTR): tools, and upstream prompts and resources. */
const INPUT_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** The capabilities a modern client is told of (`server/discover`); changes come on `subscriptions/listen`. */
const CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { listChanged: true, subscribe: true },
  completions: {},
  logging: {},
  // An upstream tool may answer with a task, relayed under a handle of ours (tasks.ts).
  extensions: { [TASKS_EXTENSION]: {} },
};

export interface ModernDeps {
  /** What a legacy session's server is built from (the session id hint is unused here). */
  server: Omit<McpServerDeps, 'sessionIdHint' | 'initial'>;
  /** How long the gateway keeps an exposure's config before asking again: the results' `ttlMs`. */
  cacheTtlMs: number;
  /** Where listen streams are held (beside the legacy sessions, under their caps). */
  sessions: SessionRegistry;
  /** The hash of the key the request came with (listen streams count by it). */
  keyHash: string;
}

/** The handlers a modern request may reach, set up for this one request. */
function handlersFor(deps: ModernDeps, envelope: Envelope): HandlerTable {
  // Log messages only at the level the request asked for, and none when it asked for none.
  const session = sessionContext({
    ...deps.server,
    sessionIdHint: undefined,
    logLevel: envelope.logLevel ?? null,
  });
  const table = new HandlerTable();
  registerTools(table, session, modernInputOf);
  registerResources(table, session, modernInputOf);
  registerPrompts(table, session, modernInputOf);
  registerCompletion(table, session);
  return table;
}

/** The answer of a request the server does not offer (including the legacy era's own methods). */
const methodNotFound = (method: string) =>
  new McpError(ErrorCode.MethodNotFound, `Method not found: ${method.slice(0, 100)}`);

/**
 * Answers `message` on `res`: JSON, or an event stream once a notification is sent before the
 * result (when the client accepts one).
 */
export async function serveModern(
  res: ServerResponse,
  headers: IncomingHttpHeaders,
  message: ModernRequest,
  envelope: Envelope,
  deps: ModernDeps,
): Promise<void> {
  if (message.id === undefined) {
    // A notification: nothing to answer (none is defined from client to server over HTTP).
    res.writeHead(202).end();
    return;
  }
  const id = message.id;
  // The client left while the request was admitted: nothing is run for it.
  if (res.destroyed || res.writableEnded) return;
  if (message.method === 'subscriptions/listen') {
    await listen(res, id, message, envelope, deps);
    return;
  }
  const stream = new ResponseStream(res, (headers.accept ?? '').includes('text/event-stream'));
  const cancel = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) cancel.abort();
  });
  try {
    const result = await dispatch(message, envelope, deps, {
      requestId: id,
      signal: cancel.signal,
      sendNotification: (notification) => stream.notify(notification),
      // Its Mcp-Param-* headers are checked against the tool's marked arguments (tools/call.ts).
      // Only those: the others, credentials among them, stay here.
      ...(message.method === 'tools/call' && {
        paramHeader: (name: string) => (name.startsWith('mcp-param-') ? header(headers, name) : undefined),
      }),
      // Tools may ask the client what it declared; the answers of a retry come with the request.
      ...(INPUT_METHODS.has(message.method) && {
        input: {
          capabilities: inputCapabilitiesOf(envelope.clientCapabilities),
          ...retryOf(message.params),
          // A tools/call of a client that takes tasks: a task made for it is bound to its credential.
          ...(message.method === 'tools/call' &&
            declaresTasks(envelope.clientCapabilities) && { tasks: deps.keyHash }),
        },
      }),
    });
    stream.finish({ jsonrpc: '2.0', id, result: stamped(message.method, result, deps.cacheTtlMs) });
  } catch (error) {
    const mcp = error instanceof McpError ? error : undefined;
    if (mcp?.code === ErrorCode.MethodNotFound && !stream.started) {
      stream.finish({ jsonrpc: '2.0', id, error: { code: mcp.code, message: mcp.message } }, 404);
      return;
    }
    // The spec's status for a capability the client did not declare, and for headers that do not
    // match the body (Mcp-Param-*, tools/call.ts).
    if (
      mcp?.code === MODERN_ERRORS.MISSING_REQUIRED_CLIENT_CAPABILITY ||
      (mcp?.code === MODERN_ERRORS.HEADER_MISMATCH && !stream.started)
    ) {
      stream.finish({ jsonrpc: '2.0', id, error: errorOf(mcp) }, 400);
      return;
    }
    if (!mcp) deps.server.log.error({ err: error }, 'modern request failed');
    stream.finish({ jsonrpc: '2.0', id, error: errorOf(mcp) });
  }
}

/** Opens a listen stream, or answers why not (a bad filter, no room). */
async function listen(
  res: ServerResponse,
  id: RequestId,
  message: ModernRequest,
  envelope: Envelope,
  deps: ModernDeps,
): Promise<void> {
  const answer = (status: number, error: { code: number; message: string; data?: unknown }) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, error }));
  };
  const filter = listenFilterOf(message.params);
  if (typeof filter === 'string') {
    answer(200, { code: ErrorCode.InvalidParams, message: `Invalid params: ${filter}` });
    return;
  }
  // Task status notifications are the tasks extension's: a client that did not declare it is refused.
  if (filter.taskIds !== undefined && !declaresTasks(envelope.clientCapabilities)) {
    const refusal = tasksNotDeclared('notifications.taskIds');
    answer(400, { code: refusal.code, message: refusal.message, data: refusal.data });
    return;
  }
  const full = deps.sessions.listenRefusal(deps.keyHash);
  if (full) {
    res.setHeader('retry-after', '1');
    answer(full.status, { code: full.code, message: full.message });
    return;
  }
  // Its own view of the exposure: what its prompt and resource list changes compare with.
  const session = sessionContext({ ...deps.server, sessionIdHint: undefined });
  const exposure = await session.exposure();
  // While the exposure was looked up, the client may have left, or other streams taken the room.
  if (res.destroyed || res.writableEnded) return;
  const taken = deps.sessions.listenRefusal(deps.keyHash);
  if (taken) {
    res.setHeader('retry-after', '1');
    answer(taken.status, { code: taken.code, message: taken.message });
    return;
  }
  await deps.sessions.listens.open(
    res,
    {
      keyHash: deps.keyHash,
      subscriptionId: id,
      filter,
      exposure,
      resolve: session.resolve,
      listsChanged: session.listsChanged,
      ...(filter.taskIds !== undefined && {
        tasks: async (taskId: string, followUp: boolean) => {
          // Following a task spends the key's execute budget, as the agent's own polls would.
          const budget = deps.server.progressive;
          if (followUp && budget.executeLimiter.take(`key:${budget.keyHash}`) > 0) return 'later';
          try {
            return await serveTask('tasks/get', { taskId }, taskContext(deps, envelope, id));
          } catch (error) {
            // Not found for this caller (or no longer): not followed.
            if (error instanceof McpError && error.code === ErrorCode.InvalidParams) return undefined;
            throw error;
          }
        },
      }),
    },
    deps.sessions.subscriptions,
  );
}

async function dispatch(
  message: ModernRequest,
  envelope: Envelope,
  deps: ModernDeps,
  extra: RequestExtra,
): Promise<Record<string, unknown>> {
  if (message.method === 'server/discover') {
    return {
      supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
      capabilities: CAPABILITIES,
      instructions: INSTRUCTIONS,
    };
  }
  if (isTaskMethod(message.method)) {
    return serveTask(
      message.method,
      message.params,
      taskContext(deps, envelope, extra.requestId, extra.signal),
    );
  }
  const table = handlersFor(deps, envelope);
  if (!table.has(message.method)) throw methodNotFound(message.method);
  const parsed = table.parse(message.method, message);
  if (!parsed.ok) throw new McpError(ErrorCode.InvalidParams, parsed.message);
  return (await table.run(message.method, parsed.request, extra)) as Record<string, unknown>;
}

/** What a tasks/* request of this key is served with (tasks.ts), for request `id`. */
function taskContext(
  deps: ModernDeps,
  envelope: Envelope,
  id: RequestId,
  signal?: AbortSignal,
): Parameters<typeof serveTask>[2] {
  return {
    clientCapabilities: envelope.clientCapabilities,
    exposure: () => deps.server.exposure(),
    client: deps.server.client,
    holder: deps.keyHash,
    requestId: `stateless:${String(id)}`,
    signal,
  };
}

/** A result as the modern era sends it: its type, the server's identity and, where it applies, its cache life. */
function stamped(method: string, result: Record<string, unknown>, ttlMs: number): Record<string, unknown> {
  const meta = (result._meta ?? {}) as Record<string, unknown>;
  return {
    ...result,
    // input_required (MRTR) and task (a tools/call an upstream answered with a task) are passed on.
    resultType:
      result.resultType === 'input_required' || (method === 'tools/call' && result.resultType === 'task')
        ? result.resultType
        : 'complete',
    // A round asking for input is no answer to keep.
    ...(CACHEABLE.has(method) && result.resultType !== 'input_required' && { ttlMs, cacheScope: 'private' }),
    _meta: { ...meta, [META.serverInfo]: SERVER_INFO },
  };
}

/**
 * The JSON-RPC error of a failed request. A missing resource is -32602 with its URI in the modern
 * era (-32002 before it).
 */
function errorOf(error: McpError | undefined): { code: number; message: string; data?: unknown } {
  if (!error) {
    return {
      code: JSONRPC.INTERNAL_ERROR,
      message: 'internal error in the gateway (it is logged); try again',
    };
  }
  const code = error.code === JSONRPC.RESOURCE_NOT_FOUND ? ErrorCode.InvalidParams : error.code;
  // McpError prefixes its message with "MCP error <code>: "; the client gets the reason alone.
  const text = error.message.replace(/^MCP error -?\d+: /, '');
  return { code, message: text, ...(error.data !== undefined && { data: error.data }) };
}

/** One request's response: a JSON answer, or an event stream once a notification goes first. */
class ResponseStream {
  started = false;
  constructor(
    private readonly res: ServerResponse,
    private readonly acceptsEvents: boolean,
  ) {}

  /** Sends a notification before the result (dropped when the client takes JSON only). */
  async notify(notification: ServerNotification): Promise<void> {
    if (!this.acceptsEvents || this.res.writableEnded || this.res.destroyed) return;
    if (!this.started) {
      this.started = true;
      this.res.writeHead(200, EVENT_STREAM_HEADERS);
    }
    this.res.write(sseEvent(JSON.stringify({ jsonrpc: '2.0', ...notification })));
  }

  finish(answer: object, status = 200): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (this.started) {
      this.res.end(sseEvent(JSON.stringify(answer)));
      return;
    }
    this.res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    this.res.end(JSON.stringify(answer));
  }
}
