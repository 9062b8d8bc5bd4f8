/**
 * One pool of instances per spec fingerprint (seed 003). Instances start lazily (first call or
 * sync), serve up to `concurrentCalls` calls each, up to `maxInstances` of them, and stop after
 * `idleTimeoutMs` without calls. Idle instances are pinged every 30 s (2 s deadline); one that does
 * not answer is stopped. A start that fails, a child that dies, a ping or a call that times out all
 * count as failures: instances are restarted no sooner than a jittered backoff (1 s doubling to
 * 30 s), and after three failures in a row the circuit opens: calls fail at once with
 * UPSTREAM_FAILED naming the server and the last error, until a probe (the first call after the
 * backoff, or a ping) succeeds.
 */
import {
  CLIENT_INPUT_CAPABILITIES,
  isLogLevel,
  logLevelAllows,
  MISSING_CLIENT_CAPABILITY_ERROR,
  TERMINAL_TASK_STATUSES,
  storableText,
  type ClientInputCapabilities,
  type ClientInputCapability,
  type LogLevel,
  type ToolLogLine,
  type ToolProgress,
} from '@bindery/contracts';
import { ASK_WAIT_MS, AskingCall, MAX_ASK_ROUNDS, type RoundOutcome } from './asking-call.ts';
import type {
  CallToolResult,
  CompleteRequest,
  CompleteResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Dispatcher } from 'undici';
import type { AuthProvider } from '@modelcontextprotocol/client';
import { detached } from '@bindery/service-kit';
import { DomainError } from '../../domain/errors.ts';
import { AnswerTooLarge } from './bounded-fetch.ts';
import {
  MalformedAnswer,
  requestFailure,
  StderrRing,
  UpstreamInstance,
  type AnswerCaps,
  type InputRequiredAnswer,
  type KnownEra,
  type Listing,
  type ProtocolEra,
  type UpstreamInput,
} from './instance.ts';
import type { ResolvedLimits, TransportSpec } from './spec.ts';
import type { TaskCreated, UpstreamTask } from './upstream-tasks.ts';

export const PING_EVERY_MS = 30_000;
export const PING_TIMEOUT_MS = 2_000;
export const BACKOFF_FIRST_MS = 1_000;
export const BACKOFF_MAX_MS = 30_000;
/** Consecutive failures that open the circuit. */
export const CIRCUIT_FAILURES = 3;
/**
 * How long starting an instance (spawn or connect, and the MCP handshake) may take: the call
 * timeout, within 5 to 15 s (a process takes its time to start, whatever a call may take).
 */
const START_TIMEOUT_MIN_MS = 5_000;
const START_TIMEOUT_MAX_MS = 15_000;
/** Calls waiting for a free instance at most, per allowed call slot. */
const QUEUE_PER_SLOT = 4;

export type PoolState = 'ok' | 'starting' | 'failing' | 'circuit_open' | 'stopped' | 'needs_connection';

/** What a call may come with besides its arguments. */
export interface CallOptions {
  /** The caller gave up: the upstream gets notifications/cancelled. */
  signal?: AbortSignal | undefined;
  /** The MCP session it came in (per_session mode); absent: stateless. */
  session?: string | undefined;
  /** Told each progress report the upstream sends for the call. */
  progress?: ((report: ToolProgress) => void) | undefined;
  /**
   * Told each stderr line (secrets redacted) the instance writes while the call runs, when the
   * instance serves this one session (per_session mode): a shared instance's lines cannot be told
   * apart by caller, so they stay in the server's log tail only.
   */
  stderr?: ((line: string) => void) | undefined;
  /** Told the server's log messages about the call at `level` or above (instance.logListeners). */
  log?: CallLog | undefined;
  /**
   * Who calls (`{aei_id}:{caller}`), for a call that may be asked: a connection relaying questions
   * serves one caller (one session when there is one), so nothing the server keeps of one caller's
   * answers, and no late request or line of its, reaches another.
   */
  caller?: string | undefined;
  /** The most JSON the questions of one round may take (a result's limit): past it the call is ended. */
  maxAskBytes?: number | undefined;
  /** The call's `Mcp-Param-*` headers: the values of the arguments the tool marks (x-mcp-header). */
  paramHeaders?: Record<string, string> | undefined;
}

/** Where a call's log lines go: its caller's level, and the sink (the executor's ToolLog). */
interface CallLog {
  level: LogLevel;
  send(line: ToolLogLine): void;
}

/** What the agent behind a tool call can be asked, and what it answered (the executor's CallInput). */
export interface ToolCallInput {
  capabilities: ClientInputCapabilities;
  /** This round's answers, by the keys the last round asked under. */
  responses: Record<string, unknown>;
  /** A modern server's own requestState of the last round. */
  upstreamState?: string | undefined;
  /** The call of a 2025-era server that waits on this pool for these answers (AskingCall.id). */
  parked?: string | undefined;
  /** The agent gave the call up while asked: the call that waits is cancelled, nothing runs. */
  cancel?: true | undefined;
  /** The agent declared the tasks extension: a modern server may answer with a task (ToolCallTask). */
  tasks?: boolean | undefined;
}

/** A tool call a modern server answered with a task: its first state, and the instance it lives on. */
export interface ToolCallTask {
  resultType: 'task';
  task: UpstreamTask;
  /** The instance that made it (UpstreamInstance.id): a stdio server's tasks live in its child. */
  instance: string;
}

/** What a tasks/* request of an agent names: the upstream's task, and where it was made. */
export interface TaskRef {
  taskId: string;
  instance: string;
}

/**
 * How long an instance that made a task is kept from being stopped as idle, at most (a task's own
 * TTL when shorter): the tasks of a stdio server live in its child.
 */
const MAX_TASK_HOLD_MS = 60 * 60_000;
/** Tasks one instance is kept for at most (the rest: the oldest let go). */
const MAX_HELD_TASKS = 10_000;

/** A round of a tool call that asks the agent: what to ask, and what the next round needs back. */
export interface ToolCallAsks {
  resultType: 'asks';
  asks: Record<string, { method: string; params: Record<string, unknown> }>;
  carry: { upstream_state?: string; parked?: string };
}

/** What separates a key of connections that relay one asking call each (its capabilities follow). */
const ASKING = '\u0000asks:';
/** What separates the caller (or session) a relaying connection serves, after its capabilities. */
const BY = '\u0000by:';

export interface PoolEvents {
  /** An instance announced `notifications/tools/list_changed`. */
  toolsChanged(): void;
  /** An instance announced `notifications/resources/list_changed` or `notifications/prompts/list_changed`. */
  catalogChanged?(list: 'resources' | 'prompts'): void;
  /** An instance announced that a resource it was subscribed to changed. */
  resourceUpdated?(uri: string): void;
  /** The pool's state changed (for the servers' status). */
  stateChanged(state: PoolState, lastError: string | null): void;
  stderr(line: string): void;
  meter?: PoolMeter;
}

export interface PoolMeter {
  call(outcome: 'ok' | 'error' | 'timeout' | 'refused'): void;
  failure(): void;
  restart(): void;
  instances(count: number): void;
}

/**
 * A spec with its secrets filled in, and what takes their values out again of whatever comes back
 * (stderr lines, error messages, tool results): an upstream may echo what it was given.
 */
export interface ResolvedTransport {
  transport: TransportSpec;
  redact(text: string): string;
  redactJson<T>(value: T): T;
  /** A server that requires OAuth: the person's tokens (upstream-oauth.ts). */
  authProvider?: AuthProvider;
  /** A transport failure about authorization, as the call answers it (connect again, a missing scope). */
  authFailure?(error: unknown): DomainError | undefined;
}

const NO_SECRETS: Omit<ResolvedTransport, 'transport'> = {
  redact: (text) => text,
  redactJson: (value) => value,
};

/** A listing of the upstream's, without its secrets: `withheld` counts the entries left out for them. */
export interface UpstreamListing<T> extends Listing<T> {
  withheld: number;
}

export interface PoolOptions {
  fingerprint: string;
  /** Resolves the spec with its secrets filled in, when an instance starts. */
  transport: () => Promise<ResolvedTransport>;
  limits: ResolvedLimits;
  /** What an instance may be sent at most, per message and per request (UPSTREAM_*_MAX_BYTES). */
  caps: AnswerCaps;
  /** session_mode per_session: each MCP session gets an instance (an upstream session) of its own. */
  perSession?: boolean;
  /** How often running instances are pinged (PING_EVERY_MS unless a test sets it). */
  pingEveryMs?: number;
  outbound: Dispatcher;
  events: PoolEvents;
  /** Clock and randomness, replaceable by tests of the backoff. */
  now?: () => number;
  random?: () => number;
}

interface Waiter {
  session: string;
  resolve(instance: UpstreamInstance): void;
  reject(error: unknown): void;
}

/**
 * How a failure reads in messages: the first line, bounded, never a stack, and storable (an
 * upstream's message may hold a NUL, and it ends up in the server's `last_error`).
 */
function describe(error: unknown): string {
  const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));
  let text = messageOf(error);
  // fetch failures say "fetch failed"; the reason (refused address, connection refused) is their cause.
  let cause = (error as { cause?: unknown } | null)?.cause;
  for (let depth = 0; cause !== undefined && cause !== null && depth < 3; depth++) {
    const more = messageOf(cause);
    if (!text.includes(more)) text += `: ${more}`;
    cause = (cause as { cause?: unknown }).cause;
  }
  const line = text.split('\n')[0] ?? '';
  // After the cut, which may split a pair.
  return storableText(line.length > 300 ? `${line.slice(0, 300)}…` : line);
}

/** The JSON-RPC code of an error the upstream answered; undefined for the SDK's own errors. */
function mcpCode(error: unknown): number | undefined {
  if (requestFailure(error) !== undefined) return undefined;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The longest `requiredCapabilities` of an upstream's -32021 passed on, in characters of JSON. */
const MAX_REQUIRED_CAPABILITIES_CHARS = 4096;

/**
 * What an upstream's -32021 (MissingRequiredClientCapability) says the client lacks: its
 * `data.requiredCapabilities` when that is a small object (the agent's own -32021 carries it).
 */
function requiredCapabilitiesOf(error: unknown): Record<string, unknown> | undefined {
  const required = (error as { data?: { requiredCapabilities?: unknown } } | null)?.data
    ?.requiredCapabilities;
  if (typeof required !== 'object' || required === null || Array.isArray(required)) return undefined;
  return JSON.stringify(required).length <= MAX_REQUIRED_CAPABILITIES_CHARS
    ? (required as Record<string, unknown>)
    : undefined;
}

export class UpstreamPool {
  readonly fingerprint: string;
  readonly stderr = new StderrRing();
  private readonly instances = new Set<UpstreamInstance>();
  private starting = 0;
  /** Starts under way per session key (per_session mode; '' otherwise). */
  private readonly startingFor = new Map<string, number>();
  private readonly waiters: Waiter[] = [];
  /** The calls of 2025-era servers waiting for their agent's answers, by AskingCall.id. */
  private readonly asking = new Map<string, AskingCall>();
  private failures = 0;
  private lastError: string | null = null;
  private nextStartAt = 0;
  private backoffMs = 0;
  restarts = 0;
  private state: PoolState = 'stopped';
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private lastPingAt = 0;
  private readonly pingEveryMs: number;
  private readonly now: () => number;
  private readonly random: () => number;
  /**
   * The era the last start found the server to speak (with its discover result when modern), kept
   * while this control plane runs the pool: later starts skip the probe. Forgotten when a start
   * fails, so a server that changed era is probed again.
   */
  private knownEra: KnownEra | undefined;
  /** What the last successful start spoke, shown by the admin API (kept after a failure). */
  private spoken: { era: ProtocolEra | null; version: string | null } = { era: null, version: null };
  /** Takes the secrets the running instances were given out of what they send back. */
  private secrets: Omit<ResolvedTransport, 'transport'> = NO_SECRETS;

  constructor(private readonly options: PoolOptions) {
    this.fingerprint = options.fingerprint;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.pingEveryMs = options.pingEveryMs ?? PING_EVERY_MS;
    const tick = Math.max(
      100,
      Math.min(5_000, Math.floor(options.limits.idleTimeoutMs / 4), Math.floor(this.pingEveryMs / 2)),
    );
    this.timer = setInterval(() => void this.tick(), tick);
    this.timer.unref();
  }

  get instanceCount(): number {
    return this.instances.size;
  }

  get inFlight(): number {
    let n = 0;
    for (const instance of this.instances) n += instance.inFlight;
    return n;
  }

  get status(): { state: PoolState; lastError: string | null } {
    return { state: this.state, lastError: this.lastError };
  }

  /** The protocol era and version the server was last found to speak here (null: never started). */
  get protocol(): { era: ProtocolEra | null; version: string | null } {
    return this.spoken;
  }

  /** The pids of the running stdio children (for the admin API and tests). */
  get pids(): number[] {
    return [...this.instances].flatMap((i) => (i.pid === null ? [] : [i.pid]));
  }

  /**
   * Runs one tool call on an instance, within the call timeout; `server` names it in errors. With
   * `input` (what the agent can be asked), a server that asks its client gets its questions to the
   * agent: a modern server's input_required is handed back with its own state; a 2025-era server's
   * requests are held (AskingCall) and handed back, and the next round's answers go to them. Either
   * way the answer is then ToolCallAsks.
   */
  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    call: CallOptions & { input?: ToolCallInput | undefined } = {},
  ): Promise<CallToolResult | ToolCallAsks | ToolCallTask> {
    const { signal, session, progress, stderr, input } = call;
    if (input?.cancel) {
      if (input.parked !== undefined) this.asking.get(input.parked)?.done();
      throw new DomainError('UPSTREAM_FAILED', `the call of ${tool} on "${server}" was cancelled`, {
        upstream: server,
        cancelled: true,
      });
    }
    if (input?.parked !== undefined) return this.resumeAsking(server, tool, input, call);
    const asks = input ? CLIENT_INPUT_CAPABILITIES.filter((name) => input.capabilities[name] === true) : [];
    // The era is known once an instance ran; a modern server asks through input_required instead.
    if (asks.length > 0 && this.spoken.era !== 'modern') {
      const asked = await this.startAsking(server, tool, args, asks, input!, call);
      if (asked !== undefined) return asked;
    }
    const timeoutMs = this.options.limits.callTimeoutMs;
    const instance = await this.acquire(server, this.keyOf(session), this.now() + timeoutMs, signal);
    const listens = stderr !== undefined && instance.session !== '';
    if (listens) instance.stderrListeners.add(stderr);
    const hears = call.log && this.logListener(call.log);
    if (hears) instance.logListeners.add(hears);
    try {
      // The call's own timeout starts once it has an instance (a start has its own deadline).
      const result = await instance.callTool(tool, args, {
        timeoutMs,
        signal,
        ...(progress && { progress: (report: ToolProgress) => progress(this.secrets.redactJson(report)) }),
        ...(input && {
          input: {
            capabilities: input.capabilities,
            ...(Object.keys(input.responses).length > 0 && { responses: input.responses }),
            ...(input.upstreamState !== undefined && { state: input.upstreamState }),
            ...(input.tasks && { tasks: true }),
          },
        }),
        ...(hears && call.log && { log: { level: call.log.level, hear: hears } }),
        ...(call.paramHeaders && { paramHeaders: call.paramHeaders }),
      });
      this.succeeded();
      this.options.events.meter?.call('ok');
      // stderr travels on another pipe than the answer: a line written just before it may still
      // be waiting to be read. One turn of the event loop reads what is there (best effort).
      if (listens) await new Promise((resolve) => setImmediate(resolve));
      if ('resultType' in result && result.resultType === 'input_required') {
        const asked = result as InputRequiredAnswer;
        return {
          resultType: 'asks',
          asks: this.secrets.redactJson(asked.inputRequests),
          carry: asked.requestState === undefined ? {} : { upstream_state: asked.requestState },
        };
      }
      if ('resultType' in result && result.resultType === 'task') {
        const { task } = result as TaskCreated;
        // A child process's task lives in it: the child is kept while the task may be asked.
        if (instance.pid !== null) this.holdFor(instance, task);
        return { resultType: 'task', task: this.secrets.redactJson(task), instance: instance.id };
      }
      return this.secrets.redactJson(result as CallToolResult);
    } catch (error) {
      throw this.callFailed(server, tool, instance.failureOf(error), signal, timeoutMs);
    } finally {
      if (listens) instance.stderrListeners.delete(stderr);
      if (hears) instance.logListeners.delete(hears);
      this.release(instance);
    }
  }

  /**
   * A call of a 2025-era server by an agent that can be asked: on a connection of its own (one per
   * set of capabilities, one call at a time, so every request the server sends its client is this
   * call's), held as an AskingCall while the agent answers. Undefined when no such connection is
   * free or can be started now (the others wait on their agents, up to ASK_WAIT_MS each): the call
   * then runs as any other, and a question of the server is refused as for an agent that cannot
   * be asked, rather than waiting for minutes or holding up others.
   */
  private async startAsking(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    asks: ClientInputCapability[],
    input: ToolCallInput,
    call: CallOptions,
  ): Promise<CallToolResult | ToolCallAsks | undefined> {
    const timeoutMs = this.options.limits.callTimeoutMs;
    const key = `${this.keyOf(call.session)}${ASKING}${asks.join(',')}${BY}${call.session ?? call.caller ?? ''}`;
    const instance = await this.acquire(server, key, this.now() + timeoutMs, call.signal, false);
    if (!instance) return undefined;
    if (instance.era === 'modern') {
      // The server turned out to speak the modern era: it asks through input_required.
      this.release(instance);
      return undefined;
    }
    const asking = new AskingCall(
      timeoutMs,
      () => this.timeoutError(server, `tools/call of ${tool}`),
      () => this.asking.delete(asking.id),
    );
    this.asking.set(asking.id, asking);
    instance.asker = asking;
    const stderr = (line: string) => asking.stderr?.(line);
    instance.stderrListeners.add(stderr);
    const hears = (message: { level: unknown; data: unknown }) => asking.log?.(message);
    instance.logListeners.add(hears);
    void asking
      .run(
        (signal) =>
          instance.callTool(tool, args, {
            // The call's own time is AskingCall's to count (waits for the agent left out).
            timeoutMs: timeoutMs + MAX_ASK_ROUNDS * ASK_WAIT_MS,
            signal,
            progress: (report: ToolProgress) => asking.progress?.(this.secrets.redactJson(report)),
          }) as Promise<CallToolResult>,
      )
      .finally(() => {
        instance.asker = undefined;
        instance.stderrListeners.delete(stderr);
        instance.logListeners.delete(hears);
        this.release(instance);
      });
    return this.askingRound(server, tool, asking, input.responses, call, instance);
  }

  /** The next round of a call that asked: NOT_FOUND-like refusal when it no longer waits here. */
  private async resumeAsking(
    server: string,
    tool: string,
    input: ToolCallInput,
    call: CallOptions,
  ): Promise<CallToolResult | ToolCallAsks> {
    const asking = this.asking.get(input.parked!);
    if (!asking) {
      throw new DomainError(
        'PRECONDITION_FAILED',
        `the call of ${tool} on upstream server "${server}" no longer waits for these answers (it ended, waited more than ${ASK_WAIT_MS / 60_000} minutes, or runs on another control plane); call the tool again`,
        { upstream: server },
      );
    }
    return this.askingRound(server, tool, asking, input.responses, call);
  }

  private async askingRound(
    server: string,
    tool: string,
    asking: AskingCall,
    answers: Record<string, unknown>,
    call: CallOptions,
    instance?: UpstreamInstance,
  ): Promise<CallToolResult | ToolCallAsks> {
    // Another request giving this call's answers now (a client's double submit) is refused, and
    // the call goes on with the first.
    if (asking.inRound) {
      throw new DomainError(
        'CONFLICT',
        'the answers of this call are being given by another request already',
      );
    }
    let outcome: RoundOutcome;
    try {
      outcome = await asking.round(answers, call.signal, {
        progress: call.progress,
        stderr: call.stderr,
        log: call.log && this.logListener(call.log),
      });
    } catch (error) {
      asking.done();
      const failure = instance ? instance.failureOf(error) : error;
      throw this.callFailed(server, tool, failure, call.signal, this.options.limits.callTimeoutMs);
    }
    if ('asks' in outcome) {
      const asks = this.secrets.redactJson(outcome.asks);
      const size = Buffer.byteLength(JSON.stringify(asks));
      // Questions no agent could be sent would leave the call waiting for nothing: it is ended.
      if (call.maxAskBytes !== undefined && size > call.maxAskBytes) {
        asking.done();
        throw new DomainError(
          'RESULT_TOO_LARGE',
          `what upstream server "${server}" asks its client takes ${size} bytes of JSON, more than the ${call.maxAskBytes} a result may`,
          { upstream: server, limit_bytes: call.maxAskBytes },
        );
      }
      return { resultType: 'asks', asks, carry: { parked: asking.id } };
    }
    asking.done();
    this.succeeded();
    this.options.events.meter?.call('ok');
    return this.secrets.redactJson(outcome.result);
  }

  /**
   * Lists the upstream's tools (all pages) on an instance, started when none runs; the tools MCP
   * does not allow are left out (`skipped`).
   */
  async listTools(server: string, max: number): Promise<UpstreamListing<Tool>> {
    // A server that declares no tools capability (prompts or resources only) has none to list.
    const listed = await this.list(server, 'tools/list', (instance, timeoutMs) =>
      instance.capabilities().tools
        ? instance.listTools(timeoutMs, max)
        : { items: [], truncated: false, skipped: [], moreSkipped: 0 },
    );
    // Tools are shown to every client of the AEIs they are bound to: no secret of the server's in them.
    return this.withoutSecrets(listed, (t) => t.name);
  }

  /**
   * Lists the upstream's resources (all pages), or null when it did not declare the `resources`
   * capability (it serves none).
   */
  async listResources(server: string, max: number): Promise<UpstreamListing<Resource> | null> {
    const listed = await this.list(server, 'resources/list', (instance, timeoutMs) =>
      instance.capabilities().resources ? instance.listResources(timeoutMs, max) : null,
    );
    return listed && this.withoutSecrets(listed, (r) => r.uri);
  }

  /** Lists the upstream's resource templates (all pages), or null when it serves no resources. */
  async listResourceTemplates(
    server: string,
    max: number,
  ): Promise<UpstreamListing<ResourceTemplate> | null> {
    const listed = await this.list(server, 'resources/templates/list', (instance, timeoutMs) =>
      instance.capabilities().resources ? instance.listResourceTemplates(timeoutMs, max) : null,
    );
    return listed && this.withoutSecrets(listed, (t) => t.uriTemplate);
  }

  /** Lists the upstream's prompts (all pages), or null when it did not declare the `prompts` capability. */
  async listPrompts(server: string, max: number): Promise<UpstreamListing<Prompt> | null> {
    const listed = await this.list(server, 'prompts/list', (instance, timeoutMs) =>
      instance.capabilities().prompts ? instance.listPrompts(timeoutMs, max) : null,
    );
    // Its arguments' names are sent back as they are listed too.
    return listed && this.withoutSecrets(listed, (p) => [p.name, ...(p.arguments ?? []).map((a) => a.name)]);
  }

  /**
   * A listing as every client of the AEIs the server is attached to may see it: no secret of the
   * server's in it. An entry whose keys (a URI, a name: how it is asked for, so they cannot be
   * rewritten) hold one is left out and counted in `withheld`; the others are redacted, and so is
   * what is said of the entries left out.
   */
  private withoutSecrets<T>(listed: Listing<T>, keys: (item: T) => unknown): UpstreamListing<T> {
    const items = listed.items.filter((item) => {
      const found = keys(item);
      return (Array.isArray(found) ? found : [found]).every(
        (k) => typeof k !== 'string' || this.secrets.redact(k) === k,
      );
    });
    return {
      items: items.map((item) => this.secrets.redactJson(item)),
      truncated: listed.truncated,
      withheld: listed.items.length - items.length,
      skipped: listed.skipped.map((entry) => this.secrets.redactJson(entry)),
      moreSkipped: listed.moreSkipped,
    };
  }

  /** One list request on a shared instance, started when none runs, within the call timeout. */
  private async list<T>(
    server: string,
    what: string,
    run: (instance: UpstreamInstance, timeoutMs: number) => Promise<T> | T,
  ): Promise<T> {
    const timeoutMs = this.options.limits.callTimeoutMs;
    const instance = await this.acquire(server, '', this.now() + timeoutMs);
    try {
      const listed = await run(instance, timeoutMs);
      this.succeeded();
      return listed;
    } catch (error) {
      throw this.callFailed(server, what, instance.failureOf(error), undefined, timeoutMs);
    } finally {
      this.release(instance);
    }
  }

  /** resources/read of one URI on an instance (of the session in per_session mode), like a tool call. */
  async readResource(
    server: string,
    uri: string,
    call: CallOptions & { input?: UpstreamInput | undefined } = {},
  ): Promise<ReadResourceResult | InputRequiredAnswer> {
    return this.request(server, `resources/read of ${uri.slice(0, 200)}`, call, (instance, timeoutMs) =>
      instance.readResource(uri, { timeoutMs, signal: call.signal, input: call.input }),
    );
  }

  /**
   * Subscribes to `uri` on the shared instance (started when none runs), unless it already is:
   * answers false when the server does not offer subscriptions (`resources.subscribe`). A 2025-era
   * server is sent resources/subscribe; a modern one is listened to (instance.subscribeResource).
   */
  async subscribeResource(server: string, uri: string): Promise<boolean> {
    // Already subscribed on a running instance: a renewal asks nothing of the server.
    if ([...this.instances].some((instance) => instance.subscribed.has(uri))) return true;
    return this.list(server, 'resources/subscribe', async (instance, timeoutMs) => {
      if (instance.capabilities().resources?.subscribe !== true) return false;
      if (!instance.subscribed.has(uri)) await instance.subscribeResource(uri, timeoutMs);
      return true;
    });
  }

  /** Unsubscribes `uri` on whichever running instance holds it (none: nothing to do). */
  async unsubscribeResource(uri: string): Promise<void> {
    const timeoutMs = this.options.limits.callTimeoutMs;
    for (const instance of this.instances) {
      if (instance.subscribed.has(uri)) await instance.unsubscribeResource(uri, timeoutMs).catch(() => {});
    }
  }

  /** prompts/get of one prompt on an instance (of the session in per_session mode), like a tool call. */
  async getPrompt(
    server: string,
    name: string,
    args: Record<string, string>,
    call: CallOptions & { input?: UpstreamInput | undefined } = {},
  ): Promise<GetPromptResult | InputRequiredAnswer> {
    return this.request(server, `prompts/get of ${name.slice(0, 200)}`, call, (instance, timeoutMs) =>
      instance.getPrompt(name, args, { timeoutMs, signal: call.signal, input: call.input }),
    );
  }

  /** completion/complete of a prompt's or a resource template's argument (UpstreamInstance.complete). */
  async complete(
    server: string,
    params: CompleteRequest['params'],
    call: CallOptions = {},
  ): Promise<CompleteResult> {
    return this.request(server, 'completion/complete', call, (instance, timeoutMs) =>
      instance.complete(params, { timeoutMs, signal: call.signal }),
    );
  }

  /**
   * tasks/get, tasks/update or tasks/cancel of a task this server made: on the instance that made
   * it while it runs; when it is gone, for a child process (`childProcess`: its tasks lived there)
   * the task is NOT_FOUND and no child is started to be asked, for an HTTP server (one server behind
   * every connection) any instance asks.
   */
  async task(
    server: string,
    method: 'tasks/get' | 'tasks/update' | 'tasks/cancel',
    ref: TaskRef,
    inputResponses: Record<string, unknown> | undefined,
    childProcess: boolean,
    call: CallOptions = {},
  ): Promise<UpstreamTask | undefined> {
    const params = { taskId: ref.taskId, ...(inputResponses !== undefined && { inputResponses }) };
    const ask = (instance: UpstreamInstance, timeoutMs: number) =>
      instance.taskRequest(method, params, { timeoutMs, signal: call.signal });
    const maker = [...this.instances].find((instance) => instance.id === ref.instance && instance.alive);
    if (!maker && childProcess) {
      throw new DomainError(
        'NOT_FOUND',
        `the task is gone: the process of upstream server "${server}" that ran it has ended`,
        { upstream: server },
      );
    }
    // On its maker, beside whatever it runs, past its concurrency: a poll is short and must not
    // wait behind a long call (polls are bounded by the agent's rate limit in the gateway).
    const answer = await this.request(server, method, call, ask, maker);
    // Ended: its child need not be kept for it any longer.
    if (answer && TERMINAL_TASK_STATUSES.has(answer.status)) maker?.heldTasks.delete(ref.taskId);
    return answer;
  }

  /** Keeps a child that made `task` from being stopped as idle while the task may be asked. */
  private holdFor(instance: UpstreamInstance, task: UpstreamTask): void {
    const held = instance.heldTasks;
    // Bounded: past so many, the one that would be let go first goes now.
    if (held.size >= MAX_HELD_TASKS) {
      let first: [string, number] | undefined;
      for (const entry of held) if (!first || entry[1] < first[1]) first = entry;
      if (first) held.delete(first[0]);
    }
    held.set(task.taskId, this.now() + Math.min(task.ttlMs ?? MAX_TASK_HOLD_MS, MAX_TASK_HOLD_MS));
  }

  /** True while a task made on the instance may still be asked (expired ones are let go here). */
  private holdsTasks(instance: UpstreamInstance): boolean {
    const now = this.now();
    for (const [taskId, until] of instance.heldTasks) if (until <= now) instance.heldTasks.delete(taskId);
    return instance.heldTasks.size > 0;
  }

  /**
   * One request of a caller (not a tool call): the same instance choice, timeout, cancellation,
   * circuit accounting and redaction as callTool. `on`: that instance, taken whatever it runs.
   */
  private async request<T>(
    server: string,
    what: string,
    call: CallOptions,
    run: (instance: UpstreamInstance, timeoutMs: number) => Promise<T>,
    on?: UpstreamInstance,
  ): Promise<T> {
    const { signal, session } = call;
    const timeoutMs = this.options.limits.callTimeoutMs;
    const instance = on
      ? this.take(on)
      : await this.acquire(server, this.keyOf(session), this.now() + timeoutMs, signal);
    try {
      const result = await run(instance, timeoutMs);
      this.succeeded();
      this.options.events.meter?.call('ok');
      return this.secrets.redactJson(result);
    } catch (error) {
      throw this.callFailed(server, what, instance.failureOf(error), signal, timeoutMs);
    } finally {
      this.release(instance);
    }
  }

  /** Stops every instance (and refuses calls from now on); children are killed and waited for. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const asking of [...this.asking.values()]) asking.done();
    for (const waiter of this.waiters.splice(0)) {
      waiter.reject(new DomainError('UPSTREAM_FAILED', 'the upstream server was removed or changed'));
    }
    await Promise.all([...this.instances].map((i) => i.close()));
    this.instances.clear();
    this.options.events.meter?.instances(0);
  }

  /** A failure as it may be shown: one line, bounded, without the instance's secrets. */
  private describe(error: unknown): string {
    return this.secrets.redact(describe(error));
  }

  private circuitOpen(): boolean {
    return this.failures >= CIRCUIT_FAILURES && this.now() < this.nextStartAt;
  }

  private refuseOpen(server: string): DomainError {
    this.options.events.meter?.call('refused');
    return new DomainError(
      'UPSTREAM_FAILED',
      `upstream server "${server}" is failing (circuit open after ${this.failures} failures in a row): ${this.lastError ?? 'unknown error'}`,
      {
        upstream: server,
        circuit: 'open',
        last_error: this.lastError,
        retry_after_ms: this.nextStartAt - this.now(),
      },
    );
  }

  /** The instances' key of a call: its session in per_session mode, '' (shared) otherwise. */
  private keyOf(session: string | undefined): string {
    return this.options.perSession ? (session ?? '') : '';
  }

  /**
   * Room for one more instance of `key`. Shared: up to max_instances. Per session: one per session,
   * max_instances sessions at once. Connections that relay an agent's questions (ASKING keys) have
   * a budget of their own of as many again, so calls waiting on their agents never hold up the
   * others. When a budget is taken, the instance of another key idle longest is stopped for it (its
   * upstream session ends, as it would after the idle timeout); one holding subscriptions is kept.
   */
  private roomFor(key: string): boolean {
    const limit = this.options.limits.maxInstances;
    const asking = key.includes(ASKING);
    const sameBudget = (session: string) => session.includes(ASKING) === asking;
    // One instance per key where a key is one caller: a session, or a caller's relaying connection
    // (one call of a caller waits on its agent at a time; another runs as if it could not be asked).
    const oneOfKey = this.options.perSession || asking;
    if (
      oneOfKey &&
      ([...this.instances].some((i) => i.session === key) || (this.startingFor.get(key) ?? 0) > 0)
    )
      return false;
    let used = 0;
    for (const instance of this.instances) if (sameBudget(instance.session)) used += 1;
    for (const [starting, n] of this.startingFor) if (sameBudget(starting)) used += n;
    if (used < limit) return true;
    // Where a budget is full, an idle instance of another key makes room (other sessions, or
    // relaying connections of other callers); shared instances of one key wait for each other.
    if (!oneOfKey) return false;
    let idlest: UpstreamInstance | undefined;
    for (const instance of this.instances) {
      // One holding subscriptions is where their updates come from: it is not made room of.
      if (
        sameBudget(instance.session) &&
        instance.session !== key &&
        instance.inFlight === 0 &&
        instance.subscribed.size === 0 &&
        !this.holdsTasks(instance) &&
        (!idlest || instance.lastUsedAt < idlest.lastUsedAt)
      )
        idlest = instance;
    }
    if (!idlest) return false;
    this.instances.delete(idlest);
    void idlest.close();
    return true;
  }

  /** A free instance, started if none is and the limits allow; else waits for one until `deadline`. */
  private async acquire(
    server: string,
    key: string,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<UpstreamInstance>;
  /** `wait` false: undefined rather than waiting when none is free and none can start now. */
  private async acquire(
    server: string,
    key: string,
    deadline: number,
    signal: AbortSignal | undefined,
    wait: false,
  ): Promise<UpstreamInstance | undefined>;
  private async acquire(
    server: string,
    key: string,
    deadline: number,
    signal?: AbortSignal,
    wait = true,
  ): Promise<UpstreamInstance | undefined> {
    if (this.closed)
      throw new DomainError('UPSTREAM_FAILED', `upstream server "${server}" was removed or changed`);
    if (this.circuitOpen()) throw this.refuseOpen(server);
    const free = this.freeInstance(key);
    if (free) return this.take(free);
    if (this.roomFor(key)) {
      // Before the backoff's end (after a crash), the start waits for it, within the deadline.
      const wait = this.nextStartAt - this.now();
      if (wait > 0) {
        if (this.now() + wait >= deadline)
          throw this.timeoutError(server, 'instance start (restart backoff)');
        await sleep(wait, signal);
        if (this.circuitOpen()) throw this.refuseOpen(server);
      }
      // The connection outlives the call that needed it: its requests are no part of that trace.
      const started = this.take(await detached(() => this.start(server, key)));
      // Calls that queued while it started share it, up to its concurrency.
      this.serveWaiters(started);
      return started;
    }
    if (!wait) return undefined;
    const slots = this.options.limits.maxInstances * this.options.limits.concurrentCalls;
    if (this.waiters.length >= slots * QUEUE_PER_SLOT) {
      this.options.events.meter?.call('refused');
      throw new DomainError(
        'RATE_LIMITED',
        `upstream server "${server}" has too many calls waiting; try again shortly`,
        {
          upstream: server,
        },
      );
    }
    return new Promise<UpstreamInstance>((resolve, reject) => {
      const waiter: Waiter = {
        session: key,
        resolve: (instance) => {
          clearTimeout(timer);
          resolve(instance);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(
        () => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          reject(this.timeoutError(server, 'waiting for a free instance'));
        },
        Math.max(1, deadline - this.now()),
      );
      this.waiters.push(waiter);
    });
  }

  private freeInstance(key: string): UpstreamInstance | undefined {
    let best: UpstreamInstance | undefined;
    for (const instance of this.instances) {
      if (instance.session !== key) continue;
      if (!instance.alive || instance.inFlight >= this.concurrencyOf(instance)) continue;
      if (!best || instance.inFlight < best.inFlight) best = instance;
    }
    return best;
  }

  /** What hands a server's log message to a call's caller: at its level or above, secrets taken out. */
  private logListener(log: CallLog): (message: { level: unknown; data: unknown }) => void {
    return ({ level, data }) => {
      if (!isLogLevel(level) || !logLevelAllows(log.level, level)) return;
      log.send({ level, data: this.secrets.redactJson(data) });
    };
  }

  /** Calls an instance serves at once: one for a connection that relays a call's questions. */
  private concurrencyOf(instance: UpstreamInstance): number {
    return instance.session.includes(ASKING) ? 1 : this.options.limits.concurrentCalls;
  }

  private take(instance: UpstreamInstance): UpstreamInstance {
    instance.inFlight += 1;
    instance.lastUsedAt = this.now();
    return instance;
  }

  private release(instance: UpstreamInstance): void {
    instance.inFlight -= 1;
    instance.lastUsedAt = this.now();
    this.serveWaiters(instance);
  }

  /** Hands the instance to calls waiting for one of its session, while it has room. */
  private serveWaiters(instance: UpstreamInstance): void {
    while (instance.alive && instance.inFlight < this.concurrencyOf(instance)) {
      const at = this.waiters.findIndex((w) => w.session === instance.session);
      if (at < 0) return;
      const [waiter] = this.waiters.splice(at, 1);
      waiter!.resolve(this.take(instance));
    }
  }

  /** A start failed: the calls waiting for an instance of that session fail with it (none is coming). */
  private failWaiters(key: string, error: DomainError): void {
    for (let at = this.waiters.findIndex((w) => w.session === key); at >= 0;) {
      const [waiter] = this.waiters.splice(at, 1);
      waiter!.reject(error);
      at = this.waiters.findIndex((w) => w.session === key);
    }
  }

  private async start(server: string, key: string): Promise<UpstreamInstance> {
    this.starting += 1;
    this.startingFor.set(key, (this.startingFor.get(key) ?? 0) + 1);
    if (this.instances.size === 0) this.setState('starting');
    try {
      const resolved = await this.options.transport();
      this.secrets = resolved;
      // Set once connected: lines before that belong to no call.
      const connected: { instance?: UpstreamInstance } = {};
      const instance = await UpstreamInstance.connect({
        transport: resolved.transport,
        ...(resolved.authProvider && { authProvider: resolved.authProvider }),
        knownEra: this.knownEra,
        outbound: this.options.outbound,
        timeoutMs: Math.min(
          START_TIMEOUT_MAX_MS,
          Math.max(START_TIMEOUT_MIN_MS, this.options.limits.callTimeoutMs),
        ),
        // A connection that relays questions holds a call open while the agent answers.
        requestTimeoutMs: key.includes(ASKING)
          ? this.options.limits.callTimeoutMs + MAX_ASK_ROUNDS * ASK_WAIT_MS
          : this.options.limits.callTimeoutMs,
        asks: key.includes(ASKING)
          ? (key
              .slice(key.indexOf(ASKING) + ASKING.length, key.indexOf(BY))
              .split(',') as ClientInputCapability[])
          : undefined,
        caps: this.options.caps,
        hooks: {
          toolsChanged: () => this.options.events.toolsChanged(),
          catalogChanged: (list) => this.options.events.catalogChanged?.(list),
          resourceUpdated: (uri) => this.options.events.resourceUpdated?.(uri),
          closed: (closed) => this.lost(closed),
          stderr: (raw) => {
            const line = this.secrets.redact(raw);
            this.stderr.push(line);
            this.options.events.stderr(line);
            for (const listener of connected.instance?.stderrListeners ?? []) listener(line);
          },
        },
      });
      if (this.closed) {
        await instance.close();
        throw new DomainError('UPSTREAM_FAILED', `upstream server "${server}" was removed or changed`);
      }
      instance.session = key;
      connected.instance = instance;
      this.knownEra = instance.knownEra();
      this.spoken = { era: instance.era, version: instance.protocolVersion };
      this.instances.add(instance);
      this.options.events.meter?.instances(this.instances.size);
      return instance;
    } catch (error) {
      // The server may have changed era (upgraded, or rolled back): the next start probes again.
      this.knownEra = undefined;
      // A person who must connect (again) is not a failure of the server: no backoff, no circuit.
      let failure = error instanceof DomainError ? error : this.secrets.authFailure?.(error);
      if (!failure) {
        const reason = `could not be started: ${this.describe(error)}`;
        this.failed(reason);
        failure = new DomainError('UPSTREAM_FAILED', `upstream server "${server}" ${reason}`, {
          upstream: server,
        });
      }
      // The server waits for its owner to connect: said so, in place of "starting".
      if (failure.code === 'UPSTREAM_AUTH_REQUIRED' && this.instances.size === 0) {
        this.lastError = failure.message;
        this.setState('needs_connection');
      }
      if (this.instances.size === 0 || this.options.perSession) this.failWaiters(key, failure);
      throw failure;
    } finally {
      this.starting -= 1;
      const left = (this.startingFor.get(key) ?? 1) - 1;
      if (left > 0) this.startingFor.set(key, left);
      else this.startingFor.delete(key);
    }
  }

  /**
   * An instance ended on its own (a child exited, a stream broke): dropped, restarted later. One
   * closed for sending more than a cap allows is not a failure of the server's health (it
   * answered): the next call starts another at once, and the circuit is left alone.
   */
  private lost(instance: UpstreamInstance): void {
    if (!this.instances.delete(instance)) return;
    void instance.close();
    this.restarts += 1;
    this.options.events.meter?.restart();
    this.options.events.meter?.instances(this.instances.size);
    if (instance.cutBy) this.lastError = instance.cutBy.message;
    else this.failed('the upstream server exited or closed the connection');
  }

  private succeeded(): void {
    this.failures = 0;
    this.backoffMs = 0;
    this.nextStartAt = 0;
    this.lastError = null;
    this.setState('ok');
  }

  private failed(reason: string): void {
    this.failures += 1;
    this.lastError = reason;
    this.options.events.meter?.failure();
    this.backoffMs = this.backoffMs === 0 ? BACKOFF_FIRST_MS : Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    // Jitter: between half and all of the backoff, so restarts of many pools do not line up.
    this.nextStartAt = this.now() + Math.round(this.backoffMs * (0.5 + this.random() * 0.5));
    this.setState(this.failures >= CIRCUIT_FAILURES ? 'circuit_open' : 'failing');
  }

  private setState(state: PoolState): void {
    if (state === this.state && state !== 'failing' && state !== 'circuit_open') return;
    this.state = state;
    this.options.events.stateChanged(state, this.lastError);
  }

  private timeoutError(server: string, what: string): DomainError {
    this.options.events.meter?.call('timeout');
    return new DomainError(
      'TIMEOUT',
      `upstream server "${server}" did not answer within ${this.options.limits.callTimeoutMs} ms (${what})`,
      { upstream: server, timeout_ms: this.options.limits.callTimeoutMs },
    );
  }

  /** What a failed request becomes; timeouts and broken connections count against the circuit. */
  private callFailed(
    server: string,
    tool: string,
    error: unknown,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): DomainError {
    if (error instanceof DomainError) return error;
    const unauthorized = this.secrets.authFailure?.(error);
    if (unauthorized) {
      this.options.events.meter?.call('refused');
      return unauthorized;
    }
    if (error instanceof AnswerTooLarge) {
      // The upstream answered, too much: a refusal of this request, not a failure of the server.
      this.options.events.meter?.call('refused');
      return new DomainError(
        'RESULT_TOO_LARGE',
        `upstream server "${server}" answered ${tool}: ${error.message}`,
        {
          upstream: server,
          limit_bytes: error.limitBytes,
          cap: error.what === 'message' ? 'UPSTREAM_MESSAGE_MAX_BYTES' : 'UPSTREAM_CALL_MAX_BYTES',
        },
      );
    }
    if (signal?.aborted) {
      this.options.events.meter?.call('error');
      return new DomainError('UPSTREAM_FAILED', `the call of ${tool} on "${server}" was cancelled`, {
        upstream: server,
        cancelled: true,
      });
    }
    // The upstream answered, wrongly: it is up, so one such answer is not counted against its circuit.
    if (error instanceof MalformedAnswer) {
      this.options.events.meter?.call('error');
      return new DomainError(
        'UPSTREAM_FAILED',
        `upstream server "${server}" answered ${this.secrets.redact(error.request)} with a result MCP does not allow: ${this.describe(error.problem)}`,
        { upstream: server, malformed: true },
      );
    }
    const code = mcpCode(error);
    // A server remembered as modern that refuses the version or the method, or fails outside
    // JSON-RPC (a legacy server's 400), may have gone back to the legacy era: the next instance
    // probes again instead of trusting the verdict.
    if (this.spoken?.era === 'modern' && (code === undefined || code === -32022 || code === -32601)) {
      this.knownEra = undefined;
    }
    if (requestFailure(error) === 'timeout') {
      this.failed(`${tool} did not answer within ${timeoutMs} ms`);
      return this.timeoutError(server, tool);
    }
    if (code === undefined) {
      this.failed(this.describe(error));
      this.options.events.meter?.call('error');
      return new DomainError(
        'UPSTREAM_FAILED',
        `upstream server "${server}" failed during ${tool}: ${this.describe(error)}`,
        {
          upstream: server,
        },
      );
    }
    // A JSON-RPC error the upstream answered (unknown tool, bad arguments): the server is fine.
    this.options.events.meter?.call('error');
    return new DomainError(
      'UPSTREAM_FAILED',
      `upstream server "${server}" refused ${tool}: ${this.describe(error)}`,
      {
        upstream: server,
        rpc_code: code,
        ...(code === MISSING_CLIENT_CAPABILITY_ERROR && {
          required_capabilities: this.secrets.redactJson(requiredCapabilitiesOf(error)),
        }),
      },
    );
  }

  /** Stops idle instances; pings the others now and then (a failed ping stops the instance). */
  private async tick(): Promise<void> {
    const now = this.now();
    for (const instance of [...this.instances]) {
      // An instance holding subscriptions stays: it is where their updates come from.
      if (
        instance.inFlight === 0 &&
        instance.subscribed.size === 0 &&
        !this.holdsTasks(instance) &&
        now - instance.lastUsedAt >= this.options.limits.idleTimeoutMs
      ) {
        this.instances.delete(instance);
        this.options.events.meter?.instances(this.instances.size);
        void instance.close();
      }
    }
    if (this.instances.size === 0 && this.starting === 0 && this.state === 'ok') this.setState('stopped');
    if (now - this.lastPingAt < this.pingEveryMs) return;
    this.lastPingAt = now;
    await Promise.all(
      [...this.instances].map(async (instance) => {
        try {
          await instance.ping(PING_TIMEOUT_MS);
        } catch (error) {
          if (!this.instances.delete(instance)) return;
          void instance.close();
          this.options.events.meter?.instances(this.instances.size);
          this.failed(`ping failed: ${this.describe(error)}`);
        }
      }),
    );
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
