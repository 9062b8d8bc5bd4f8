/**
 * The gateway's only way to data: HTTP to the control plane's internal API over a keep-alive
 * undici pool, behind a circuit breaker (`circuit-breaker.ts`). Config reads retry once
 * on a network fault (safe: they change nothing); tool executions never retry, since a write may
 * already have happened. Every failure says how far the request got (`ControlPlaneError.delivery`).
 */
import {
  ERROR_CODES,
  CONTROL_PLANE_INSTANCE_HEADER,
  EXECUTE_BATCH_ID_HEADER,
  EXECUTE_BATCH_MEDIA_TYPE,
  PERSONAL_KEY_HEADER,
  OAUTH_CLAIM_HEADER,
  OAUTH_GRANT_HEADER,
  OAUTH_ISSUER_HEADER,
  OAUTH_SUBJECT_HEADER,
  type CallerIdentity,
  type ConfigV2,
  type ErrorBody,
  type ExecuteBatchAnswer,
  type ExecuteRequest,
  type KeyFlavor,
  type LegacyConfig,
  type LegacyExecuteRequest,
  isLogLevel,
  type ToolLogLine,
  type ToolProgress,
  type ToolResult,
  type UpstreamRequestAnswer,
  type TaskAnswer,
  type TaskRequestBody,
  type UpstreamRequestBody,
  type UpstreamWatchAnswer,
  type UpstreamWatchBody,
  toolError,
} from '@bindery/contracts';
import type { IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { activeCarrier } from '@bindery/service-kit';
import type { FastifyBaseLogger } from 'fastify';
import { Pool, errors as undiciErrors } from 'undici';
import type { GatewayMetrics } from '../metrics.ts';
import { ExecuteBatcher, REFUSED_WHOLE } from './execute-batcher.ts';
import { CircuitOpenError, ControlPlaneError, type Delivery } from './errors.ts';
import { CircuitBreaker, type BreakerState } from './circuit-breaker.ts';

/** What a tool call's caller hears while it runs: its progress reports and its log lines. */
export interface CallNotices {
  progress?: ((report: ToolProgress) => void) | undefined;
  log?: ((line: ToolLogLine) => void) | undefined;
}

export type KeyAnswer =
  | {
      status: 'aei';
      config: ConfigV2;
      etag: string | undefined;
      bytes: number;
      /** Set for a caller lookup: who asked, and how the caller resolved. */
      caller?: CallerIdentity;
      /** Set for a playground key: when it stops working (ms since the epoch). */
      playground?: { expiresAt: number };
    }
  | { status: 'legacy'; config: LegacyConfig; bytes: number }
  | { status: 'not-modified' }
  | { status: 'unknown' };

/** What the gateway knows of the control plane: never reached, reachable, or failing (breaker). */
export type Readiness = 'waiting' | 'ready' | 'degraded';

export interface ControlPlaneClientOptions {
  url: string;
  internalToken: string;
  configTimeoutMs: number;
  toolCallTimeoutMs: number;
  /** Context tool calls sent together in one exchange at most (0 or 1: each alone). */
  batchMax?: number;
  /** After this long without an answer from the control plane, `watch` sends a health check. */
  idleProbeMs: number;
  breaker: { failureThreshold: number; cooldownMs: number; maxCooldownMs: number };
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
}

/** Errors that mean the connection failed before anything was written. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

function isNetworkFault(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code !== undefined && RETRYABLE.has(code);
}

/** The health check's time limit at most: a probe that hangs keeps the breaker open for nothing. */
const PROBE_TIMEOUT_MS = 2_000;
/** How often `watch` asks until the control plane has answered once. */
const WAITING_POLL_MS = 500;

type Kind = 'config' | 'execute' | 'health';

/**
 * The control plane refusing a call for what the caller sent (400: arguments it cannot take, such
 * as text with a NUL character; 413: arguments over its body limit) is the caller's error, not an
 * upstream failure: it becomes a tool error with the control plane's own code and message.
 * Other statuses (401: a misconfigured token) remain upstream failures.
 */
function refusedCall(status: number, body: unknown): ToolResult | undefined {
  if (status !== 400 && status !== 413) return undefined;
  const error = (body as Partial<ErrorBody> | undefined)?.error;
  if (!error || !ERROR_CODES.includes(error.code) || typeof error.message !== 'string') return undefined;
  return toolError(error);
}

/**
 * A request the control plane refused (`what`: the call, the request, the watch), with its own
 * message when its body has one: a 4xx is `refused` (nothing ran), another status an error answer.
 */
function refusedBy(status: number, body: unknown, what: string): ControlPlaneError {
  const message = (body as { error?: { message?: string } } | undefined)?.error?.message;
  return new ControlPlaneError(
    `the control plane refused the ${what} (HTTP ${status}${message ? `: ${message}` : ''})`,
    status >= 400 ? 'refused' : 'error-answer',
    false,
    status,
  );
}

/** A tool call's answer from its status and body (the single route's, or a batch line's). */
function executeAnswer(status: number, body: unknown): ToolResult {
  const refused = refusedCall(status, body);
  if (refused) return refused;
  if (status >= 500) {
    throw new ControlPlaneError(
      `control plane answered ${status} to the call`,
      'error-answer',
      false,
      status,
    );
  }
  if (status !== 200) {
    // A 4xx is about the request itself (token, route, media type): the control plane refused
    // it before running anything. (A 1xx-3xx other than 200 is no answer the route gives.)
    throw refusedBy(status, body, 'call');
  }
  return body as ToolResult;
}

export class ControlPlaneClient {
  readonly #pool: Pool;
  readonly #options: ControlPlaneClientOptions;
  readonly #auth: string;
  readonly #breaker: CircuitBreaker;
  /** True once the control plane answered anything below 500 (readiness is "waiting" until then). */
  #reached = false;
  /** When it last answered anything below 500 (`performance.now()`). */
  #lastContact = 0;
  /** The next check of `watch`; undefined once closed. */
  #watchTimer: NodeJS.Timeout | undefined;
  #closed = false;
  /** A health check after a slow tool call is under way. */
  #checkingHealth = false;
  /** The latency histogram's children, bound once: a labelled observe looks its labels up each time. */
  readonly #latency: Record<Kind, { observe(v: number): void }>;
  /** Sends context tool calls that arrive together in shared exchanges; undefined when off. */
  readonly #batcher: ExecuteBatcher | undefined;

  constructor(options: ControlPlaneClientOptions) {
    this.#options = options;
    const latency = options.metrics.upstreamLatency;
    this.#latency = {
      config: latency.labels('config'),
      execute: latency.labels('execute'),
      health: latency.labels('health'),
    };
    this.#auth = `Bearer ${options.internalToken}`;
    if ((options.batchMax ?? 0) >= 2) {
      this.#batcher = new ExecuteBatcher({
        maxCalls: options.batchMax!,
        timeoutMs: options.toolCallTimeoutMs,
        alone: (adiId, request, signal) => this.#executeAlone(adiId, request, signal),
        exchange: (text, onAnswer, signal, batchId) => this.#exchangeBatch(text, onAnswer, signal, batchId),
        cancel: (batchId, lines) => this.#cancelInBatch(batchId, lines),
        answer: executeAnswer,
        record: (ok) => this.#breaker.record(ok),
        timedOut: () => this.#checkAfterSlowCall(),
        observe: (seconds) => this.#latency.execute.observe(seconds),
        batchSize: (calls) => options.metrics.executeBatches.observe(calls),
        log: options.log,
      });
    }
    this.#pool = new Pool(options.url, { connections: 128, keepAliveTimeout: 30_000, pipelining: 1 });
    const gauge = options.metrics.breakerState;
    const show = (state: BreakerState) => {
      for (const s of ['closed', 'open', 'half_open'] as const) gauge.set({ state: s }, s === state ? 1 : 0);
    };
    show('closed');
    let previous: BreakerState = 'closed';
    this.#breaker = new CircuitBreaker({
      ...options.breaker,
      probe: () => this.#probe(),
      onChange: (state) => {
        show(state);
        if (state === 'open' && previous === 'closed') {
          options.log.warn(
            'control plane failing: circuit breaker open; serving cached configs and failing calls at once until a probe succeeds',
          );
        } else if (state === 'closed') {
          options.log.info('control plane answering again: circuit breaker closed');
        }
        previous = state;
      },
    });
  }

  get #probeTimeoutMs(): number {
    return Math.min(this.#options.configTimeoutMs, PROBE_TIMEOUT_MS);
  }

  /** `waiting` until the control plane first answered; then `ready`, or `degraded` while the breaker is not closed. */
  readiness(): Readiness {
    if (!this.#reached) return 'waiting';
    return this.#breaker.allows() ? 'ready' : 'degraded';
  }

  /**
   * One HTTP exchange, the body collected as text. A raw `dispatch` with a small handler: no
   * Readable stream per response, which is measurably cheaper on the tool-call path.
   */
  #send(
    method: 'GET' | 'POST',
    path: string,
    timeoutMs: number,
    headers: Record<string, string>,
    body: string | undefined,
    signal?: AbortSignal,
    lines?: LineReader,
  ): Promise<{ status: number; headers: IncomingHttpHeaders; text: string; bytes: number }> {
    return new Promise((resolve, reject) => {
      let stopListening = () => {};
      let status = 0;
      let responseHeaders: IncomingHttpHeaders = {};
      let bytes = 0;
      // Set when undici starts writing the request on a connected socket: an error before that
      // means nothing reached the control plane.
      let started = false;
      const chunks: Buffer[] = [];
      this.#pool.dispatch(
        { method, path, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs },
        {
          // Declaring onRequestStart is also what marks this as a handler of undici's current API.
          onRequestStart(controller) {
            started = true;
            if (!signal) return;
            // The caller gave up (its MCP client cancelled): the request is closed, and the
            // control plane passes that on to what runs the call.
            const abort = () => controller.abort(signal.reason ?? new Error('cancelled'));
            if (signal.aborted) return abort();
            signal.addEventListener('abort', abort, { once: true });
            stopListening = () => signal.removeEventListener('abort', abort);
          },
          onResponseStart(_controller, statusCode, received) {
            status = statusCode;
            responseHeaders = received;
          },
          onResponseData(_controller, chunk) {
            bytes += chunk.length;
            // A streamed answer is read line by line as it comes; the rest is buffered whole.
            if (lines && isNdjson(responseHeaders)) lines.push(chunk);
            else chunks.push(chunk);
          },
          onResponseEnd() {
            const text =
              chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
            stopListening();
            resolve({ status, headers: responseHeaders, text, bytes });
          },
          onResponseError(_controller, error) {
            stopListening();
            reject(Object.assign(error, { started }));
          },
        },
      );
    });
  }

  async #request(
    kind: Kind,
    method: 'GET' | 'POST',
    path: string,
    timeoutMs: number,
    options: {
      body?: unknown;
      headers?: Record<string, string>;
      retry: boolean;
      probe?: boolean;
      /** Aborts the request (the MCP client cancelled the call); says nothing about the control plane. */
      signal?: AbortSignal | undefined;
      /** An NDJSON answer: each line but the last is handed over as it arrives; the last is the body. */
      lines?: LineReader;
      /** With `lines`: every line is an answer the reader takes, and the body is whatever is left. */
      allLines?: boolean;
      /** A body already serialised (its Content-Type in `headers`), instead of `body` as JSON. */
      text?: string;
      /** Counts neither in the latency histogram nor for the breaker (a call's cancel). */
      unmetered?: boolean;
    },
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: unknown; bytes: number }> {
    if (!options.probe && !this.#breaker.allows()) {
      this.#options.metrics.breakerRejections.inc();
      throw new CircuitOpenError();
    }
    const started = performance.now();
    const headers: Record<string, string> = { authorization: this.#auth, ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const body = options.text ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    for (let attempt = 0; ; attempt++) {
      if (kind === 'config') this.#options.metrics.configFetches.inc();
      try {
        const response = await this.#send(
          method,
          path,
          timeoutMs,
          headers,
          body,
          options.signal,
          options.lines,
        );
        // A batch's calls are observed one by one, as their answers arrive (execute-batcher.ts).
        if (!options.allLines && !options.unmetered) {
          this.#latency[kind].observe((performance.now() - started) / 1000);
        }
        this.#batcher?.met(instanceOf(response.headers));
        if (response.status >= 500) {
          if (!options.probe && !options.unmetered) this.#breaker.record(false);
          throw new ControlPlaneError(
            `control plane answered ${response.status} to ${method} ${kind}`,
            'error-answer',
            false,
            response.status,
          );
        }
        // A batch's calls count one by one, as their answers arrive (execute-batcher.ts).
        if (!options.probe && !options.allLines && !options.unmetered) this.#breaker.record(true);
        this.#reached = true;
        this.#lastContact = performance.now();
        const streamed = options.lines !== undefined && isNdjson(response.headers);
        let parsed: unknown;
        try {
          const text = streamed ? options.lines!.rest() : response.text;
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // A call refused with a body that is not JSON, with a status that says nothing ran (400,
          // 404, 413, 415), was refused by something in between (a proxy's HTML 413, say): its
          // status says what happened (a batch refused whole is sent again call by call), so it
          // is answered without a body. Anything else keeps failing as an answer that makes no
          // sense; so does a config lookup (a 400 or 404 there is a verdict on the key only in
          // the control plane's own words).
          if (kind !== 'execute' || !REFUSED_WHOLE.has(response.status)) {
            throw new ControlPlaneError(
              `control plane answered ${kind} with a body that is not JSON`,
              'error-answer',
            );
          }
          parsed = undefined;
        }
        if (streamed && !options.allLines) parsed = resultLine(parsed);
        return { status: response.status, headers: response.headers, body: parsed, bytes: response.bytes };
      } catch (error) {
        if (error instanceof ControlPlaneError) throw error;
        if (options.signal?.aborted) {
          throw new ControlPlaneError(`the client cancelled the ${kind} request`, 'no-answer', false);
        }
        if (attempt === 0 && options.retry && isNetworkFault(error)) continue;
        const timedOut =
          error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError;
        if (kind === 'execute' && timedOut) {
          // A slow tool says little about the control plane: one tenant's slow calls must not
          // open the breaker for everyone. A health check decides whether it counts.
          this.#checkAfterSlowCall();
        } else if (!options.probe) {
          this.#breaker.record(false);
        }
        const { code, started: wrote } = error as { code?: string; started?: boolean };
        const delivery: Delivery =
          !wrote || (code !== undefined && NEVER_SENT.has(code)) ? 'not-sent' : 'no-answer';
        throw new ControlPlaneError(
          timedOut
            ? `control plane did not answer ${kind} within ${timeoutMs} ms`
            : `control plane unreachable (${code ?? (error as Error).message})`,
          delivery,
          timedOut,
        );
      }
    }
  }

  /**
   * What `apiKey` exposes on a URL of this flavour, in one round trip. With `etag` (an AEI's
   * config version), an unchanged config answers not-modified. A 404 that is not the route's own
   * "unknown key" answer means a control plane without the route: an upstream failure, never a
   * verdict on the key.
   */
  async keyConfig(apiKey: string, flavor: KeyFlavor, etag: string | undefined): Promise<KeyAnswer> {
    const res = await this.#request(
      'config',
      'GET',
      `/internal/keys/${encodeURIComponent(apiKey)}/config?flavor=${flavor}`,
      this.#options.configTimeoutMs,
      { retry: true, ...(etag !== undefined && { headers: { 'if-none-match': etag } }) },
    );
    return configAnswer(res, 'key lookup', '/internal/keys');
  }

  /**
   * The profile a personal key's caller maps to (`caller` undefined: the default profile), in one
   * round trip, answered like `keyConfig`; the key goes in a header, never in the URL. The ETag
   * names the profile and its config version, so a remapped caller never matches.
   */
  async callerConfig(
    personalKey: string,
    caller: string | undefined,
    etag: string | undefined,
  ): Promise<KeyAnswer> {
    const query = caller === undefined ? '' : `?caller=${encodeURIComponent(caller)}`;
    const headers: Record<string, string> = { [PERSONAL_KEY_HEADER]: personalKey };
    if (etag !== undefined) headers['if-none-match'] = etag;
    const res = await this.#request(
      'config',
      'GET',
      `/internal/callers/config${query}`,
      this.#options.configTimeoutMs,
      { retry: true, headers },
    );
    return configAnswer(res, 'caller lookup', '/internal/callers');
  }

  /**
   * What a verified OAuth access token opens (its grant, person and keyless URL), in one round
   * trip, answered like `callerConfig`: unknown once the grant is revoked or expired.
   */
  async grantConfig(
    token: {
      grantId: string;
      subject: string;
      resourcePath: string;
      external?: { issuer: string; claim: 'sub' | 'email' } | undefined;
    },
    etag: string | undefined,
  ): Promise<KeyAnswer> {
    // A built-in token names its grant; an external one its issuer and the claim naming the person.
    const headers: Record<string, string> = token.external
      ? {
          [OAUTH_ISSUER_HEADER]: token.external.issuer,
          [OAUTH_CLAIM_HEADER]: token.external.claim,
          [OAUTH_SUBJECT_HEADER]: token.subject,
        }
      : { [OAUTH_GRANT_HEADER]: token.grantId, [OAUTH_SUBJECT_HEADER]: token.subject };
    if (etag !== undefined) headers['if-none-match'] = etag;
    const res = await this.#request(
      'config',
      'GET',
      `/internal/oauth/config?resource=${encodeURIComponent(token.resourcePath)}`,
      this.#options.configTimeoutMs,
      { retry: true, headers },
    );
    return configAnswer(res, 'grant lookup', '/internal/oauth');
  }

  /**
   * Runs a bound tool; the answer is the executor's MCP result (isError included). With `heard`
   * (and `request.progress` or `request.log_level`), the control plane streams the call's progress
   * reports and log lines before it, and each is handed over as it arrives.
   */
  async execute(
    adiId: string,
    request: ExecuteRequest,
    signal?: AbortSignal,
    heard?: CallNotices,
    cuttable = false,
  ): Promise<ToolResult> {
    // The call carries its trace, batched or alone (a batch's exchange serves many traces).
    const carried = activeCarrier();
    if (carried) request = { ...request, trace: carried };
    if (!heard && this.#batcher) return this.#batcher.execute(adiId, request, signal, cuttable);
    return this.#executeAlone(adiId, request, signal, heard);
  }

  #executeAlone(
    adiId: string,
    request: ExecuteRequest,
    signal?: AbortSignal,
    heard?: CallNotices,
  ): Promise<ToolResult> {
    return this.#execute(`/internal/adi/${encodeURIComponent(adiId)}/execute`, request, signal, heard);
  }

  /**
   * One exchange of `POST /internal/execute-batch`: `onAnswer` gets each call's answer as it
   * arrives. Resolves with the status and body once the answer ended (200: every line was handed
   * over); rejects as any request does (breaker open, connection lost, a server error).
   */
  async #exchangeBatch(
    text: string,
    onAnswer: (answer: ExecuteBatchAnswer) => void,
    signal: AbortSignal,
    batchId: string,
  ): Promise<{ status: number; body: unknown; instance: string | undefined }> {
    const res = await this.#request(
      'execute',
      'POST',
      '/internal/execute-batch',
      this.#options.toolCallTimeoutMs,
      {
        text,
        headers: { 'content-type': EXECUTE_BATCH_MEDIA_TYPE, [EXECUTE_BATCH_ID_HEADER]: batchId },
        retry: false,
        signal,
        lines: answerLines(onAnswer),
        allLines: true,
      },
    );
    return { status: res.status, body: res.body, instance: instanceOf(res.headers) };
  }

  /** `POST /internal/execute-batch/cancel` of `lines` of batch `batchId` (sent once, not retried). */
  async #cancelInBatch(
    batchId: string,
    lines: number[],
  ): Promise<{ status: number; instance: string | undefined }> {
    const res = await this.#request(
      'execute',
      'POST',
      '/internal/execute-batch/cancel',
      this.#options.configTimeoutMs,
      { body: { batch: batchId, lines }, retry: false, unmetered: true },
    );
    return { status: res.status, instance: instanceOf(res.headers) };
  }

  /**
   * One resources/read or prompts/get of an upstream server attached to an AEI: the upstream's
   * result, or the control plane's error for it (UpstreamRequestAnswer). Throws ControlPlaneError
   * when the control plane did not answer, or refused the request itself.
   */
  async upstreamRequest(
    aeiId: string,
    body: UpstreamRequestBody,
    signal?: AbortSignal,
  ): Promise<UpstreamRequestAnswer> {
    const res = await this.#request(
      'execute',
      'POST',
      `/internal/aei/${encodeURIComponent(aeiId)}/upstream-request`,
      this.#options.toolCallTimeoutMs,
      { body, retry: false, signal },
    );
    if (res.status !== 200) throw refusedBy(res.status, res.body, 'request');
    return res.body as UpstreamRequestAnswer;
  }

  /**
   * tasks/get, tasks/update or tasks/cancel of a task an upstream server made for a call of the AEI:
   * the task, the upstream's acknowledgement, or the control plane's error for it (TaskAnswer).
   * Throws ControlPlaneError when the control plane did not answer or refused the request itself.
   */
  async task(aeiId: string, body: TaskRequestBody, signal?: AbortSignal): Promise<TaskAnswer> {
    const res = await this.#request(
      'execute',
      'POST',
      `/internal/aei/${encodeURIComponent(aeiId)}/tasks`,
      this.#options.toolCallTimeoutMs,
      // A poll may be sent again; an update or a cancel is the agent's to repeat.
      { body, retry: body.method === 'get', signal },
    );
    if (res.status !== 200) throw refusedBy(res.status, res.body, 'request');
    return res.body as TaskAnswer;
  }

  /**
   * Watches resources of an upstream server attached to an AEI for this gateway's subscribers (and
   * renews the watch): which are watched, and why the others are not. Throws ControlPlaneError
   * when the control plane did not answer or refused the request.
   */
  async upstreamWatch(aeiId: string, body: UpstreamWatchBody): Promise<UpstreamWatchAnswer> {
    const res = await this.#request(
      'execute',
      'POST',
      `/internal/aei/${encodeURIComponent(aeiId)}/upstream-watch`,
      this.#options.toolCallTimeoutMs,
      { body, retry: true },
    );
    if (res.status !== 200) throw refusedBy(res.status, res.body, 'watch');
    return res.body as UpstreamWatchAnswer;
  }

  /** Runs a legacy instance's tool. */
  async executeLegacy(instanceId: string, request: LegacyExecuteRequest): Promise<ToolResult> {
    return this.#execute(`/internal/mcp-instance/${encodeURIComponent(instanceId)}/execute`, request);
  }

  async #execute(
    path: string,
    body: unknown,
    signal?: AbortSignal,
    heard?: CallNotices,
  ): Promise<ToolResult> {
    const res = await this.#request('execute', 'POST', path, this.#options.toolCallTimeoutMs, {
      body,
      retry: false,
      signal,
      ...(heard && { lines: noticeLines(heard) }),
    });
    return executeAnswer(res.status, res.body);
  }

  /**
   * True when the control plane answers its readiness check (it reaches its database). Goes
   * through the breaker like any request: false at once while it is open.
   */
  async healthy(): Promise<boolean> {
    try {
      const res = await this.#request('health', 'GET', '/readyz', this.#probeTimeoutMs, { retry: false });
      return res.status === 200;
    } catch {
      return false;
    }
  }

  /**
   * Keeps readiness true to the control plane's state without traffic: health checks every 500 ms
   * until it first answers, then one whenever it has not answered anything for `idleProbeMs`. A
   * failed check is followed by the next one after the breaker's cool-down rather than a whole
   * interval, so a control plane that died while the gateway was quiet opens the breaker (and
   * turns /readyz `degraded`) within `idleProbeMs` plus a few cool-downs, not thresholds times
   * intervals. While the breaker is open its own probes do this. Timers are unref'd; `close` stops.
   */
  watch(): void {
    this.#watchAfter(0);
  }

  #watchAfter(delayMs: number): void {
    if (this.#closed) return;
    this.#watchTimer = setTimeout(() => void this.#watchOnce(), delayMs);
    this.#watchTimer.unref();
  }

  async #watchOnce(): Promise<void> {
    if (!this.#reached) {
      await this.healthy();
      this.#watchAfter(WAITING_POLL_MS);
      return;
    }
    const quiet = performance.now() - this.#lastContact;
    if (!this.#breaker.allows() || quiet < this.#options.idleProbeMs) {
      this.#watchAfter(Math.max(WAITING_POLL_MS, this.#options.idleProbeMs - quiet));
      return;
    }
    const healthy = await this.healthy();
    this.#watchAfter(healthy ? this.#options.idleProbeMs : this.#options.breaker.cooldownMs);
  }

  /**
   * After a tool call timed out: one health check (at most one at a time), which counts as a
   * failure for the breaker when it fails too, and as nothing when it succeeds.
   */
  #checkAfterSlowCall(): void {
    if (this.#checkingHealth || !this.#breaker.allows()) return;
    this.#checkingHealth = true;
    void this.#probe().then((healthy) => {
      this.#checkingHealth = false;
      if (!healthy) this.#breaker.record(false);
    });
  }

  /** The breaker's probe: the same check, sent whatever the breaker's state. */
  async #probe(): Promise<boolean> {
    try {
      const res = await this.#request('health', 'GET', '/readyz', this.#probeTimeoutMs, {
        retry: false,
        probe: true,
      });
      return res.status === 200;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#watchTimer);
    this.#breaker.stop();
    return this.#pool.close();
  }
}

/** Reads an NDJSON answer as it arrives: complete lines go to `line`, the unfinished tail stays. */
export interface LineReader {
  push(chunk: Buffer): void;
  /** What is left once the answer ended: its last line. */
  rest(): string;
}

/** A config lookup's answer (`keyConfig`, `callerConfig`) as the cache takes it. */
function configAnswer(
  res: { status: number; headers: IncomingHttpHeaders; body: unknown; bytes: number },
  what: string,
  route: string,
): KeyAnswer {
  if (res.status === 304) return { status: 'not-modified' };
  // 400: the control plane refused to look the key up at all (a NUL in it, say): no such key.
  if (res.status === 400) return { status: 'unknown' };
  if (res.status === 404) {
    if ((res.body as { error?: { details?: { kind?: string } } })?.error?.details?.kind === 'unknown') {
      return { status: 'unknown' };
    }
    throw new ControlPlaneError(
      `the control plane has no ${route} route: upgrade control planes before their gateways`,
      'refused',
      false,
      404,
    );
  }
  if (res.status !== 200) {
    throw new ControlPlaneError(
      `control plane answered ${res.status} to a ${what}`,
      res.status < 400 ? 'error-answer' : 'refused',
      false,
      res.status,
    );
  }
  const found = res.body as
    | { kind: 'aei'; config: ConfigV2; caller?: CallerIdentity; playground?: { expires_at: string } }
    | { kind: 'legacy'; config: LegacyConfig };
  if (found.kind === 'legacy') return { status: 'legacy', config: found.config, bytes: res.bytes };
  const header = res.headers.etag;
  // An expiry that does not parse is already over: such a key is never served.
  const expiresAt = found.playground && (Date.parse(found.playground.expires_at) || 0);
  return {
    status: 'aei',
    config: found.config,
    ...(found.caller && { caller: found.caller }),
    ...(expiresAt !== undefined && { playground: { expiresAt } }),
    etag: typeof header === 'string' ? header : undefined,
    bytes: res.bytes,
  };
}

function isNdjson(headers: IncomingHttpHeaders): boolean {
  return String(headers['content-type'] ?? '').startsWith('application/x-ndjson');
}

/**
 * Splits an NDJSON answer into lines as its chunks arrive: each complete, non-empty line goes to
 * `onLine`; `end()` answers what is left after the last newline.
 */
function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; end(): string } {
  let pending = '';
  // A character may be split between two chunks: the decoder keeps its first bytes for the next.
  const decoder = new StringDecoder('utf8');
  return {
    push(chunk) {
      const text = decoder.write(chunk);
      // Only the new text can hold a line's end: a large last line is not scanned again per chunk.
      let from = pending.length;
      pending += text;
      let at: number;
      while ((at = pending.indexOf('\n', from)) >= 0) {
        const line = pending.slice(0, at);
        pending = pending.slice(at + 1);
        from = 0;
        if (line !== '') onLine(line);
      }
    },
    end() {
      const rest = pending + decoder.end();
      pending = '';
      return rest;
    },
  };
}

/** The control-plane process an answer names (CONTROL_PLANE_INSTANCE_HEADER). */
function instanceOf(headers: IncomingHttpHeaders): string | undefined {
  const value = headers[CONTROL_PLANE_INSTANCE_HEADER];
  return typeof value === 'string' ? value : undefined;
}

/** The reader of a batch's answer: each complete line, parsed, goes to `onAnswer` as it arrives. */
function answerLines(onAnswer: (answer: ExecuteBatchAnswer) => void): LineReader {
  const take = (line: string) => {
    let parsed: ExecuteBatchAnswer;
    try {
      parsed = JSON.parse(line) as ExecuteBatchAnswer;
    } catch {
      // A line that is not JSON answers nothing: its call ends unanswered with the batch.
      return;
    }
    onAnswer(parsed);
  };
  const lines = lineSplitter(take);
  return {
    push: (chunk) => lines.push(chunk),
    rest() {
      const rest = lines.end();
      if (rest.trim() !== '') take(rest);
      return '';
    },
  };
}

/**
 * The reader of an execute answer with notices: each `{"progress": ...}` line is handed to
 * `heard.progress` and each `{"log": ...}` line to `heard.log` at once; the last line,
 * `{"result": ...}` (or `{"error": ...}`), is the answer.
 */
function noticeLines(heard: CallNotices): LineReader {
  let last = '';
  const lines = lineSplitter((line) => {
    last = line;
    let parsed: { progress?: ToolProgress; log?: ToolLogLine };
    try {
      parsed = JSON.parse(line) as { progress?: ToolProgress; log?: ToolLogLine };
    } catch {
      return;
    }
    if (parsed.progress) heard.progress?.(parsed.progress);
    else if (parsed.log && isLogLevel(parsed.log.level)) heard.log?.(parsed.log);
  });
  return {
    push: (chunk) => lines.push(chunk),
    rest: () => {
      const rest = lines.end();
      return rest.trim() === '' ? last : rest;
    },
  };
}

/** The answer carried by a stream's last line: its result, or an error for a fault of the control plane. */
function resultLine(line: unknown): unknown {
  const { result, error } = (line ?? {}) as { result?: unknown; error?: { message?: string } };
  if (result !== undefined) return result;
  throw new ControlPlaneError(
    `control plane failed the call${error?.message ? `: ${error.message}` : ''}`,
    'error-answer',
  );
}
