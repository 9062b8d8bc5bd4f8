/**
 * The event loop's side of a custom tool's host calls: the worker posts each call (function name
 * and JSON arguments) on the MessagePort handed over with the task; this answers it by running the
 * caller's host function here, on the control plane's main thread (where the database is), and
 * posting the JSON result or a tool error back. The tool awaits the answer as a promise inside the
 * sandbox, so while a host function works the worker is idle and the event loop keeps serving.
 *
 * Arguments are parsed and checked here again (the sandbox's own checks are for clear messages,
 * these are the boundary); answers are bounded in size. A host function is told through its
 * AbortSignal when the call has ended (answered, timed out, terminated), so it can stop its work.
 */
import {
  ERROR_CODES,
  isLogLevel,
  type ErrorCode,
  type ToolLogLine,
  type ToolProgress,
} from '@bindery/contracts';
import type { MessagePort } from 'node:worker_threads';
import type {
  HostAnswer,
  HostFunction,
  HostNotice,
  HostRequest,
  NoticeFunction,
  SandboxLimits,
} from './protocol.ts';
import { ruleDetails } from './protocol.ts';
import { WritePace } from './write-pace.ts';

/** The limits of a call that its host calls are held to here. */
export type HostCallLimits = Pick<
  SandboxLimits,
  'maxHostRequestBytes' | 'maxHostAnswerBytes' | 'maxHostCallsInFlight' | 'maxWrites' | 'writesPerSecond'
>;

/** A request of `ctx.fetch(url, init)`, as the tool made it (the host applies its own rules). */
export interface ToolFetchRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** What `ctx.fetch` answers: the tool reads `body` through `text()` and `json()`. */
export interface ToolFetchResponse {
  status: number;
  statusText?: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  /** The final URL, after redirects. */
  url?: string;
}

/**
 * The host functions of one call, each optional: a tool sees in `ctx` only those given here.
 * Their results must be JSON-serialisable (the tool gets a JSON copy).
 * They run on the event loop; they throw an error with a `code` of the shared codes (OpError, say)
 * for a failure the tool should see as such; any other error reaches the tool as INTERNAL, without
 * its message.
 */
export interface ToolHost {
  /** `ctx.context.read(path)`: `path` is a JSON pointer inside the tool's context ("" = all of it). */
  readContext?(path: string, signal: AbortSignal): Promise<unknown>;
  /** `ctx.context.write(op, args)`: a write operation on the tool's context. */
  writeContext?(op: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  /** `ctx.fetch(url, init)`. */
  fetch?(request: ToolFetchRequest, signal: AbortSignal): Promise<ToolFetchResponse>;
  /** `ctx.secrets`: names and plain values (never logged, and redacted from what the tool answers). */
  secrets?: Readonly<Record<string, string>>;
  /** Told each `ctx.progress` report, as it comes (absent: the caller hears none). */
  progress?(report: ToolProgress): void;
  /** Told each `ctx.log` line the caller hears (absent: it hears none). */
  log?: { level: ToolLogLine['level']; send(line: ToolLogLine): void } | undefined;
}

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);
const MAX_ERROR_MESSAGE = 2_000;

/** The host functions `host` supplies, by their name in the protocol. */
export function hostFunctions(host: ToolHost): HostFunction[] {
  const functions: HostFunction[] = [];
  if (host.readContext) functions.push('context.read');
  if (host.writeContext) functions.push('context.write');
  if (host.fetch) functions.push('fetch');
  return functions;
}

/**
 * Answers the host calls arriving on `port` until `signal` aborts (the call ended), and hands the
 * notices (`ctx.progress`, `ctx.log`) to `host.progress` and `host.log` as they arrive; the promise
 * answered settles at the worker's end marker (or when the port closes), after its last notice.
 * `onUnexpected`
 * is told of host function errors that carry no code (they are bugs or outages, worth a log line).
 * `cancelled` aborts when the caller gave up: the host work in flight is stopped (a fetch is cut)
 * and every host call is answered UPSTREAM_FAILED from then on, so code awaiting one ends soon
 * instead of waiting out its deadline.
 *
 * Calls are started a round at a time, from a turn of the event loop of their own, never inside
 * the port's message event: Node delivers up to a thousand queued messages in one such event,
 * running the promise jobs of each before the next, and on the embedded database a write's whole
 * transaction is such jobs. A tool keeping several calls in flight always had the next message
 * queued, so the event loop did not get back to its sockets until the call ended. Writes are also
 * bounded: `maxWrites` per call, then LIMIT_EXCEEDED; `writesPerSecond`, past which they wait for
 * their turn (write-pace.ts) and are let through together, so they commit as one batch.
 */
export function answerHostCalls(
  port: MessagePort,
  host: ToolHost,
  limits: HostCallLimits,
  signal: AbortSignal,
  onUnexpected: (fn: HostFunction | NoticeFunction, error: unknown) => void,
  cancelled?: AbortSignal,
): Promise<void> {
  let drained!: () => void;
  const noticesEnded = new Promise<void>((resolve) => (drained = resolve));
  port.once('close', () => drained());
  // What host functions are given: stops their work when the call ends or is cancelled.
  const work = cancelled ? AbortSignal.any([signal, cancelled]) : signal;
  const answer = (message: HostAnswer) => {
    if (!signal.aborted) port.postMessage(message);
  };
  const pace = new WritePace(limits.writesPerSecond, limits.maxHostCallsInFlight);
  /** Arrived and not started yet, in order (writes waiting for their turn among them). */
  const waiting: HostRequest[] = [];
  let started = 0;
  let answered = 0;
  let writes = 0;
  let round: NodeJS.Immediate | undefined;
  let paced: NodeJS.Timeout | undefined;
  const startRound = () => {
    round ??= setImmediate(runRound);
  };

  port.on('message', (message: HostRequest | HostNotice) => {
    if ('notice' in message) {
      if (message.notice === 'end') drained();
      else deliver(host, message, onUnexpected);
      return;
    }
    const request = message;
    // The worker holds its calls to the same bound; this is the boundary's own check.
    if (started - answered + waiting.length >= limits.maxHostCallsInFlight) {
      answer(
        refuse(
          request.id,
          'LIMIT_EXCEEDED',
          `ctx.${request.fn}: ${limits.maxHostCallsInFlight} host calls are already awaiting their answers; await some first.`,
        ),
      );
      return;
    }
    waiting.push(request);
    startRound();
  });
  // A cancelled call's waiting writes are answered now rather than at their turn.
  cancelled?.addEventListener('abort', startRound, { once: true });
  signal.addEventListener(
    'abort',
    () => {
      if (round) clearImmediate(round);
      if (paced) clearTimeout(paced);
      // The caller's signal may outlive the call: it must not hold this bridge.
      cancelled?.removeEventListener('abort', startRound);
      port.close();
    },
    { once: true },
  );

  return noticesEnded;

  function runRound(): void {
    round = undefined;
    const writesWaiting = waiting.filter((request) => request.fn === 'context.write').length;
    let turns = cancelled?.aborted
      ? writesWaiting
      : pace.take(Math.min(writesWaiting, Math.max(0, limits.maxWrites - writes)));
    const held: HostRequest[] = [];
    for (const request of waiting.splice(0)) {
      if (request.fn !== 'context.write' || cancelled?.aborted) start(request);
      else if (writes >= limits.maxWrites) {
        answer(
          refuse(
            request.id,
            'LIMIT_EXCEEDED',
            `ctx.context.write: this call has made ${limits.maxWrites} writes, the most one call may make (CUSTOM_TOOL_MAX_WRITES); those stand, this one was not made.`,
          ),
        );
      } else if (turns > 0) {
        turns -= 1;
        writes += 1;
        start(request);
      } else held.push(request);
    }
    waiting.unshift(...held);
    if (held.length > 0 && paced === undefined) {
      paced = setTimeout(() => {
        paced = undefined;
        startRound();
      }, pace.msUntil(held.length));
    }
  }

  function start(request: HostRequest): void {
    started += 1;
    void respond(request).then((message) => {
      answered += 1;
      answer(message);
    });
  }

  async function respond({ id, fn, payload }: HostRequest): Promise<HostAnswer> {
    if (cancelled?.aborted) {
      return refuse(id, 'UPSTREAM_FAILED', `ctx.${fn}: the call was cancelled by its caller.`);
    }
    try {
      if (Buffer.byteLength(payload) > limits.maxHostRequestBytes) {
        return refuse(id, 'PAYLOAD_TOO_LARGE', `ctx.${fn}: the arguments are too large.`);
      }
      const result = await dispatch(fn, JSON.parse(payload) as unknown);
      const json = JSON.stringify(result ?? null);
      const size = Buffer.byteLength(json);
      if (size > limits.maxHostAnswerBytes) {
        return refuse(
          id,
          'RESULT_TOO_LARGE',
          `ctx.${fn}: the answer takes ${size} bytes of JSON, more than the ${limits.maxHostAnswerBytes} a host call may carry.`,
        );
      }
      return { id, ok: true, payload: json };
    } catch (error) {
      const { code, message, details } = (error ?? {}) as {
        code?: unknown;
        message?: unknown;
        details?: unknown;
      };
      if (typeof code === 'string' && KNOWN_CODES.has(code) && typeof message === 'string') {
        const refused = refuse(id, code as ErrorCode, message.slice(0, MAX_ERROR_MESSAGE));
        const rule = code === 'RULE_VIOLATED' ? ruleDetails(details) : undefined;
        return rule === undefined ? refused : { ...refused, details: rule };
      }
      onUnexpected(fn, error);
      return refuse(id, 'INTERNAL', `ctx.${fn} failed; try again.`);
    }
  }

  function dispatch(fn: HostFunction, args: unknown): Promise<unknown> {
    const fields = isObject(args) ? args : {};
    switch (fn) {
      case 'context.read':
        if (!host.readContext) throw unavailable(fn);
        if (typeof fields.path !== 'string') throw invalid(fn, 'path is a JSON pointer string');
        return host.readContext(fields.path, work);
      case 'context.write':
        if (!host.writeContext) throw unavailable(fn);
        if (typeof fields.op !== 'string') throw invalid(fn, 'op is the name of an operation');
        if (!isObject(fields.args)) throw invalid(fn, 'args is an object');
        return host.writeContext(fields.op, fields.args, work);
      case 'fetch': {
        if (!host.fetch) throw unavailable(fn);
        return host.fetch(fetchRequest(fields), work).then(fetchAnswer);
      }
      default:
        throw unavailable(fn);
    }
  }
}

/**
 * Hands a notice to the host, checked again here (the boundary); a malformed one is dropped, and a
 * host that throws is told to `onUnexpected`: a notice never fails the call.
 */
function deliver(
  host: ToolHost,
  notice: Exclude<HostNotice, { notice: 'end' }>,
  onUnexpected: (fn: HostFunction | NoticeFunction, error: unknown) => void,
): void {
  try {
    if (notice.notice === 'progress') {
      const { progress, total, message } = notice;
      if (!host.progress || !Number.isFinite(progress)) return;
      if (total !== undefined && !Number.isFinite(total)) return;
      if (message !== undefined && typeof message !== 'string') return;
      host.progress({
        progress,
        ...(total !== undefined && { total }),
        ...(message !== undefined && { message }),
      });
      return;
    }
    if (!host.log || !isLogLevel(notice.level) || typeof notice.data !== 'string') return;
    host.log.send({ level: notice.level, data: JSON.parse(notice.data) as unknown });
  } catch (error) {
    onUnexpected(notice.notice === 'progress' ? 'progress' : 'log', error);
  }
}

function fetchRequest(fields: Record<string, unknown>): ToolFetchRequest {
  const { url, method, headers, body } = fields;
  if (typeof url !== 'string') throw invalid('fetch', 'url is a string');
  if (typeof method !== 'string') throw invalid('fetch', 'init.method is a string');
  if (!isObject(headers) || Object.values(headers).some((value) => typeof value !== 'string')) {
    throw invalid('fetch', 'init.headers is an object of string values');
  }
  if (body !== undefined && typeof body !== 'string') throw invalid('fetch', 'init.body is a string');
  return {
    url,
    method,
    headers: headers as Record<string, string>,
    ...(body !== undefined && { body }),
  };
}

// Only the fields the sandbox reads, whatever else the host's answer carries.
function fetchAnswer(response: ToolFetchResponse): ToolFetchResponse {
  return {
    status: response.status,
    statusText: response.statusText ?? '',
    headers: Object.fromEntries(
      Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), String(value)]),
    ),
    body: response.body,
    ...(response.url !== undefined && { url: response.url }),
  };
}

function refuse(id: number, code: ErrorCode, message: string): Extract<HostAnswer, { ok: false }> {
  return { id, ok: false, code, message };
}

function unavailable(fn: string) {
  return { code: 'FORBIDDEN', message: `ctx.${fn} is not available to this tool.` };
}

function invalid(fn: string, why: string) {
  return { code: 'VALIDATION_FAILED', message: `ctx.${fn}: ${why}.` };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
