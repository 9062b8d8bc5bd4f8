/**
 * Tool calls that arrive at about the same time go to the control plane in one exchange
 * (`POST /internal/execute-batch`) instead of one each. At many calls at once, the per-exchange
 * work (writing and reading a request and an answer on both sides, the framework's pass on the
 * control plane) was a large share of a call's CPU (docs/decisions/046-batched-executions.md).
 *
 * A call is queued; the queue is sent at the end of the event loop's turn in which its first call
 * came (a `setImmediate`), so calls read from the network in one turn share an exchange, and a
 * lone call waits no longer than that turn. A queue of one goes alone, by the single route, as do
 * calls that must: progress reports or log lines, an ADI id a batch line cannot carry, or a large
 * request.
 *
 * A call whose kind can be cut (an HTTP request, a custom tool, an upstream server's tool) is cut
 * on its own when its client cancels it: the batch is named (`x-bindery-batch`) and the gateway
 * sends `POST /internal/execute-batch/cancel` for that line, to the control plane that runs the
 * batch (one that arrives before its batch is kept there a while), and does the same when such a
 * call runs past its time limit. Answers name the control-plane process; once this gateway has met
 * more than one behind its control-plane address (a balancer in front of several), a cancel could
 * reach the wrong one, so such calls go alone again (their connection closing cuts them where they
 * run) for a while; as they do for a minute after a batch answer names no process (a control plane
 * from before these cuts).
 *
 * What each call sees is what it would see alone:
 * - its own answer, status and body as the single route gives them, read as they arrive;
 * - its own time limit (`TOOL_CALL_TIMEOUT_MS`, from when its batch is sent) and its own
 *   cancellation (a call cancelled while queued is not sent);
 * - a batch the control plane refuses as a whole (a control plane without the route, a body
 *   over its limit) runs nothing, so its calls are sent again alone, and no batch is sent for a
 *   minute;
 * - a batch whose exchange fails (breaker open, connection lost, a server error) fails its
 *   unanswered calls with that failure, which says how far the exchange got.
 */
import {
  EXECUTE_BATCH_ADI_ID_RE,
  type ExecuteBatchAnswer,
  type ExecuteRequest,
  type ToolResult,
} from '@bindery/contracts';
import { randomBytes } from 'node:crypto';
import { detached } from '@bindery/service-kit';
import type { FastifyBaseLogger } from 'fastify';
import { ControlPlaneError } from './errors.ts';

/** A call larger than this (its request's JSON) goes alone: a batch carries small calls. */
const MAX_LINE_BYTES = 64 * 1024;
/** A batch's body at most; the control plane's body limit is larger by default (10 MiB). */
const MAX_BATCH_BYTES = 512 * 1024;
/** How long a control plane that refused a batch whole (no route, a lower body limit) is sent none. */
const UNSUPPORTED_RETRY_MS = 60_000;
/**
 * How long a control-plane process this gateway met counts: while more than one did, calls that
 * can be cut go alone.
 */
const INSTANCE_MEMORY_MS = 10 * 60_000;
/**
 * A batch's name: this process's random prefix and a count, unique among the gateways a control
 * plane serves without a draw of random bytes per batch (about 9 µs of CPU each).
 */
const BATCH_ID_PREFIX = randomBytes(12).toString('base64url');
/** Batches this process sent so far (the count in their names; one count for all its batchers). */
let batchesSent = 0;
/**
 * Statuses of a batch refused whole before anything ran, by the control plane (no such route in
 * an older version, a body over its limit, a batch it cannot read) or by a proxy in between. Its
 * calls go again alone. Any other status is what each call would have got alone.
 */
export const REFUSED_WHOLE: ReadonlySet<number> = new Set([400, 404, 413, 415]);

export interface ExecuteBatcherOptions {
  maxCalls: number;
  timeoutMs: number;
  /** Runs one call by the single route. */
  alone(adiId: string, request: ExecuteRequest, signal?: AbortSignal): Promise<ToolResult>;
  /**
   * One batch exchange named `batchId`: each answer to `onAnswer` as it arrives; then the status,
   * the body and the control-plane process that answered.
   */
  exchange(
    text: string,
    onAnswer: (answer: ExecuteBatchAnswer) => void,
    signal: AbortSignal,
    batchId: string,
  ): Promise<{ status: number; body: unknown; instance: string | undefined }>;
  /** Cuts lines of a running batch: the status and the process that answered. */
  cancel(batchId: string, lines: number[]): Promise<{ status: number; instance: string | undefined }>;
  /** A call's answer from its line's status and body (throws ControlPlaneError as the single route's would). */
  answer(status: number, body: unknown): ToolResult;
  /** A call's answer, for the circuit breaker: false for a server error, as alone. */
  record(ok: boolean): void;
  /** A call ran past its time limit (the client checks the control plane's health). */
  timedOut(): void;
  /** A call's latency, in seconds, from when it was queued to its answer. */
  observe(seconds: number): void;
  /** The calls of a batch that was sent. */
  batchSize(calls: number): void;
  log: FastifyBaseLogger;
}

interface Queued {
  adiId: string;
  request: ExecuteRequest;
  line: string;
  bytes: number;
  signal: AbortSignal | undefined;
  /** Its kind stops the work when cancelled (not a context call). */
  cuttable: boolean;
  queuedAt: number;
  timer: NodeJS.Timeout | undefined;
  settled: boolean;
  stopListening(): void;
  resolve(result: ToolResult): void;
  reject(error: unknown): void;
}

export class ExecuteBatcher {
  readonly #options: ExecuteBatcherOptions;
  #queue: Queued[] = [];
  #scheduled = false;
  /** Until when (`performance.now()`) batches are not sent: the control plane had no route for them. */
  #unsupportedUntil = 0;
  /** Control-plane processes met, and when last. */
  readonly #instances = new Map<string, number>();
  /**
   * Until when cuttable calls go alone: a batch was answered without naming its process (a
   * control plane from before per-call cuts, which could not cut one of them).
   */
  #uncuttableUntil = 0;

  constructor(options: ExecuteBatcherOptions) {
    this.#options = options;
  }

  /** Runs a call, in a batch when it may; `cuttable`: its kind stops the work when cancelled. */
  execute(
    adiId: string,
    request: ExecuteRequest,
    signal?: AbortSignal,
    cuttable = false,
  ): Promise<ToolResult> {
    if (
      signal?.aborted ||
      !EXECUTE_BATCH_ADI_ID_RE.test(adiId) ||
      performance.now() < this.#unsupportedUntil ||
      (cuttable && (performance.now() < this.#uncuttableUntil || this.#severalInstances()))
    ) {
      return this.#options.alone(adiId, request, signal);
    }
    const line = `${adiId}\t${JSON.stringify(request)}\n`;
    const bytes = Buffer.byteLength(line);
    if (bytes > MAX_LINE_BYTES) return this.#options.alone(adiId, request, signal);
    return new Promise<ToolResult>((resolve, reject) => {
      const call: Queued = {
        adiId,
        request,
        line,
        bytes,
        signal,
        cuttable,
        queuedAt: performance.now(),
        timer: undefined,
        settled: false,
        stopListening: () => {},
        resolve,
        reject,
      };
      this.#queue.push(call);
      if (!this.#scheduled) {
        this.#scheduled = true;
        // A batch serves many calls: it runs in none's trace (each line carries its own).
        setImmediate(() => detached(() => this.#flush()));
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    // A call cancelled while queued is not sent at all (alone, it would not have been either).
    const queue = this.#queue.filter((call) => {
      if (!call.signal?.aborted) return true;
      call.reject(cancelled());
      return false;
    });
    this.#queue = [];
    let at = 0;
    while (at < queue.length) {
      let bytes = 0;
      let end = at;
      while (
        end < queue.length &&
        end - at < this.#options.maxCalls &&
        (end === at || bytes + queue[end]!.bytes <= MAX_BATCH_BYTES)
      ) {
        bytes += queue[end]!.bytes;
        end++;
      }
      const calls = queue.slice(at, end);
      at = end;
      if (calls.length === 1) this.#alone(calls[0]!);
      else this.#send(calls);
    }
  }

  /** Sends `call` by the single route, its answer or failure its own. */
  #alone(call: Queued): void {
    this.#options.alone(call.adiId, call.request, call.signal).then(call.resolve, call.reject);
  }

  /** Notes the control-plane process that answered (any answer of the control plane's). */
  met(instance: string | undefined): void {
    if (instance === undefined) return;
    const now = performance.now();
    this.#instances.set(instance, now);
    if (this.#instances.size > 1) {
      for (const [id, at] of this.#instances) if (now - at > INSTANCE_MEMORY_MS) this.#instances.delete(id);
    }
  }

  /** More than one control-plane process answered lately behind the one address. */
  #severalInstances(): boolean {
    if (this.#instances.size < 2) return false;
    const now = performance.now();
    let recent = 0;
    for (const at of this.#instances.values()) if (now - at <= INSTANCE_MEMORY_MS) recent += 1;
    return recent > 1;
  }

  /** Asks the control plane running batch `batchId` to cut its line `line` (the call was cancelled). */
  #cut(batchId: string, line: number): void {
    this.#options.cancel(batchId, [line]).then(
      ({ status, instance }) => {
        this.met(instance);
        if (status !== 200 && status !== 404) {
          this.#options.log.warn({ status, batch: batchId, line }, 'a cancelled call could not be cut');
        }
      },
      (error: unknown) =>
        this.#options.log.warn(
          { err: error, batch: batchId, line },
          'a cancelled call could not be cut: the control plane did not answer',
        ),
    );
  }

  #send(calls: Queued[]): void {
    const { timeoutMs } = this.#options;
    const batchId = `${BATCH_ID_PREFIX}${(batchesSent++).toString(36)}`;
    // Ends the exchange once no call waits for it any more because the last one timed out or was
    // cancelled. (After the last answer the control plane ends it: aborting then would cost the
    // connection.)
    const done = new AbortController();
    let open = calls.length;
    const settle = (call: Queued, outcome: () => ToolResult, answered = false) => {
      if (!release(call)) return;
      try {
        call.resolve(outcome());
      } catch (error) {
        call.reject(error);
      }
      if (--open === 0 && !answered) done.abort();
    };
    calls.forEach((call, line) => {
      call.timer = setTimeout(() => {
        this.#options.timedOut();
        settle(call, () => {
          throw new ControlPlaneError(
            `control plane did not answer execute within ${timeoutMs} ms`,
            'no-answer',
            true,
          );
        });
        // Alone, the request's time limit would have closed it, which cuts it where it runs.
        if (call.cuttable && open > 0) this.#cut(batchId, line);
      }, timeoutMs);
      const { signal } = call;
      if (signal) {
        const onAbort = () => {
          settle(call, () => {
            throw cancelled();
          });
          // The last open call ending closes the exchange, which cuts it where it runs.
          if (call.cuttable && open > 0) this.#cut(batchId, line);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        call.stopListening = () => signal.removeEventListener('abort', onAbort);
      }
    });
    this.#options.batchSize(calls.length);
    const onAnswer = (line: ExecuteBatchAnswer) => {
      const call = Number.isInteger(line.i) ? calls[line.i] : undefined;
      if (!call || call.settled) return;
      this.#options.observe((performance.now() - call.queuedAt) / 1000);
      this.#options.record(line.status < 500);
      settle(call, () => this.#options.answer(line.status, line.body), true);
    };
    this.#options.exchange(calls.map((c) => c.line).join(''), onAnswer, done.signal, batchId).then(
      ({ status, body, instance }) => {
        this.met(instance);
        if (status === 200 && instance === undefined) {
          this.#uncuttableUntil = performance.now() + UNSUPPORTED_RETRY_MS;
        }
        if (status === 200) {
          for (const call of calls) {
            settle(call, () => {
              throw new ControlPlaneError(
                'the control plane ended the batch without answering the call',
                'error-answer',
              );
            });
          }
          return;
        }
        if (!REFUSED_WHOLE.has(status)) {
          // What each call would have got alone (401: a token the control plane does not take).
          for (const call of calls) {
            this.#options.record(true);
            settle(call, () => this.#options.answer(status, body));
          }
          return;
        }
        // Refused as a whole: nothing ran. Each call goes again, alone, and batches wait a while.
        this.#unsupportedUntil = performance.now() + UNSUPPORTED_RETRY_MS;
        const message = (body as { error?: { message?: string } } | undefined)?.error?.message;
        this.#options.log.warn(
          { status, message },
          status === 404
            ? 'the control plane has no /internal/execute-batch route (an older version): tool calls go one by one for a minute'
            : 'the control plane refused a batch of tool calls as a whole: tool calls go one by one for a minute',
        );
        for (const call of calls) if (release(call)) this.#alone(call);
      },
      (error: unknown) => {
        for (const call of calls) {
          settle(call, () => {
            throw error;
          });
        }
      },
    );
  }
}

/** Takes `call` off its batch (its timer and cancellation listener); false if it already was. */
function release(call: Queued): boolean {
  if (call.settled) return false;
  call.settled = true;
  clearTimeout(call.timer);
  call.stopListening();
  return true;
}

function cancelled(): ControlPlaneError {
  return new ControlPlaneError('the client cancelled the execute request', 'no-answer', false);
}
