/**
 * One running instance of an upstream server: an MCP SDK (v2) `Client` over stdio (a child process
 * of the control plane) or Streamable HTTP (falling back to the legacy SSE transport when the server
 * refuses the first). The client speaks either protocol era: it probes with `server/discover` (the
 * 2026-07-28 era) and falls back to `initialize` (the 2025 era) when the server does not answer it
 * as a modern server would; the pool remembers the era and hands it to the next start, which then
 * skips the probe. The pool (pool.ts) decides when instances start and stop; an instance only
 * connects, forwards requests with their deadline and cancellation, keeps its child's stderr in a
 * bounded ring, and closes: a stdio child is always killed and waited for (the SDK ends its stdin,
 * then SIGTERM, then SIGKILL), so none is left behind.
 */
import { randomBytes } from 'node:crypto';
import { activeCarrier } from '@bindery/service-kit';
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type AuthProvider,
  type DiscoverResult,
  type McpSubscription,
  type ServerCapabilities,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
// The v1 package's zod schemas check results and list entries: a refused answer reads as zod's
// issues (see answered), the same on both eras.
import {
  CallToolResultSchema,
  CompleteResultSchema,
  GetPromptResultSchema,
  PromptSchema,
  ReadResourceResultSchema,
  ResourceSchema,
  ResourceTemplateSchema,
  ResultSchema,
  ToolSchema,
  type CallToolResult,
  type CompleteRequest,
  type CompleteResult,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import {
  MAX_INPUT_KEY_CHARS,
  MAX_INPUT_RESPONSES,
  printable,
  type ClientInputCapability,
  type ToolProgress,
} from '@bindery/contracts';
import type { Dispatcher } from 'undici';
import { AnswerTooLarge, boundedFetch } from './bounded-fetch.ts';
import type { TransportSpec } from './spec.ts';
import {
  carriedTask,
  carryTask,
  checkedTask,
  withTasksExtension,
  type TaskCreated,
  type UpstreamTask,
} from './upstream-tasks.ts';

/** Lines of a child's stderr kept per pool, and the longest line kept whole. */
export const STDERR_LINES = 200;
const STDERR_LINE_CHARS = 2000;

export interface LogLine {
  at: string;
  stream: 'stderr';
  text: string;
}

/** The newest lines a pool's children wrote to stderr, bounded in lines and line length. */
export class StderrRing {
  private readonly lines: LogLine[] = [];
  dropped = 0;

  push(text: string): void {
    this.lines.push({
      at: new Date().toISOString(),
      stream: 'stderr',
      text: text.length > STDERR_LINE_CHARS ? `${text.slice(0, STDERR_LINE_CHARS)}…` : text,
    });
    if (this.lines.length > STDERR_LINES) {
      this.lines.shift();
      this.dropped += 1;
    }
  }

  snapshot(): LogLine[] {
    return [...this.lines];
  }
}

export interface InstanceHooks {
  /** The upstream announced that its tool list changed. */
  toolsChanged(): void;
  /** The upstream announced that its resource or prompt list changed. */
  catalogChanged(list: 'resources' | 'prompts'): void;
  /** The upstream announced that a resource subscribed to changed (`notifications/resources/updated`). */
  resourceUpdated?(uri: string): void;
  /** The connection ended without being asked to (the child exited, the stream broke). */
  closed(instance: UpstreamInstance): void;
  /** A line the child wrote to stderr. */
  stderr(line: string): void;
}

/** What one upstream may send at most (UPSTREAM_MESSAGE_MAX_BYTES, UPSTREAM_CALL_MAX_BYTES). */
export interface AnswerCaps {
  /** One message: a JSON body, an SSE event, a stdio line. */
  maxMessageBytes: number;
  /** Everything one request brings back: its progress reports and its result. */
  maxCallBytes: number;
}

/**
 * The protocol era an upstream server was found to speak: `modern` (2026-07-28, stateless, found
 * by `server/discover`) or `legacy` (the 2025 era's `initialize` and session).
 */
export type ProtocolEra = 'modern' | 'legacy';

/** What a start learned of the server's era, handed to the next start so it skips the probe. */
export type KnownEra = { era: 'modern'; discover: DiscoverResult } | { era: 'legacy' };

export interface ConnectOptions {
  transport: TransportSpec;
  /** A server that requires OAuth: the person's bearer token, refreshed on a 401 (upstream-oauth.ts). */
  authProvider?: AuthProvider;
  /** The era an earlier start found; absent: probe (modern first, then legacy). */
  knownEra?: KnownEra | undefined;
  /** The guarded dispatcher HTTP upstreams are reached through (the SSRF guard). */
  outbound: Dispatcher;
  /** How long the handshake may take. */
  timeoutMs: number;
  /** The longest a request on this instance may take (the answer to a POST is cut after it). */
  requestTimeoutMs: number;
  caps: AnswerCaps;
  hooks: InstanceHooks;
  /**
   * What this connection tells the server its client can be asked (a connection that relays the
   * questions of one call at a time to the agent behind it, UpstreamInstance.asker); absent: nothing.
   */
  asks?: readonly ClientInputCapability[] | undefined;
}

/** The requests a 2025-era server sends its client, by the capability that allows each. */
const ASKED_BY: Record<
  ClientInputCapability,
  'elicitation/create' | 'sampling/createMessage' | 'roots/list'
> = {
  elicitation: 'elicitation/create',
  sampling: 'sampling/createMessage',
  roots: 'roots/list',
};

/** Who answers what the server asks its client: the one call this connection runs for an agent. */
export interface Asker {
  ask(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
}

const CLIENT_INFO = { name: 'bindery-control-plane', version: '0.1.0' };

/**
 * The SDK's stdio transport under our own name. The SDK probes its own class (exactly) on a
 * short-lived sibling process whose stderr it discards; a subclass is probed in place, on the one
 * child whose stderr we keep, whose lines our read buffer caps, and that the pool counts and reaps.
 */
class UpstreamStdioTransport extends StdioClientTransport {}

/** Reads a stream line by line, handing each (without its end) to `line`; partial lines bounded. */
function eachLine(stream: NodeJS.ReadableStream, line: (text: string) => void): void {
  let pending = '';
  stream.setEncoding?.('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    let at: number;
    while ((at = pending.indexOf('\n')) >= 0) {
      line(pending.slice(0, at).replace(/\r$/, ''));
      pending = pending.slice(at + 1);
    }
    if (pending.length > STDERR_LINE_CHARS * 4) {
      line(pending);
      pending = '';
    }
  });
  stream.on('end', () => {
    if (pending !== '') line(pending);
  });
}

/** How long a dropped upstream listen stream waits before it is opened again. */
const RELISTEN_AFTER_MS = 1_000;

/**
 * What names this process's instances apart from any other process's (a task handle names the
 * instance that made its task, and outlives a restart), and how many it started so far.
 */
const PROCESS_TAG = randomBytes(6).toString('base64url');
let started = 0;

export class UpstreamInstance {
  /** Names this instance among every process's (a task made on a stdio server lives in its child). */
  readonly id = `${PROCESS_TAG}.${(started += 1)}`;
  /**
   * The tasks made on this instance (a stdio child: they die with it) that may still be asked, by
   * the upstream's id, with until when (milliseconds since the epoch): while any may, the
   * instance is not stopped as idle. A task seen ended is let go (UpstreamPool.task).
   */
  readonly heldTasks = new Map<string, number>();
  inFlight = 0;
  lastUsedAt = Date.now();
  /** The MCP session this instance serves in `per_session` mode ('' : shared by every caller). */
  session = '';
  /**
   * Who answers the server's requests to its client now (a connection made with `asks`, while it
   * runs one call); none: the server is told its request cannot be answered.
   */
  asker: Asker | undefined;
  /** Told each stderr line of this instance (the calls of its one session in flight). */
  readonly stderrListeners = new Set<(line: string) => void>();
  /**
   * Told the server's log messages (`notifications/message`) on a connection of one caller (a
   * `per_session` session's, or one relaying a caller's questions) while exactly one call runs here
   * and listens: the 2025 era does not say which call a message is about, so on a connection shared
   * by callers, or with more than one call in flight, none is told (no caller hears another's lines).
   */
  readonly logListeners = new Set<(message: { level: unknown; data: unknown }) => void>();
  /**
   * A modern connection's one request that asked for log messages (its `_meta` logLevel), told
   * every `notifications/message` while it runs: the 2026-07-28 era sends them only for a request
   * that asks (logging.mdx), so while one holds this slot every message is its own. Another call
   * that wants them meanwhile goes without (no caller hears another's lines).
   */
  private logSlot: ((message: { level: unknown; data: unknown }) => void) | undefined;
  private closing = false;
  /**
   * Set when the connection was closed because the upstream sent more than a cap allows (a stdio
   * line, an SSE event of a stream that answers no one request): what the requests it carried
   * fail with, instead of "connection closed".
   */
  cutBy: AnswerTooLarge | undefined;

  private constructor(
    private readonly client: Client,
    private readonly transport: Transport,
    readonly pid: number | null,
    private readonly caps: AnswerCaps,
  ) {}

  /** Starts the instance and completes the MCP handshake within `timeoutMs`. */
  static async connect(options: ConnectOptions): Promise<UpstreamInstance> {
    const { transport: spec } = options;
    if (spec.transport === 'stdio') {
      const transport = new UpstreamStdioTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        ...(spec.cwd !== null && { cwd: spec.cwd }),
        stderr: 'pipe',
        // The SDK's read buffer refuses a line past it, and closes the transport (see cutBy).
        maxBufferSize: options.caps.maxMessageBytes,
      });
      const stderr = transport.stderr;
      if (stderr) eachLine(stderr as unknown as NodeJS.ReadableStream, (line) => options.hooks.stderr(line));
      return UpstreamInstance.handshake(transport, options, () => transport.pid, new CutRelay());
    }
    const url = new URL(spec.url);
    const requestInit = { headers: spec.headers };
    const streamable = new CutRelay();
    try {
      return await UpstreamInstance.handshake(
        new StreamableHTTPClientTransport(url, {
          requestInit,
          fetch: streamable.fetch(options),
          // A missing scope is the person's to grant in the console: never a redirect loop here.
          ...(options.authProvider && { authProvider: options.authProvider, onInsufficientScope: 'throw' }),
        }),
        options,
        () => null,
        streamable,
      );
    } catch (error) {
      // A server of the older protocol answers the Streamable POST with 4xx (404, 405): try SSE.
      if (!refusedAsOldProtocol(error)) throw error;
      const legacy = new CutRelay();
      const fetch = legacy.fetch(options);
      // The SSE transport is the 2025 era's alone: no probe on it.
      return UpstreamInstance.handshake(
        new SSEClientTransport(url, {
          requestInit,
          fetch,
          eventSourceInit: { fetch },
          ...(options.authProvider && { authProvider: options.authProvider }),
        }),
        { ...options, knownEra: { era: 'legacy' } },
        () => null,
        legacy,
      );
    }
  }

  private static async handshake(
    transport: Transport,
    options: ConnectOptions,
    pidOf: () => number | null,
    cuts: CutRelay,
  ): Promise<UpstreamInstance> {
    const asks = options.asks ?? [];
    const client = new Client(CLIENT_INFO, {
      capabilities: Object.fromEntries(asks.map((capability) => [capability, {}])),
      // Modern first, legacy when the server does not answer server/discover as a modern one. A
      // stdio server silent to the probe is taken for legacy after half the start's time.
      versionNegotiation: { mode: 'auto', probe: { timeoutMs: Math.ceil(options.timeoutMs / 2) } },
    });
    cuts.transport = transport;
    // Set once connected: a close before that is the failed start's, reported by connect itself.
    const connected: { instance?: UpstreamInstance } = {};
    // A legacy server announces list changes on its session; a modern one has none to announce
    // them on (it would need subscriptions/listen): its lists are refreshed by the periodic sync.
    client.setNotificationHandler('notifications/tools/list_changed', () => options.hooks.toolsChanged());
    client.setNotificationHandler('notifications/resources/list_changed', () =>
      options.hooks.catalogChanged('resources'),
    );
    client.setNotificationHandler('notifications/prompts/list_changed', () =>
      options.hooks.catalogChanged('prompts'),
    );
    client.setNotificationHandler('notifications/message', (notification) => {
      const instance = connected.instance;
      if (!instance) return;
      const params = (notification.params ?? {}) as { level?: unknown; data?: unknown };
      const message = { level: params.level, data: params.data };
      if (instance.era === 'modern') {
        instance.logSlot?.(message);
        return;
      }
      if (instance.session === '' || instance.inFlight !== 1 || instance.logListeners.size !== 1) return;
      for (const listener of instance.logListeners) listener(message);
    });
    client.setNotificationHandler('notifications/resources/updated', (notification) => {
      const uri = (notification.params as { uri?: unknown } | undefined)?.uri;
      if (typeof uri === 'string') options.hooks.resourceUpdated?.(uri);
    });
    for (const capability of asks) {
      const method = ASKED_BY[capability];
      client.setRequestHandler(
        method,
        (request: { params?: unknown }, ctx: { mcpReq: { signal: AbortSignal } }) => {
          const asker = connected.instance?.asker;
          // A request that no call of ours asks (it came between calls): the server is refused.
          if (!asker)
            throw new ProtocolError(
              ProtocolErrorCode.InternalError,
              `no call of this client is waiting for ${method}`,
            );
          return asker.ask(
            method,
            (request.params ?? {}) as Record<string, unknown>,
            ctx.mcpReq.signal,
          ) as never;
        },
      );
    }
    client.onclose = () => {
      const instance = connected.instance;
      if (instance && !instance.closing) options.hooks.closed(instance);
    };
    // Errors of the transport also end up closing it; requests in flight fail with them. The
    // one that says a stdio line passed the read buffer's cap comes just before that close.
    client.onerror = (error) => {
      if (STDIO_LINE_TOO_LONG.test(error.message)) {
        cuts.record(new AnswerTooLarge(options.caps.maxMessageBytes, 'message'));
      }
    };
    // The deadline closes the transport: `initialize` must not be cancelled (the spec forbids it),
    // and the SDK's own timeout or signal would send notifications/cancelled for it (the signal
    // even after the answer came). The SDK's timeout is set past ours, so ours always ends it.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void transport.close().catch(() => {});
    }, options.timeoutMs);
    try {
      const known = options.knownEra;
      await client.connect(transport, {
        timeout: options.timeoutMs + HANDSHAKE_SDK_SLACK_MS,
        ...(known && {
          prior: known.era === 'modern' ? { kind: 'modern', discover: known.discover } : { kind: 'legacy' },
        }),
      });
    } catch (error) {
      await transport.close().catch(() => {});
      if (timedOut) throw new HandshakeTimeout(options.timeoutMs);
      throw cuts.errorOf(error);
    } finally {
      clearTimeout(timer);
    }
    if (timedOut) {
      await transport.close().catch(() => {});
      throw new HandshakeTimeout(options.timeoutMs);
    }
    // A tools/call answered with a task gets past the SDK's decoding in _meta (upstream-tasks.ts).
    // The SDK hands a notification to its handler a microtask after it arrives but settles an
    // answer at once, and a transport hands over every message of one read in one go: a call's
    // last progress report or log line, read with its answer, would come after the call ended and
    // be dropped. An answer waits one microtask, behind what came before it.
    const delivered = transport.onmessage;
    if (delivered)
      transport.onmessage = (message, extra) => {
        const carried = carryTask(message);
        if ('method' in carried) delivered(carried, extra);
        else queueMicrotask(() => delivered(carried, extra));
      };
    connected.instance = new UpstreamInstance(client, transport, pidOf(), options.caps);
    cuts.instance = connected.instance;
    return connected.instance;
  }

  /**
   * What a request on this instance failed with: a cut (of its own answer, or of the connection
   * it was on) is told as the cap it passed, not as a closed connection.
   */
  failureOf(error: unknown): unknown {
    const cut = answerTooLargeIn(error);
    if (cut) return cut;
    if (this.cutBy && requestFailure(error) === 'closed') return this.cutBy;
    return error;
  }

  get alive(): boolean {
    return !this.closing;
  }

  /** The era the connection speaks (negotiated at connect). */
  get era(): ProtocolEra {
    return this.client.getProtocolEra() ?? 'legacy';
  }

  /** The protocol version the connection speaks: `2026-07-28`, or the one `initialize` agreed. */
  get protocolVersion(): string | null {
    return this.client.getNegotiatedProtocolVersion() ?? null;
  }

  /** What the next start may skip the probe with: this connection's era (and discover result). */
  knownEra(): KnownEra {
    const discover = this.client.getDiscoverResult();
    return this.era === 'modern' && discover ? { era: 'modern', discover } : { era: 'legacy' };
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: {
      timeoutMs: number;
      signal?: AbortSignal | undefined;
      progress?: ((report: ToolProgress) => void) | undefined;
      /** What the agent can be asked, and its answers: a modern server may answer input_required. */
      input?: UpstreamInput | undefined;
      /** The caller hears log messages at `level` (a modern server: see logSlot). */
      log?: LogWanted | undefined;
      /** The call's `Mcp-Param-*` headers (the tool's marked arguments), sent in the modern era. */
      paramHeaders?: Record<string, string> | undefined;
    },
  ): Promise<CallToolResult | InputRequiredAnswer | TaskCreated> {
    const progress = options.progress;
    // Progress reports count against the call's byte cap (on stdio nothing else counts them): past
    // it the call is cancelled and fails with the cap.
    const overrun = new AbortController();
    let reported = 0;
    const signal = options.signal ? AbortSignal.any([options.signal, overrun.signal]) : overrun.signal;
    // The SDK turns an abort's reason into a timeout error: the cap is taken from the signal.
    // With it the SDK sends a progress token and hands each report over; the timeout stays whole.
    const onprogress = progress && {
      onprogress: (p: { progress: number; total?: number; message?: string }) => {
        reported += PROGRESS_OVERHEAD_BYTES + (typeof p.message === 'string' ? p.message.length : 0);
        if (reported > this.caps.maxCallBytes) {
          overrun.abort(new AnswerTooLarge(this.caps.maxCallBytes, 'call'));
          return;
        }
        progress({
          progress: p.progress,
          ...(p.total !== undefined && { total: p.total }),
          ...(p.message !== undefined && { message: p.message }),
        });
      },
    };
    const call = this.askingRequest('tools/call', { name, arguments: args }, CallToolResultSchema, {
      timeoutMs: options.timeoutMs,
      signal,
      input: options.input,
      log: options.log,
      paramHeaders: options.paramHeaders,
      what: `tools/call of ${name}`,
      ...onprogress,
    });
    try {
      return (await call) as CallToolResult | InputRequiredAnswer | TaskCreated;
    } catch (error) {
      throw overrun.signal.aborted ? overrun.signal.reason : error;
    }
  }

  /** What the upstream declared it serves in the handshake (tools, resources, prompts...). */
  capabilities(): ServerCapabilities {
    return this.client.getServerCapabilities() ?? {};
  }

  /**
   * Every tool the upstream lists (all pages), at most `max` (more: `truncated`); a tool MCP does
   * not allow is left out and said in `skipped`, a list that is no list fails with MalformedAnswer.
   */
  async listTools(timeoutMs: number, max: number): Promise<Listing<Tool>> {
    return listAll(max, ToolSchema, 'name', (cursor) =>
      this.listPage('tools/list', 'tools', cursor, timeoutMs),
    );
  }

  /** Every resource the upstream lists (all pages), as listTools. */
  async listResources(timeoutMs: number, max: number): Promise<Listing<Resource>> {
    return listAll(max, ResourceSchema, 'uri', (cursor) =>
      this.listPage('resources/list', 'resources', cursor, timeoutMs),
    );
  }

  /** Every resource template the upstream lists (all pages), as listTools. */
  async listResourceTemplates(timeoutMs: number, max: number): Promise<Listing<ResourceTemplate>> {
    return listAll(max, ResourceTemplateSchema, 'uriTemplate', (cursor) =>
      this.listPage('resources/templates/list', 'resourceTemplates', cursor, timeoutMs),
    );
  }

  /** Every prompt the upstream lists (all pages), as listTools. */
  async listPrompts(timeoutMs: number, max: number): Promise<Listing<Prompt>> {
    return listAll(max, PromptSchema, 'name', (cursor) =>
      this.listPage('prompts/list', 'prompts', cursor, timeoutMs),
    );
  }

  /**
   * One page of a list, its entries unchecked: the SDK's own list methods refuse a whole page for
   * one entry they do not allow (and say so in a dump of parser issues), listAll checks each.
   */
  private async listPage(
    method: 'tools/list' | 'resources/list' | 'resources/templates/list' | 'prompts/list',
    key: string,
    cursor: string | undefined,
    timeoutMs: number,
  ): Promise<{ entries: unknown[]; nextCursor: string | undefined }> {
    const params = cursor === undefined ? {} : { cursor };
    const page: Record<string, unknown> = await answered(
      method,
      this.client.request({ method, params }, ResultSchema, { timeout: timeoutMs }),
    );
    const entries = page[key];
    if (!Array.isArray(entries))
      throw new MalformedAnswer(method, `${key}: ${kindOf(entries)} where a list was expected`);
    const next = page.nextCursor;
    if (next !== undefined && typeof next !== 'string')
      throw new MalformedAnswer(method, `nextCursor: ${kindOf(next)} where a string was expected`);
    return { entries, nextCursor: next };
  }

  async readResource(
    uri: string,
    options: { timeoutMs: number; signal?: AbortSignal | undefined; input?: UpstreamInput | undefined },
  ): Promise<ReadResourceResult | InputRequiredAnswer> {
    // A task is refused to any request but tools/call (askingRequest).
    return this.askingRequest('resources/read', { uri }, ReadResourceResultSchema, options) as Promise<
      ReadResourceResult | InputRequiredAnswer
    >;
  }

  async getPrompt(
    name: string,
    args: Record<string, string>,
    options: { timeoutMs: number; signal?: AbortSignal | undefined; input?: UpstreamInput | undefined },
  ): Promise<GetPromptResult | InputRequiredAnswer> {
    return this.askingRequest(
      'prompts/get',
      { name, arguments: args },
      GetPromptResultSchema,
      options,
    ) as Promise<GetPromptResult | InputRequiredAnswer>;
  }

  /**
   * completion/complete as the agent asked it (a prompt's argument, or a resource template's): a
   * server that does not declare completions is not asked, and offers nothing (a valid answer).
   */
  async complete(
    params: CompleteRequest['params'],
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<CompleteResult> {
    if (this.capabilities().completions === undefined) {
      return { completion: { values: [], total: 0, hasMore: false } };
    }
    return answered(
      'completion/complete',
      this.client.request({ method: 'completion/complete', params }, CompleteResultSchema, {
        timeout: options.timeoutMs,
        ...(options.signal && { signal: options.signal }),
      }),
    ) as Promise<CompleteResult>;
  }

  /**
   * A request a modern server may answer `input_required` (MRTR): with `input`, the agent's
   * capabilities go in its `_meta` (the server asks only for those), a retry's answers and the
   * server's own state go with it, and an `input_required` answer is handed back, checked, for the
   * agent to answer. Without `input`, or to a legacy server, it is the plain request.
   */
  private async askingRequest<T>(
    method: 'resources/read' | 'prompts/get' | 'tools/call',
    params: Record<string, unknown>,
    schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: unknown } },
    options: {
      timeoutMs: number;
      signal?: AbortSignal | undefined;
      input?: UpstreamInput | undefined;
      onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
      /** How the plain request is named in errors (default: its method). */
      what?: string;
      log?: LogWanted | undefined;
      paramHeaders?: Record<string, string> | undefined;
    },
  ): Promise<T | InputRequiredAnswer | TaskCreated> {
    // The call's trace goes on to the upstream server in the request's `_meta` (MCP's keys for
    // it, SEP-414), as well as in its HTTP headers when it is an HTTP server.
    const carried = activeCarrier();
    if (carried) params = { ...params, _meta: { ...(params._meta as object | undefined), ...carried } };
    const sent = {
      timeout: options.timeoutMs,
      ...(options.signal && { signal: options.signal }),
      ...(options.onprogress && { onprogress: options.onprogress }),
      // A modern server over HTTP checks a marked argument against its Mcp-Param-* header (SEP-2243);
      // stdio carries no headers, and the 2025 era defines none.
      ...(options.paramHeaders && this.era === 'modern' && { headers: options.paramHeaders }),
    };
    const input = options.input;
    // A modern server is told what the agent can be asked, or that it wants log messages.
    if (this.era !== 'modern' || (!input && !options.log)) {
      const plain = await answered(
        options.what ?? method,
        this.client.request({ method, params }, schema as unknown as typeof ResultSchema, sent) as Promise<T>,
      );
      // A task to a request that did not declare the extension: the server broke the rule.
      if (carriedTask(plain))
        throw new MalformedAnswer(method, 'a task, to a request that did not declare the tasks extension');
      return plain;
    }
    const declared = Object.fromEntries(
      Object.entries(input?.capabilities ?? {})
        .filter(([, declared]) => declared === true)
        .map(([name]) => [name, {}]),
    );
    const capabilities = input?.tasks ? withTasksExtension(declared) : declared;
    // Log messages are asked for when no other request here has them (logSlot).
    const logs = options.log && this.logSlot === undefined ? options.log : undefined;
    if (logs) this.logSlot = logs.hear;
    let raw: Record<string, unknown>;
    try {
      raw = await this.declaring(
        method,
        {
          ...params,
          ...(input?.responses !== undefined && { inputResponses: input.responses }),
          ...(input?.state !== undefined && { requestState: input.state }),
        },
        capabilities,
        // Without input, an input_required is the SDK's to refuse (no handler answers it).
        { ...sent, allowInputRequired: input !== undefined },
        logs?.level,
      );
    } finally {
      if (logs && this.logSlot === logs.hear) this.logSlot = undefined;
    }
    if (raw.resultType === 'input_required') return inputRequiredOf(method, raw);
    const task = carriedTask(raw);
    if (task) {
      if (method !== 'tools/call' || !input?.tasks)
        throw new MalformedAnswer(
          method,
          `a task, to ${method === 'tools/call' ? 'a request that did not declare the tasks extension' : method}`,
        );
      try {
        return { resultType: 'task', task: checkedTask(task) };
      } catch (problem) {
        throw new MalformedAnswer(method, String(problem));
      }
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issues = issuesOf(parsed.error);
      throw new MalformedAnswer(method, issues ? issuesText(issues) : 'the result is not what MCP allows');
    }
    return parsed.data;
  }

  /**
   * tasks/get, tasks/update or tasks/cancel of a task this server made (the tasks extension,
   * declared on the request as the spec requires): tasks/get answers the task checked, the others
   * the server's acknowledgement (nothing).
   */
  async taskRequest(
    method: 'tasks/get' | 'tasks/update' | 'tasks/cancel',
    params: { taskId: string; inputResponses?: Record<string, unknown> | undefined },
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<UpstreamTask | undefined> {
    const raw = await this.declaring(method, params, withTasksExtension({}), {
      timeout: options.timeoutMs,
      ...(options.signal && { signal: options.signal }),
    });
    if (method !== 'tasks/get') return undefined;
    try {
      return checkedTask(raw, (value) => checkedInputRequests(method, value));
    } catch (problem) {
      throw new MalformedAnswer(method, String(problem));
    }
  }

  /**
   * A modern request that declares `capabilities` as its client's (its `_meta`), and with
   * `logLevel` asks for log messages at that level; its result unchecked.
   */
  private declaring(
    method: string,
    params: Record<string, unknown>,
    capabilities: Record<string, unknown>,
    options: Parameters<Client['request']>[2],
    logLevel?: string,
  ): Promise<Record<string, unknown>> {
    const meta = {
      ...(params._meta as object | undefined),
      'io.modelcontextprotocol/clientCapabilities': capabilities,
      ...(logLevel !== undefined && { 'io.modelcontextprotocol/logLevel': logLevel }),
    };
    return answered(
      method,
      this.client.request({ method, params: { ...params, _meta: meta } }, ResultSchema, options),
    );
  }

  /** The URIs this connection subscribed to (resources/subscribe), kept alive while any is. */
  readonly subscribed = new Set<string>();

  /**
   * The modern era's subscription (`subscriptions/listen`) to every URI in `subscribed`, renewed
   * with the whole set each time it changes (a listen stream's filter is fixed when it opens).
   */
  private listening: McpSubscription | undefined;

  /**
   * Subscribes to a resource's updates: resources/subscribe on a 2025-era connection, a listen
   * stream naming it (with the others) on a modern one. Updates come to hooks.resourceUpdated.
   */
  async subscribeResource(uri: string, timeoutMs: number): Promise<void> {
    if (this.era === 'modern') {
      this.subscribed.add(uri);
      try {
        await this.listen(timeoutMs);
      } catch (error) {
        this.subscribed.delete(uri);
        throw error;
      }
      return;
    }
    await answered(
      'resources/subscribe',
      this.client.request({ method: 'resources/subscribe', params: { uri } }, ResultSchema, {
        timeout: timeoutMs,
      }),
    );
    this.subscribed.add(uri);
  }

  /** resources/unsubscribe (or a listen stream without the URI), when the connection still stands. */
  async unsubscribeResource(uri: string, timeoutMs: number): Promise<void> {
    if (!this.subscribed.delete(uri) || this.closing) return;
    if (this.era === 'modern') {
      await this.listen(timeoutMs);
      return;
    }
    await answered(
      'resources/unsubscribe',
      this.client.request({ method: 'resources/unsubscribe', params: { uri } }, ResultSchema, {
        timeout: timeoutMs,
      }),
    );
  }

  /**
   * Opens a listen stream for `subscribed` (none when it is empty), then closes the one before: an
   * update between the two is not missed. One the server drops is opened again after a second.
   */
  private listen(timeoutMs: number): Promise<void> {
    // One renewal at a time: two at once would each close the one before them, not each other's.
    const renewed = this.renewals.then(() => this.renewListen(timeoutMs));
    this.renewals = renewed.catch(() => {});
    return renewed;
  }

  private renewals: Promise<void> = Promise.resolve();

  private async renewListen(timeoutMs: number): Promise<void> {
    const before = this.listening;
    this.listening =
      this.subscribed.size === 0
        ? undefined
        : await this.client.listen({ resourceSubscriptions: [...this.subscribed] }, { timeout: timeoutMs });
    const opened = this.listening;
    void opened?.closed.then((reason) => {
      if (reason !== 'remote' || this.listening !== opened || this.closing) return;
      setTimeout(() => {
        if (this.listening === opened && !this.closing) void this.listen(timeoutMs).catch(() => {});
      }, RELISTEN_AFTER_MS).unref();
    });
    await before?.close().catch(() => {});
  }

  /** Asks whether the server is up: `ping` in the 2025 era, `server/discover` in the modern one (no ping). */
  async ping(timeoutMs: number): Promise<void> {
    if (this.era === 'modern') await this.client.discover({ timeout: timeoutMs });
    else await this.client.ping({ timeout: timeoutMs });
  }

  /** Closes the connection; a stdio child is killed and waited for. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    // A listen stream is a request that never ends by itself: closing the client leaves it open
    // (and a dispatcher closing after it would wait for it), so it is closed first.
    await this.listening?.close().catch(() => {});
    await this.client.close().catch(() => {});
  }
}

/** Pages of one list at most (whatever they hold). */
const MAX_LIST_PAGES = 200;
/** Entries of one list left out that are described one by one; the others are counted. */
const SKIPPED_KEPT = 20;

/** An entry of a list that MCP does not allow, left out. */
export interface SkippedEntry {
  /** Its place in the listing, from 1 (all pages counted). */
  position: number;
  /** Its name, when it has a string one (a URI for a resource). */
  name: string | undefined;
  /** What is wrong with it, in words (where in it, and what MCP expects there). */
  problem: string;
}

/** A list as listed: what MCP allows of it, and what was left out. */
export interface Listing<T> {
  items: T[];
  truncated: boolean;
  /** The first SKIPPED_KEPT entries left out; `moreSkipped` counts the rest. */
  skipped: SkippedEntry[];
  moreSkipped: number;
}

/**
 * An answer of the upstream that MCP does not allow: the server answered (it is up), but with a
 * result that cannot be used. The message names what was wrong, in words.
 */
/** What the agent behind a request can be asked, and its answers (a modern upstream's MRTR). */
export interface UpstreamInput {
  capabilities: Partial<Record<'elicitation' | 'sampling' | 'roots', boolean>>;
  responses?: Record<string, unknown> | undefined;
  /** The upstream's own requestState of the previous round. */
  state?: string | undefined;
  /** The agent declared the tasks extension: the server may answer with a task (TaskCreated). */
  tasks?: boolean | undefined;
}

/** A caller that hears log messages: its level, and what tells it one (UpstreamInstance.logSlot). */
export interface LogWanted {
  level: string;
  hear: (message: { level: unknown; data: unknown }) => void;
}

/** A modern upstream's `input_required` answer, as checked here. */
export interface InputRequiredAnswer {
  resultType: 'input_required';
  inputRequests: Record<string, { method: string; params: Record<string, unknown> }>;
  requestState?: string;
}

/** An `input_required` answer checked: requests that are objects with a method, a state that is a string. */
function inputRequiredOf(request: string, raw: Record<string, unknown>): InputRequiredAnswer {
  const checked = checkedInputRequests(request, raw.inputRequests ?? {});
  const state = raw.requestState;
  if (state !== undefined && typeof state !== 'string')
    throw new MalformedAnswer(request, 'requestState is not a string');
  if (Object.keys(checked).length === 0 && state === undefined)
    throw new MalformedAnswer(request, 'input_required carries neither inputRequests nor requestState');
  return {
    resultType: 'input_required',
    inputRequests: checked,
    ...(state !== undefined && { requestState: state }),
  };
}

/** An upstream's inputRequests checked: at most so many, each an object with a method. */
function checkedInputRequests(request: string, requests: unknown): InputRequiredAnswer['inputRequests'] {
  if (typeof requests !== 'object' || requests === null || Array.isArray(requests))
    throw new MalformedAnswer(request, 'inputRequests is not an object of input requests');
  const checked: InputRequiredAnswer['inputRequests'] = {};
  const entries = Object.entries(requests as Record<string, unknown>);
  // What no agent could answer (a retry carries at most so many answers, keys so long) is refused.
  if (entries.length > MAX_INPUT_RESPONSES)
    throw new MalformedAnswer(request, `more than ${MAX_INPUT_RESPONSES} inputRequests at once`);
  for (const [key, value] of entries) {
    if (key.length > MAX_INPUT_KEY_CHARS)
      throw new MalformedAnswer(
        request,
        `an inputRequests key is longer than ${MAX_INPUT_KEY_CHARS} characters`,
      );
    const entry = value as { method?: unknown; params?: unknown } | null;
    if (typeof entry !== 'object' || entry === null || typeof entry.method !== 'string')
      throw new MalformedAnswer(request, `inputRequests.${key.slice(0, 64)} is not an input request`);
    const params = typeof entry.params === 'object' && entry.params !== null ? entry.params : {};
    checked[key] = { method: entry.method, params: params as Record<string, unknown> };
  }
  return checked;
}

export class MalformedAnswer extends Error {
  constructor(
    readonly request: string,
    readonly problem: string,
  ) {
    super(`the answer to ${request} is not what MCP allows: ${problem}`);
    this.name = 'MalformedAnswer';
  }
}

interface Issue {
  path: PropertyKey[];
  message: string;
}

/** The checker of one entry: the SDK's schema for it. */
interface EntrySchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: Issue[] } };
}

/** Issues of the SDK's schema checks, in words: `inputSchema/type: Invalid input: expected "object"`. */
function issuesText(issues: readonly Issue[]): string {
  const shown = issues.slice(0, 3).map((issue) => {
    const at = issue.path.map((key) => printable(String(key))).join('/');
    return at === '' ? issue.message : `${at}: ${issue.message}`;
  });
  const more = issues.length > 3 ? `; and ${issues.length - 3} more` : '';
  return `${shown.join('; ')}${more}`;
}

/**
 * The issues of a failed check of the SDK's schemas: it rejects a result with the parser's own
 * error (zod's, named `$ZodError` or `ZodError` by the build it comes from).
 */
function issuesOf(error: unknown): Issue[] | undefined {
  if (!(error instanceof Error) || !/^\$?ZodError$/.test(error.name)) return undefined;
  const issues = (error as { issues?: unknown }).issues;
  return Array.isArray(issues) ? (issues as Issue[]) : undefined;
}

/**
 * `request`'s result, a result the SDK's schema refused as a MalformedAnswer in words. The v2 SDK
 * reports the schema's issues in the message of an INVALID_RESULT error, after the method's name.
 */
async function answered<T>(request: string, result: Promise<T>): Promise<T> {
  try {
    return await result;
  } catch (error) {
    const issues = issuesOf(error);
    if (issues) throw new MalformedAnswer(request, issuesText(issues));
    if (error instanceof SdkError && error.code === SdkErrorCode.InvalidResult)
      throw new MalformedAnswer(request, error.message.replace(/^Invalid result for [^:]*: /, ''));
    throw error;
  }
}

function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Every entry of a paginated list (all pages) that `schema` allows, at most `max` of them and
 * MAX_LIST_PAGES pages (more: `truncated`); the others are left out, in `skipped` (named by their
 * `nameKey`). A server handing
 * back a cursor it gave before would be listed forever: the listing stops there.
 */
async function listAll<T>(
  max: number,
  schema: EntrySchema<T>,
  nameKey: 'name' | 'uri' | 'uriTemplate',
  page: (cursor: string | undefined) => Promise<{ entries: unknown[]; nextCursor: string | undefined }>,
): Promise<Listing<T>> {
  const listing: Listing<T> = { items: [], truncated: false, skipped: [], moreSkipped: 0 };
  let cursor: string | undefined;
  const seen = new Set<string>();
  let pages = 0;
  let position = 0;
  do {
    // A server handing out empty pages with new cursors would be listed forever, too.
    if (++pages > MAX_LIST_PAGES) return { ...listing, truncated: true };
    const listed = await page(cursor);
    for (const entry of listed.entries) {
      position += 1;
      const checked = schema.safeParse(entry);
      if (checked.success) {
        listing.items.push(checked.data);
        if (listing.items.length > max)
          return { ...listing, items: listing.items.slice(0, max), truncated: true };
        continue;
      }
      if (listing.skipped.length >= SKIPPED_KEPT) {
        listing.moreSkipped += 1;
        continue;
      }
      const name = (entry as Record<string, unknown> | null)?.[nameKey];
      listing.skipped.push({
        position,
        name: typeof name === 'string' ? name : undefined,
        problem: issuesText(checked.error.issues),
      });
    }
    cursor = listed.nextCursor;
    if (cursor !== undefined) {
      if (seen.has(cursor)) break;
      seen.add(cursor);
    }
  } while (cursor !== undefined);
  return listing;
}

/**
 * How the SDK failed a request locally: `timeout` (no answer in time), `closed` (the connection
 * ended, or the request could not be sent), `local` (another error of the SDK's own), or undefined
 * for an error the upstream answered (a JSON-RPC error, with its numeric code).
 */
export function requestFailure(error: unknown): 'timeout' | 'closed' | 'local' | undefined {
  if (!(error instanceof SdkError)) return undefined;
  switch (error.code) {
    case SdkErrorCode.RequestTimeout:
      return 'timeout';
    case SdkErrorCode.ConnectionClosed:
    case SdkErrorCode.NotConnected:
    case SdkErrorCode.SendFailed:
      return 'closed';
    default:
      return 'local';
  }
}
/** What the SDK's stdio read buffer says when a line passes its cap. */
const STDIO_LINE_TOO_LONG = /^ReadBuffer exceeded maximum size/;
/** The SDK's handshake timeout is this much past ours, so ours (which closes) always comes first. */
const HANDSHAKE_SDK_SLACK_MS = 60_000;
/** What a progress report costs in a call's byte budget besides its message (its JSON-RPC frame). */
const PROGRESS_OVERHEAD_BYTES = 128;
/** An answer to a POST may take this much longer than the request's own timeout before it is cut. */
const POST_DEADLINE_SLACK_MS = 2_000;

/** The handshake did not complete in time; the transport was closed (nothing was cancelled). */
export class HandshakeTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the MCP handshake did not complete within ${timeoutMs} ms`);
    this.name = 'HandshakeTimeout';
  }
}

/** The cap a request's failure carries: a cut of its own answer (see CutRelay), or none. */
function answerTooLargeIn(error: unknown): AnswerTooLarge | undefined {
  if (error instanceof AnswerTooLarge) return error;
  const data = (error as { data?: unknown } | null)?.data;
  return data instanceof AnswerTooLarge ? data : undefined;
}

/**
 * Takes the bounded fetch's cuts to the request they concern. A cut of one request's answer fails
 * that request at once (an error response handed to the client as if the upstream had sent it,
 * carrying the cap in its data: no upstream can forge that object); a cut of a stream that
 * answers no one request closes the whole connection, and its requests fail with the cap.
 */
class CutRelay {
  transport: Transport | undefined;
  instance: UpstreamInstance | undefined;
  cutBy: AnswerTooLarge | undefined;

  fetch(options: ConnectOptions) {
    return boundedFetch({
      dispatcher: options.outbound,
      maxMessageBytes: options.caps.maxMessageBytes,
      maxCallBytes: options.caps.maxCallBytes,
      postDeadlineMs: Math.max(options.timeoutMs, options.requestTimeoutMs) + POST_DEADLINE_SLACK_MS,
      onCut: (error, requestId) => this.cut(error, requestId),
    }) as unknown as (url: string | URL, init?: RequestInit) => Promise<Response>;
  }

  private cut(error: AnswerTooLarge, requestId: string | number | undefined): void {
    const transport = this.transport;
    if (requestId !== undefined && transport?.onmessage) {
      transport.onmessage({
        jsonrpc: '2.0',
        id: requestId,
        error: { code: -32603, message: error.message, data: error },
      });
      return;
    }
    this.record(error);
    void transport?.close().catch(() => {});
  }

  /** The connection is (being) closed for a cut: its requests fail with it. */
  record(error: AnswerTooLarge): void {
    this.cutBy ??= error;
    if (this.instance) this.instance.cutBy ??= error;
  }

  /** A failed handshake's error: the cap when a cut caused it. */
  errorOf(error: unknown): unknown {
    return answerTooLargeIn(error) ?? this.cutBy ?? error;
  }
}

function refusedAsOldProtocol(error: unknown): boolean {
  const status = error instanceof SdkHttpError ? error.status : undefined;
  return status !== undefined && status >= 400 && status < 500 && status !== 401 && status !== 403;
}
