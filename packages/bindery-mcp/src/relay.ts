/**
 * The stdio relay: JSON-RPC messages from the client on stdin go to the gateway's MCP endpoint
 * (Streamable HTTP) and everything the gateway sends comes back on stdout, unchanged, at the
 * transport level: requests, answers, notifications both ways and the gateway's own requests to
 * the client. Nothing here knows MCP's methods beyond what a new session needs.
 *
 * Both protocol eras, told apart per request as the gateway does (decision 067): a request whose
 * `_meta` names a protocol version is of the 2026-07-28 era. Once a `server/discover` of the
 * relay's own found the gateway modern (asked once, remembered), such a request goes to it as it
 * is, statelessly (modern-gateway.ts), and a `notifications/cancelled` for it abandons its POST.
 * A gateway that does not know the era (an older one) gets them instead on a legacy session the
 * relay opens for them and renews as below (modern-era.ts translates). Everything else is the
 * 2025 era: an `initialize` opens a session whatever the gateway speaks, since only a session
 * carries list_changed, subscriptions, the log level and the gateway's requests to the client.
 *
 * Of a session, it keeps what a new one needs to look like the old one to the client: the
 * client's initialize request, its last logging/setLevel and the resources it subscribed to. When the
 * gateway drops the session (404, seen on a request or on the standalone stream: a POST with an
 * unknown session is served without one, so the stream is what tells) or goes away (connection
 * refused or reset, the stream ends and cannot be reopened), the relay starts a new session with
 * them (its answers are not forwarded), sends the request that failed once more (see mayRepeat:
 * never a tools/call that may have run already; nor one the client cancelled while it waited) and
 * tells the client its lists may have changed.
 * While the gateway is unreachable each request is answered at once with an error saying so, and
 * new sessions are tried in the background (backing off from 250 ms to 5 s) and once more whenever
 * a request arrives. Requests in flight and messages held before initialize is answered are
 * bounded (MAX_WAITING); past the bound a request is answered with an error at once.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { Readable, Writable } from 'node:stream';
import { headerParamsOf, paramHeaders, type HeaderParam } from '@bindery/contracts/param-headers';
import { GatewayConnection, SendError, type Failure, type RpcError, type StreamLoss } from './connection.ts';
import type { Logger } from './log.ts';
import {
  bridgeInitialize,
  bridgeRefusal,
  discoverFromInitialize,
  envelopeOf,
  modernResult,
  offersModern,
  probeMeta,
  withoutEnvelope,
  type Envelope,
} from './modern-era.ts';
import { ModernGateway } from './modern-gateway.ts';

/** JSON-RPC's "server error" range; what an SDK client reports as a closed connection. */
export const UNREACHABLE_CODE = -32000;

/**
 * The most client requests waiting for the gateway's answers, client messages held until its
 * initialize is answered, and gateway requests waiting for the client's answers (past it the
 * oldest is forgotten, its answer then goes to the current session).
 */
const MAX_WAITING = 1_000;
/** Where a tools/call carries its idempotency key (as in @bindery/contracts' internal API). */
const IDEMPOTENCY_META_KEY = 'bindery/idempotency_key';
/** The code of the gateway's refusal of headers that do not match the body (MCP 2026-07-28). */
const HEADER_MISMATCH = -32020;
/** At most this many pages of the gateway's tools/list are read for their header marks. */
const MAX_MARK_PAGES = 50;
/** Network failures that happen before a request is sent: it did not reach the gateway. */
const NOT_SENT = /^(?:ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT)$/;

export interface RelayTimings {
  /** The first wait between attempts at a new session while the gateway is unreachable. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** How long a request waits for a new session before it is answered with an error. */
  requestWaitMs: number;
  /** How long the relay's own requests (initialize, the replays) may take. */
  ownRequestTimeoutMs: number;
  /** The bound on closing the session when stdin ends. */
  closeTimeoutMs: number;
}

export const DEFAULT_TIMINGS: RelayTimings = {
  initialBackoffMs: 250,
  maxBackoffMs: 5_000,
  requestWaitMs: 1_500,
  ownRequestTimeoutMs: 10_000,
  closeTimeoutMs: 1_000,
};

/** How long an answer may trail its stream's end before the request counts as unanswered. */
const ANSWER_GRACE_MS = 200;
/** A replaced session still finishing requests is closed after this long regardless. */
const RETIRED_GRACE_MS = 120_000;
/** A standalone stream that lived this long before it ended is reopened at once. */
const STREAM_STEADY_MS = 2_000;

const LIST_CHANGED = [
  ['tools', 'notifications/tools/list_changed'],
  ['prompts', 'notifications/prompts/list_changed'],
  ['resources', 'notifications/resources/list_changed'],
] as const;

export interface RelayOptions {
  endpoint: URL;
  /** Every request's headers (the key as a bearer token). */
  headers: Record<string, string>;
  /** The gateway's base URL, for messages. */
  gatewayUrl: string;
  log: Logger;
  stdin?: Readable;
  stdout?: Writable;
  timings?: Partial<RelayTimings>;
}

type State = 'new' | 'up' | 'down' | 'closing';

interface Pending {
  request: JSONRPCRequest;
  connection: GatewayConnection;
}

interface OwnRequest {
  resolve(result: Record<string, unknown>): void;
  reject(failure: Failure): void;
}

/** Map key of a request id: 1 and "1" are different requests. */
const keyOf = (id: RequestId) => `${typeof id}:${id}`;

const isRequest = (m: JSONRPCMessage): m is JSONRPCRequest => 'method' in m && 'id' in m;
const isNotification = (m: JSONRPCMessage): m is JSONRPCNotification => 'method' in m && !('id' in m);

export class Relay {
  readonly #options: RelayOptions;
  readonly #timings: RelayTimings;
  readonly #log: Logger;
  readonly #stdin: Readable;
  readonly #stdio: StdioServerTransport;
  #state: State = 'new';
  #current: GatewayConnection | undefined;
  readonly #connections = new Set<GatewayConnection>();
  #connectionIds = 0;

  // What a new session replays.
  #savedInitialize: JSONRPCRequest | undefined;
  #clientInitialised = false;
  #logLevel: string | undefined;
  readonly #subscriptions = new Set<string>();

  readonly #pending = new Map<string, Pending>();
  /** Requests waiting for a new session before they are sent (again), by id key; a cancel removes one. */
  readonly #waiting = new Set<string>();
  /** The gateway's requests to the client, by id: the session their answer goes back to. */
  readonly #gatewayRequests = new Map<string, GatewayConnection>();
  readonly #own = new Map<string, OwnRequest>();
  #ownIds = 0;

  /**
   * While the client's initialize is unanswered, what it sent after it (a client should wait,
   * but the session id and protocol version come with that answer); the request's id key.
   */
  #held: { id: string; messages: JSONRPCMessage[] } | undefined;

  #recovery: Promise<boolean> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #backoffMs: number;
  #downSince: number | undefined;
  #failure: Failure | undefined;
  #streamReopens = 0;
  #closed: Promise<void> | undefined;

  // The modern era (see "Modern clients" below).
  #modernGateway: ModernGateway | undefined;
  /** What the probe found the gateway speaks; undefined until a probe could tell. */
  #gatewayEra: 'modern' | 'legacy' | undefined;
  #probing: Promise<'modern' | 'legacy' | Failure> | undefined;
  /** Modern requests the gateway is answering, by id key: the controller that cancels one. */
  readonly #modernPending = new Map<string, AbortController>();
  /**
   * The tools whose arguments the gateway wants in Mcp-Param-* headers, by name, once a refusal
   * made the relay read them (#resendForHeaders); none until then.
   */
  #marks: Promise<Map<string, readonly HeaderParam[]>> | undefined;
  /** How many reads of the marks have started: a refusal of a call sent before the last one needs no other. */
  #marksRead = 0;
  /** The modern tools/calls not answered yet, to send once more if refused for their headers. */
  readonly #headerCalls = new Map<
    string,
    {
      request: JSONRPCRequest;
      envelope: Envelope;
      cancel: AbortController;
      resent: boolean;
      /** #marksRead when it was sent. */
      read: number;
    }
  >();
  /** Modern requests on a legacy session (an older gateway): their methods, by id key (see #toClient). */
  readonly #bridged = new Map<string, string>();
  /** The first attempt at the legacy session a modern client's requests share (an older gateway). */
  #bridgeReady: Promise<boolean> | undefined;
  /** The current session's initialize result: what server/discover answers on that session. */
  #initialized: Record<string, unknown> | undefined;

  constructor(options: RelayOptions) {
    this.#options = options;
    this.#timings = { ...DEFAULT_TIMINGS, ...options.timings };
    this.#backoffMs = this.#timings.initialBackoffMs;
    this.#log = options.log;
    this.#stdin = options.stdin ?? process.stdin;
    this.#stdio = new StdioServerTransport(this.#stdin, options.stdout ?? process.stdout);
  }

  /** Starts reading stdin; resolves once stdin has ended and the session is closed. */
  async run(): Promise<void> {
    const ended = new Promise<void>((resolve) => {
      this.#stdin.once('end', resolve);
      this.#stdin.once('close', resolve);
      // The transport gave up reading stdin (a message past its size limit): nothing more comes.
      this.#stdio.onclose = resolve;
    });
    this.#stdio.onmessage = (message) => this.#fromClient(message);
    // A line that is not a JSON-RPC message is skipped (it has no id to answer).
    this.#stdio.onerror = (error) => this.#log.warning(`stdin: ${error.message}`);
    await this.#stdio.start();
    this.#log.info(`relaying stdio to ${this.#options.endpoint.href}`);
    await ended;
    this.#log.debug('stdin ended');
    await this.close();
  }

  /** Closes the gateway session (DELETE, bounded) and stops; safe to call more than once. */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    // Answers on their way still go out (a script piping requests in reads them), briefly.
    const deadline = Date.now() + this.#timings.closeTimeoutMs;
    while (this.#pending.size + this.#modernPending.size > 0 && Date.now() < deadline) await sleep(20);
    this.#state = 'closing';
    clearTimeout(this.#retryTimer);
    const current = this.#current;
    if (current && !current.closed) await current.terminate(this.#timings.closeTimeoutMs);
    await Promise.all([...this.#connections].map((c) => c.close()));
    await this.#modernGateway?.close();
    for (const own of this.#own.values()) own.reject({ kind: 'aborted' });
    this.#own.clear();
    await this.#stdio.close().catch(() => undefined);
  }

  // From the client ---------------------------------------------------------------------------

  #fromClient(message: JSONRPCMessage): void {
    if (this.#state === 'closing') return;
    if (!this.#held) this.#dispatch(message);
    else if (this.#held.messages.length < MAX_WAITING) this.#held.messages.push(message);
    else if (isRequest(message)) {
      this.#reply(message.id, {
        code: UNREACHABLE_CODE,
        message: `the client sent ${MAX_WAITING} messages before its initialize was answered; refused`,
      });
    } else {
      this.#log.debug(`dropped a message: the client sent ${MAX_WAITING} before its initialize was answered`);
    }
  }

  #dispatch(message: JSONRPCMessage): void {
    if (isRequest(message)) {
      const envelope = envelopeOf(message);
      if (envelope) void this.#modern(message, envelope);
      else if (message.method === 'initialize') void this.#initialize(message);
      else void this.#forward(message);
    } else if (isNotification(message)) {
      if (!this.#cancelModern(message)) this.#notify(message);
    } else {
      this.#answerGateway(message);
    }
  }

  async #initialize(request: JSONRPCRequest): Promise<void> {
    this.#savedInitialize = structuredClone(request);
    this.#clientInitialised = false;
    this.#held = { id: keyOf(request.id), messages: [] };
    const previous = this.#current;
    const connection = await this.#open();
    this.#current = connection;
    // A client starting over: its old session is of no more use.
    if (previous) this.#retire(previous);
    this.#pending.set(keyOf(request.id), { request, connection });
    try {
      await connection.send(request);
    } catch (error) {
      const failure = (error as SendError).failure;
      if (!this.#take(request.id, connection)) return;
      if (failure.kind !== 'aborted') this.#goDown(failure, 'initialize');
      this.#reply(request.id, this.#errorFor(failure));
    }
  }

  /** Answers `request` with an error when MAX_WAITING requests are waiting already; true then. */
  #refusedAsTooMany(request: JSONRPCRequest): boolean {
    if (this.#pending.size + this.#waiting.size + this.#modernPending.size < MAX_WAITING) return false;
    this.#reply(request.id, {
      code: UNREACHABLE_CODE,
      message: `${MAX_WAITING} requests are waiting for the Bindery gateway's answers already; try again later`,
    });
    return true;
  }

  async #forward(request: JSONRPCRequest): Promise<void> {
    if (this.#refusedAsTooMany(request)) return;
    for (let attempt = 0; ; attempt += 1) {
      if (this.#state === 'down') {
        const recovered = await this.#waitFor(request, this.#recoverWithin('a request arrived'));
        if (recovered === undefined) return;
        // Up again also when the new session is still replaying (past the wait): send it then.
        if (!recovered && !this.#isUp()) {
          this.#reply(request.id, this.#errorFor(this.#failure));
          return;
        }
      }
      if (this.#state === 'closing') return;
      // A request before initialize goes to the gateway as it is; it decides.
      const connection = this.#current ?? (this.#current = await this.#open());
      this.#pending.set(keyOf(request.id), { request, connection });
      let failure: Failure;
      try {
        await connection.send(request);
        return;
      } catch (error) {
        failure = (error as SendError).failure;
      }
      // Answered meanwhile (a stream that broke after the answer), or cancelled: nothing to do.
      if (!this.#take(request.id, connection, request) || this.#closing()) return;
      const repeat = mayRepeat(request, failure);
      if (repeat !== true || attempt >= 1) {
        this.#reply(
          request.id,
          repeat === 'unsure' ? this.#unsure(request, failure) : this.#errorFor(failure),
        );
        return;
      }
      this.#log.debug(`${request.method} failed (${describe(failure)}); starting a new session`);
      const recovered =
        connection === this.#current
          ? await this.#waitFor(request, this.#recoverWithin(describe(failure), failure))
          : true;
      if (recovered === undefined) return;
      if (!recovered && !this.#isUp()) {
        this.#reply(request.id, this.#errorFor(this.#failure ?? failure));
        return;
      }
    }
  }

  #notify(notification: JSONRPCNotification): void {
    let connection = this.#current;
    if (notification.method === 'notifications/initialized') this.#clientInitialised = true;
    if (notification.method === 'notifications/cancelled') {
      const id = (notification.params as { requestId?: RequestId } | undefined)?.requestId;
      const pending = id === undefined ? undefined : this.#pending.get(keyOf(id));
      if (pending && id !== undefined) {
        connection = pending.connection;
        // The gateway does not answer a cancelled request; nor does the relay.
        this.#take(id, connection);
      } else if (id !== undefined && this.#waiting.delete(keyOf(id))) {
        this.#log.debug(`request ${JSON.stringify(id)} cancelled before it was sent`);
        return;
      }
    }
    if (this.#state === 'down' || !connection || connection.closed) {
      this.#log.debug(
        `dropped ${notification.method}: ${connection ? 'the gateway is unreachable' : 'no session with the gateway'}`,
      );
      return;
    }
    connection.send(notification).catch((error: unknown) => {
      const failure = (error as SendError).failure;
      this.#log.debug(`${notification.method} did not reach the gateway (${describe(failure)})`);
      if (failure.kind === 'unreachable' && connection === this.#current)
        void this.#recover(describe(failure));
    });
  }

  /** The client's answer to a request of the gateway goes back to the session that asked. */
  #answerGateway(answer: JSONRPCMessage): void {
    const id = (answer as { id?: RequestId }).id;
    const connection = id === undefined ? undefined : this.#gatewayRequests.get(keyOf(id));
    if (id !== undefined) this.#gatewayRequests.delete(keyOf(id));
    const target = connection ?? this.#current;
    if (!target || target.closed) {
      this.#log.debug('dropped an answer to the gateway: its session is gone');
      return;
    }
    target.send(answer).catch((error: unknown) => {
      this.#log.debug(`an answer did not reach the gateway (${describe((error as SendError).failure)})`);
    });
  }

  // Modern clients ------------------------------------------------------------------------------

  /**
   * A 2026-07-28 request: straight to a gateway that speaks that era (stateless, no session), or
   * carried on a legacy session when the gateway is older. Which one the gateway is, a probe
   * (server/discover) tells once; a probe that could not tell (unreachable, refused with 401, 403
   * or 5xx) answers the request with its error and is tried again with the next request.
   */
  async #modern(request: JSONRPCRequest, envelope: Envelope): Promise<void> {
    if (this.#refusedAsTooMany(request)) return;
    // Pending from now on: a cancel finds it, and stdin ending waits for its answer.
    const cancel = new AbortController();
    this.#modernPending.set(keyOf(request.id), cancel);
    const era = await this.#eraOfGateway(envelope);
    if (!this.#stillPending(request, cancel)) return;
    if (era === 'modern') await this.#sendModern(request, envelope, cancel);
    else if (era === 'legacy') await this.#bridge(request, envelope, cancel);
    else {
      this.#modernPending.delete(keyOf(request.id));
      this.#reply(request.id, this.#modernError(era));
    }
  }

  /** Whether the modern `request` is still to be answered (not cancelled, the relay not closing). */
  #stillPending(request: JSONRPCRequest, cancel: AbortController): boolean {
    return this.#modernPending.get(keyOf(request.id)) === cancel && !this.#closing();
  }

  #eraOfGateway(envelope: Envelope): Promise<'modern' | 'legacy' | Failure> {
    if (this.#gatewayEra) return Promise.resolve(this.#gatewayEra);
    this.#probing ??= this.#probe(envelope).finally(() => {
      this.#probing = undefined;
    });
    return this.#probing;
  }

  async #probe(envelope: Envelope): Promise<'modern' | 'legacy' | Failure> {
    let verdict: 'modern' | 'legacy' | Failure;
    try {
      const discovered = await this.#ownRequest(this.#modernGatewayOf(), 'server/discover', {
        _meta: probeMeta(envelope),
      });
      verdict = offersModern(discovered) ? 'modern' : 'legacy';
    } catch (failure) {
      verdict = probeVerdict(failure as Failure);
    }
    if (typeof verdict === 'string') {
      this.#gatewayEra = verdict;
      this.#log.info(
        verdict === 'modern'
          ? 'the gateway speaks MCP 2026-07-28: relaying modern requests statelessly'
          : 'the gateway does not speak MCP 2026-07-28: relaying modern requests on a 2025 session',
      );
    } else {
      this.#log.debug(`server/discover could not tell the gateway's era (${describe(verdict)})`);
    }
    return verdict;
  }

  #modernGatewayOf(): ModernGateway {
    this.#modernGateway ??= new ModernGateway(this.#options.endpoint, this.#options.headers, {
      message: (message) => this.#fromModern(message),
      answerStreamEnded: (id) => this.#modernStreamEnded(id),
    });
    return this.#modernGateway;
  }

  /**
   * One POST; the answer comes through #fromModern, a failure is answered here. A tools/call goes
   * with the Mcp-Param-* headers its tool's marks ask for, as far as the relay knows them
   * (#paramHeadersOf), and is remembered until answered: refused for its headers, the marks are
   * read and it is sent once more (#resendForHeaders).
   */
  async #sendModern(
    request: JSONRPCRequest,
    envelope: Envelope,
    cancel: AbortController,
    resent = false,
  ): Promise<void> {
    const key = keyOf(request.id);
    try {
      const headers = await this.#paramHeadersOf(request);
      // Cancelled while the marks were read: nothing to send, nothing to keep.
      if (!this.#stillPending(request, cancel)) return;
      if (request.method === 'tools/call') {
        this.#headerCalls.set(key, { request, envelope, cancel, resent, read: this.#marksRead });
      }
      await this.#modernGatewayOf().send(request, cancel.signal, headers);
    } catch (error) {
      const failure = (error as SendError).failure;
      // Answered meanwhile, or cancelled (its abort is the failure): nothing to say.
      if (this.#modernPending.get(key) !== cancel) return;
      this.#modernPending.delete(key);
      this.#headerCalls.delete(key);
      if (failure.kind === 'aborted' || this.#closing()) return;
      this.#log.debug(`${request.method} failed (${describe(failure)})`);
      this.#reply(
        request.id,
        mayRepeat(request, failure) === 'unsure'
          ? this.#unsure(request, failure)
          : this.#modernError(failure),
      );
    }
  }

  /**
   * The Mcp-Param-* headers of a modern tools/call (MCP 2026-07-28, SEP-2243): a client on stdio
   * sends none, and the relay is the one on HTTP. Until a refusal made it read the gateway's marks
   * a call goes without, as the SDK's client sends one whose tool it has not listed: an exposure
   * whose tools mark nothing costs nothing.
   */
  async #paramHeadersOf(request: JSONRPCRequest): Promise<Record<string, string> | undefined> {
    const params = request.params as { name?: unknown; arguments?: unknown } | undefined;
    if (request.method !== 'tools/call' || typeof params?.name !== 'string' || !this.#marks) return undefined;
    const marks = (await this.#marks).get(params.name);
    return marks === undefined ? undefined : paramHeaders(marks, params.arguments);
  }

  /**
   * The marks of the gateway's tools (its tools/list, every page); those of `known` (the last read)
   * when it could not be read.
   */
  async #learnMarks(
    envelope: Envelope,
    known: Promise<Map<string, readonly HeaderParam[]>> | undefined,
  ): Promise<Map<string, readonly HeaderParam[]>> {
    const marks = new Map<string, readonly HeaderParam[]>();
    try {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_MARK_PAGES; page += 1) {
        const listed = await this.#ownRequest(this.#modernGatewayOf(), 'tools/list', {
          ...(cursor !== undefined && { cursor }),
          _meta: probeMeta(envelope),
        });
        const tools = Array.isArray(listed.tools)
          ? (listed.tools as { name?: unknown; inputSchema?: unknown }[])
          : [];
        for (const tool of tools) {
          const scan = headerParamsOf(tool?.inputSchema);
          if (typeof tool?.name === 'string' && scan.ok && scan.params.length > 0)
            marks.set(tool.name, scan.params);
        }
        cursor = typeof listed.nextCursor === 'string' ? listed.nextCursor : undefined;
        if (cursor === undefined) break;
      }
    } catch (failure) {
      // The call goes once more with what was known; the next refusal reads them again.
      this.#log.debug(
        `could not read the gateway's tools for their header marks (${describe(failure as Failure)})`,
      );
      return (await known) ?? marks;
    }
    return marks;
  }

  /**
   * A tools/call the gateway refused for its Mcp-Param-* headers (HeaderMismatch: the tool's marks
   * changed since the relay read them) did not run: the marks are read again and it is sent once
   * more, as the spec advises a client. True when it was.
   */
  #resendForHeaders(id: RequestId, answer: JSONRPCMessage): boolean {
    const key = keyOf(id);
    const call = this.#headerCalls.get(key);
    this.#headerCalls.delete(key);
    const code = (answer as { error?: { code?: unknown } }).error?.code;
    if (!call || call.resent || code !== HEADER_MISMATCH || !this.#stillPending(call.request, call.cancel)) {
      return false;
    }
    // Calls refused together read the marks once: a read started since this one was sent will do.
    if (call.read === this.#marksRead) {
      this.#marksRead += 1;
      this.#marks = this.#learnMarks(call.envelope, this.#marks);
    }
    void this.#sendModern(call.request, call.envelope, call.cancel, true);
    return true;
  }

  #fromModern(message: JSONRPCMessage): void {
    if (this.#state === 'closing') return;
    const id = (message as { id?: RequestId }).id;
    if (!('method' in message) && id !== undefined) {
      if (this.#answerOwn(id, message)) return;
      if (this.#resendForHeaders(id, message)) return;
      if (!this.#modernPending.delete(keyOf(id))) {
        this.#log.debug(`dropped an answer to request ${JSON.stringify(id)}: already answered or cancelled`);
        return;
      }
    }
    this.#toClient(message);
  }

  #modernStreamEnded(id: RequestId): void {
    setTimeout(() => {
      this.#headerCalls.delete(keyOf(id));
      if (!this.#modernPending.delete(keyOf(id))) return;
      this.#reply(id, {
        code: UNREACHABLE_CODE,
        message: `the connection to the Bindery gateway at ${this.#options.gatewayUrl} broke before its answer came; the request may have been carried out`,
      });
    }, ANSWER_GRACE_MS).unref();
  }

  /** A cancelled modern request: its POST is abandoned, which is the cancel on HTTP. True if it was one. */
  #cancelModern(notification: JSONRPCNotification): boolean {
    if (notification.method !== 'notifications/cancelled') return false;
    const id = (notification.params as { requestId?: RequestId } | undefined)?.requestId;
    const cancel = id === undefined ? undefined : this.#modernPending.get(keyOf(id));
    if (!cancel || id === undefined) return false;
    this.#modernPending.delete(keyOf(id));
    this.#headerCalls.delete(keyOf(id));
    cancel.abort();
    this.#log.debug(`request ${JSON.stringify(id)} cancelled`);
    return true;
  }

  /**
   * A modern request to an older gateway, on a legacy session opened for it (and renewed as a
   * legacy client's is): the relay refuses what that session cannot carry, answers server/discover
   * from the session's initialize result, and adds resultType to the gateway's results.
   */
  async #bridge(request: JSONRPCRequest, envelope: Envelope, cancel: AbortController): Promise<void> {
    const key = keyOf(request.id);
    const refusal = bridgeRefusal(request, envelope);
    if (refusal) {
      this.#modernPending.delete(key);
      this.#reply(request.id, refusal);
      return;
    }
    const first = !this.#bridgeReady;
    if (first) {
      this.#savedInitialize ??= bridgeInitialize(envelope);
      this.#bridgeReady = this.#recover('a modern client');
    }
    // When that first attempt failed, a later request tries again (#forward does it by itself).
    await this.#bridgeReady;
    if (request.method === 'server/discover' && !first && !this.#isUp()) {
      await this.#recoverWithin('server/discover');
    }
    // Cancelled while the session opened: not sent.
    if (!this.#stillPending(request, cancel)) return;
    this.#modernPending.delete(key);
    if (request.method === 'server/discover') {
      if (this.#initialized && this.#isUp()) {
        this.#toClient({ jsonrpc: '2.0', id: request.id, result: discoverFromInitialize(this.#initialized) });
      } else {
        this.#reply(request.id, this.#errorFor(this.#failure));
      }
      return;
    }
    this.#bridged.set(key, request.method);
    await this.#forward(withoutEnvelope(request));
  }

  /** The error a failed modern request is answered with (nothing is retried in the background). */
  #modernError(failure: Failure): RpcError {
    if (failure.kind !== 'unreachable') return this.#errorFor(failure);
    return {
      code: UNREACHABLE_CODE,
      message: `the Bindery gateway at ${this.#options.gatewayUrl} is unreachable (${failure.reason}); try again shortly`,
    };
  }

  // From the gateway --------------------------------------------------------------------------

  #fromGateway(connection: GatewayConnection, message: JSONRPCMessage): void {
    if (this.#state === 'closing') return;
    if (!('method' in message)) {
      const id = (message as { id?: RequestId }).id;
      if (id === undefined) {
        this.#toClient(message);
        return;
      }
      if (this.#answerOwn(id, message)) return;
      const pending = this.#take(id);
      if (!pending) {
        this.#log.debug(`dropped an answer to request ${JSON.stringify(id)}: already answered`);
        return;
      }
      if ('result' in message) this.#remember(pending.request, connection, message.result);
      this.#toClient(message);
      return;
    }
    if ('id' in message) {
      if (this.#gatewayRequests.size >= MAX_WAITING) {
        this.#gatewayRequests.delete(this.#gatewayRequests.keys().next().value!);
      }
      this.#gatewayRequests.set(keyOf(message.id), connection);
    }
    this.#toClient(message);
  }

  /** Settles the relay's own request `id` with `answer`; false when `id` is not one. */
  #answerOwn(id: RequestId, answer: JSONRPCMessage): boolean {
    const own = this.#own.get(keyOf(id));
    if (!own) return false;
    this.#own.delete(keyOf(id));
    if ('result' in answer) own.resolve(answer.result as Record<string, unknown>);
    else own.reject({ kind: 'rpc', error: (answer as { error: RpcError }).error });
    return true;
  }

  /** What a new session must replay, learnt from the gateway's successful answers. */
  #remember(request: JSONRPCRequest, connection: GatewayConnection, result: Record<string, unknown>): void {
    const params = (request.params ?? {}) as Record<string, unknown>;
    switch (request.method) {
      case 'initialize': {
        if (connection === this.#current) this.#initialized = result;
        // Every request after this one carries the negotiated version (MCP-Protocol-Version).
        if (typeof result.protocolVersion === 'string') {
          connection.transport.setProtocolVersion(result.protocolVersion);
        }
        if (connection === this.#current) this.#up();
        this.#log.info(`connected (session ${short(connection.sessionId)})`);
        break;
      }
      case 'logging/setLevel':
        if (typeof params.level === 'string') this.#logLevel = params.level;
        break;
      case 'resources/subscribe':
        if (typeof params.uri === 'string') this.#subscriptions.add(params.uri);
        break;
      case 'resources/unsubscribe':
        if (typeof params.uri === 'string') this.#subscriptions.delete(params.uri);
        break;
    }
  }

  #streamLost(connection: GatewayConnection, loss: StreamLoss): void {
    if (connection !== this.#current || connection.closed || this.#state === 'closing') return;
    if (loss.kind === 'ended' || (loss.kind === 'refused' && loss.status === 409)) {
      // Reopened on the same session: at once after a steady stream, backing off after short ones.
      if (loss.kind === 'ended' && loss.livedMs >= STREAM_STEADY_MS) this.#streamReopens = 0;
      const delay =
        this.#streamReopens === 0
          ? 0
          : Math.min(
              this.#timings.initialBackoffMs * 2 ** (this.#streamReopens - 1),
              this.#timings.maxBackoffMs,
            );
      this.#streamReopens += 1;
      this.#log.debug(`the gateway's stream ended; reopening it in ${delay} ms`);
      setTimeout(() => {
        if (connection === this.#current && !connection.closed && this.#state !== 'closing') {
          connection.reopenStream();
        }
      }, delay).unref();
      return;
    }
    const reason =
      loss.kind === 'gone'
        ? 'the gateway no longer holds the session'
        : loss.kind === 'refused'
          ? `the gateway refused the stream (HTTP ${loss.status})`
          : `the gateway is unreachable (${loss.reason})`;
    this.#log.debug(`${reason}; starting a new session`);
    if (loss.kind === 'gone') this.#log.info('the gateway dropped the session; starting a new one');
    void this.#recover(reason);
  }

  #answerStreamEnded(connection: GatewayConnection, ids: RequestId[]): void {
    setTimeout(() => {
      for (const id of ids) {
        const pending = this.#pending.get(keyOf(id));
        if (!pending || pending.connection !== connection) continue;
        this.#take(id, connection);
        this.#reply(id, {
          code: UNREACHABLE_CODE,
          message: `the connection to the Bindery gateway at ${this.#options.gatewayUrl} broke before its answer came; the request may have been carried out`,
        });
      }
    }, ANSWER_GRACE_MS).unref();
  }

  // Sessions ------------------------------------------------------------------------------------

  async #open(): Promise<GatewayConnection> {
    this.#connectionIds += 1;
    const connection = new GatewayConnection(
      this.#connectionIds,
      this.#options.endpoint,
      this.#options.headers,
      {
        message: (c, m) => this.#fromGateway(c, m),
        streamLost: (c, loss) => this.#streamLost(c, loss),
        answerStreamEnded: (c, ids) => this.#answerStreamEnded(c, ids),
        transportError: (c, error) => {
          // The transport's note that it did not reconnect: the relay's own handling follows.
          if (!error.message.startsWith('Maximum reconnection attempts')) {
            this.#log.debug(`session ${c.id}: ${error.message}`);
          }
        },
      },
    );
    this.#connections.add(connection);
    await connection.start();
    return connection;
  }

  /** Closes a session's transport; `terminate`: DELETEs the session first (bounded, best effort). */
  async #dispose(connection: GatewayConnection, terminate = false): Promise<void> {
    if (!this.#connections.delete(connection)) return;
    for (const [key, asking] of this.#gatewayRequests) {
      if (asking === connection) this.#gatewayRequests.delete(key);
    }
    if (terminate) await connection.terminate(this.#timings.closeTimeoutMs);
    await connection.close();
  }

  /** Replaced: closes once its requests in flight are answered (or after a grace period). */
  #retire(connection: GatewayConnection): void {
    if (connection.retired) return;
    connection.retired = true;
    if (!this.#busy(connection)) {
      void this.#dispose(connection, true);
      return;
    }
    setTimeout(() => {
      for (const [key, pending] of this.#pending) {
        if (pending.connection !== connection) continue;
        this.#pending.delete(key);
        this.#reply(pending.request.id, this.#errorFor({ kind: 'aborted' }));
      }
      void this.#dispose(connection, true);
    }, RETIRED_GRACE_MS).unref();
  }

  #busy(connection: GatewayConnection): boolean {
    for (const pending of this.#pending.values()) if (pending.connection === connection) return true;
    return false;
  }

  /**
   * Removes the pending request `id` (only if it is on `connection` and is `request`, when given)
   * and closes a retired session that has nothing left in flight. Undefined when not pending.
   */
  #take(id: RequestId, connection?: GatewayConnection, request?: JSONRPCRequest): Pending | undefined {
    const key = keyOf(id);
    const pending = this.#pending.get(key);
    if (!pending) return undefined;
    if (connection && pending.connection !== connection) return undefined;
    if (request && pending.request !== request) return undefined;
    this.#pending.delete(key);
    if (pending.connection.retired && !pending.connection.closed && !this.#busy(pending.connection)) {
      void this.#dispose(pending.connection, true);
    }
    return pending;
  }

  /** `recovery`, awaited by `request` before it is sent: undefined when it was cancelled meanwhile. */
  async #waitFor(request: JSONRPCRequest, recovery: Promise<boolean>): Promise<boolean | undefined> {
    const key = keyOf(request.id);
    this.#waiting.add(key);
    const recovered = await recovery;
    return this.#waiting.delete(key) ? recovered : undefined;
  }

  #recoverWithin(trigger: string, failure?: Failure): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      this.#recover(trigger, failure),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.#timings.requestWaitMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** One attempt at a new session (shared by everyone asking meanwhile); true when it is up. */
  #recover(trigger: string, failure?: Failure): Promise<boolean> {
    if (this.#state === 'closing' || !this.#savedInitialize) {
      if (failure) this.#failure = failure;
      return Promise.resolve(false);
    }
    this.#recovery ??= this.#reinitialise(trigger).finally(() => {
      this.#recovery = undefined;
    });
    return this.#recovery;
  }

  async #reinitialise(trigger: string): Promise<boolean> {
    const saved = this.#savedInitialize!;
    const connection = await this.#open();
    let capabilities: Record<string, { listChanged?: boolean } | undefined>;
    let initialized: Record<string, unknown>;
    try {
      const result = await this.#ownRequest(connection, 'initialize', saved.params);
      if (typeof result.protocolVersion === 'string') {
        connection.transport.setProtocolVersion(result.protocolVersion);
      }
      initialized = result;
      capabilities = (result.capabilities ?? {}) as typeof capabilities;
      // The gateway answers 202; the transport then opens the standalone stream by itself.
      await connection.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    } catch (error) {
      // DELETEd in case initialize got through and only what followed failed.
      await this.#dispose(connection, true);
      if (this.#state === 'closing') return false;
      this.#goDown(error instanceof SendError ? error.failure : (error as Failure), trigger);
      return false;
    }
    if (this.#state === 'closing') {
      await connection.terminate(this.#timings.closeTimeoutMs);
      await this.#dispose(connection);
      return false;
    }
    const previous = this.#current;
    this.#current = connection;
    this.#initialized = initialized;
    if (previous && previous !== connection) this.#retire(previous);
    const downFor = this.#downSince === undefined ? undefined : Date.now() - this.#downSince;
    this.#up();
    this.#log.info(
      `${downFor === undefined ? `new session after: ${trigger}` : `the gateway is back after ${(downFor / 1000).toFixed(1)} s`} (session ${short(connection.sessionId)})`,
    );
    if (this.#logLevel !== undefined) {
      await this.#ownRequest(connection, 'logging/setLevel', { level: this.#logLevel }).catch((f: Failure) =>
        this.#log.warning(`could not set the log level again: ${describe(f)}`),
      );
    }
    for (const uri of [...this.#subscriptions]) {
      await this.#ownRequest(connection, 'resources/subscribe', { uri }).catch((f: Failure) => {
        this.#log.warning(`could not subscribe to ${uri} again: ${describe(f)}`);
        if (f.kind === 'rpc') this.#subscriptions.delete(uri);
      });
    }
    if (this.#clientInitialised) {
      // Whatever changed while the relay was away, the client lists again.
      for (const [capability, method] of LIST_CHANGED) {
        if (capabilities[capability]?.listChanged) this.#toClient({ jsonrpc: '2.0', method });
      }
    }
    return true;
  }

  // Methods, not comparisons: the state changes across awaits, which narrowing ignores.
  #closing(): boolean {
    return this.#state === 'closing';
  }

  #isUp(): boolean {
    return this.#state === 'up';
  }

  #up(): void {
    this.#state = 'up';
    this.#failure = undefined;
    this.#downSince = undefined;
    this.#backoffMs = this.#timings.initialBackoffMs;
    this.#streamReopens = 0;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  #goDown(failure: Failure, trigger: string): void {
    this.#failure = failure;
    if (this.#state !== 'down') {
      this.#state = 'down';
      this.#downSince = Date.now();
      const what =
        failure.kind === 'unreachable'
          ? `the gateway at ${this.#options.gatewayUrl} is unreachable (${failure.reason})`
          : `the gateway refused a new session (${describe(failure)})`;
      const then = this.#clientInitialised
        ? 'requests get an error meanwhile; retrying in the background'
        : 'the client gets the error';
      this.#log.warning(`${what}; ${then} (after: ${trigger})`);
    } else {
      this.#log.debug(`still no session: ${describe(failure)}`);
    }
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    // Nothing to keep up before the client's session exists: its next request tries again.
    if (this.#retryTimer || this.#state === 'closing' || !this.#clientInitialised) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#timings.maxBackoffMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#recover('a retry').then((up) => {
        if (!up) this.#scheduleRetry();
      });
    }, delay);
    this.#retryTimer.unref();
  }

  #ownRequest(
    connection: { send(message: JSONRPCMessage): Promise<void> },
    method: string,
    params: Record<string, unknown> | undefined,
  ): Promise<Record<string, unknown>> {
    this.#ownIds += 1;
    const id = `bindery-mcp-${this.#ownIds}`;
    const key = keyOf(id);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#own.delete(key);
        reject({
          kind: 'unreachable',
          reason: `no answer to ${method} within ${this.#timings.ownRequestTimeoutMs} ms`,
        } satisfies Failure);
      }, this.#timings.ownRequestTimeoutMs);
      this.#own.set(key, {
        resolve: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        reject: (failure) => {
          clearTimeout(timer);
          reject(failure);
        },
      });
      connection
        .send({ jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) })
        .catch((error: unknown) => {
          const own = this.#own.get(key);
          this.#own.delete(key);
          own?.reject((error as SendError).failure);
        });
    });
  }

  // To the client -------------------------------------------------------------------------------

  #toClient(message: JSONRPCMessage): void {
    if (this.#state === 'closing') return;
    const id = (message as { id?: RequestId }).id;
    // A modern request carried on a legacy session: its result as the modern era has it.
    const bridged = !('method' in message) && id !== undefined ? this.#bridged.get(keyOf(id)) : undefined;
    if (bridged !== undefined) {
      this.#bridged.delete(keyOf(id!));
      if ('result' in message) message = { ...message, result: modernResult(bridged, message.result) };
    }
    this.#stdio.send(message).catch((error: unknown) => {
      this.#log.debug(`could not write to stdout: ${(error as Error).message}`);
    });
    if (this.#held && !('method' in message) && id !== undefined && keyOf(id) === this.#held.id) {
      this.#release();
    }
  }

  /** The initialize is answered: what the client sent meanwhile goes on, in order. */
  #release(): void {
    const held = this.#held?.messages ?? [];
    this.#held = undefined;
    for (const message of held) {
      // Another initialize among them holds the rest again.
      if (this.#held) (this.#held as { messages: JSONRPCMessage[] }).messages.push(message);
      else this.#dispatch(message);
    }
  }

  /** The answer to a request that may have been carried out, and is not sent again. */
  #unsure(request: JSONRPCRequest, failure: Failure): RpcError {
    const why = failure.kind === 'unreachable' ? ` (${failure.reason})` : '';
    return {
      code: UNREACHABLE_CODE,
      message: `the connection to the Bindery gateway at ${this.#options.gatewayUrl} broke before ${request.method} was answered${why}; it may have been carried out, so it was not sent again (one with params._meta["${IDEMPOTENCY_META_KEY}"] is)`,
    };
  }

  #reply(id: RequestId, error: RpcError): void {
    this.#toClient({ jsonrpc: '2.0', id, error });
  }

  #errorFor(failure: Failure | undefined): RpcError {
    const url = this.#options.gatewayUrl;
    if (!failure || failure.kind === 'unreachable') {
      const reason = failure ? ` (${failure.reason})` : '';
      return {
        code: UNREACHABLE_CODE,
        message: `the Bindery gateway at ${url} is unreachable${reason}; the relay keeps retrying, try again shortly`,
      };
    }
    if (failure.kind === 'rpc') return failure.error;
    if (failure.kind === 'aborted') {
      return {
        code: UNREACHABLE_CODE,
        message: `the request to the Bindery gateway at ${url} was abandoned`,
      };
    }
    return (
      failure.error ?? {
        code: UNREACHABLE_CODE,
        message: `the Bindery gateway at ${url} answered ${failure.status === 0 ? 'unexpectedly' : `HTTP ${failure.status}`}${failure.text ? `: ${failure.text.slice(0, 300)}` : ''}`,
      }
    );
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether a request that failed is sent once more, on a new session: true when it cannot have been
 * carried out (404: the gateway no longer holds the session; the connection was never made), or
 * when it may have been but repeating it changes nothing: any request but tools/call, and a
 * tools/call with an idempotency key (the gateway answers a repeat with the first outcome).
 * 'unsure': a tools/call that may have run (the connection broke or timed out while it was sent or
 * answered) is answered with an error saying so; false: the gateway's refusal, as it is.
 */
function mayRepeat(request: JSONRPCRequest, failure: Failure): boolean | 'unsure' {
  if (failure.kind === 'http') return failure.status === 404;
  if (failure.kind === 'rpc') return false;
  if (failure.kind === 'unreachable' && NOT_SENT.test(failure.reason)) return true;
  const meta = (request.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  return request.method !== 'tools/call' || typeof meta?.[IDEMPOTENCY_META_KEY] === 'string' || 'unsure';
}

/**
 * What a failed probe says of the gateway's era, as the SDK's own client decides: a gateway that
 * answered but does not know server/discover (a JSON-RPC error, a 4xx) is of the 2025 era; an
 * unreachable one, or one refusing the key (401, 403) or failing (5xx), tells nothing yet.
 */
function probeVerdict(failure: Failure): 'legacy' | Failure {
  if (failure.kind === 'rpc') return 'legacy';
  if (
    failure.kind === 'http' &&
    failure.status >= 400 &&
    failure.status < 500 &&
    failure.status !== 401 &&
    failure.status !== 403
  ) {
    return 'legacy';
  }
  return failure;
}

function describe(failure: Failure): string {
  switch (failure.kind) {
    case 'unreachable':
      return `unreachable: ${failure.reason}`;
    case 'http':
      return `HTTP ${failure.status}${failure.error ? `: ${failure.error.message}` : ''}`;
    case 'rpc':
      return `error ${failure.error.code}: ${failure.error.message}`;
    case 'aborted':
      return 'abandoned';
  }
}

/** The first characters of a session id, enough to tell sessions apart in the log. */
function short(sessionId: string | undefined): string {
  return sessionId === undefined ? 'none' : `${sessionId.slice(0, 8)}…`;
}
