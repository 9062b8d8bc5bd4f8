/**
 * The fetch HTTP upstream servers are reached through: every byte an upstream sends is counted as
 * it arrives, before anything buffers or parses it, so no server can make the control plane hold
 * more than its caps (an SSE line that never ends once took 3 GB and the process with it).
 *
 * - A JSON (or any non-SSE) body is one message: at most `maxMessageBytes` (at once when its
 *   Content-Length says more).
 * - An event stream is cut when one event (the bytes up to the blank line that ends it) passes
 *   `maxMessageBytes`, and, for the answer to a POST (one request's stream: its progress, logs and
 *   result), when the whole stream passes `maxCallBytes`.
 * - The answer to a POST is cut after `postDeadlineMs`: a request's own timeout ends its wait, this
 *   ends the stream an upstream would otherwise keep open and writing. A GET resuming a stream
 *   (Last-Event-ID) is bounded like the answer it continues.
 *
 * A cut errors the body with `AnswerTooLarge` (the reader sees it, the socket is destroyed) and
 * tells `onCut` which request the body answered (the id of the JSON-RPC request POSTed, when
 * there was one), so the instance can fail that one request instead of waiting for its timeout.
 */
import { fetch as undiciFetch, Response, type Dispatcher } from 'undici';

/** An upstream's message or stream passed a byte cap; the body was cut there. */
export class AnswerTooLarge extends Error {
  constructor(
    readonly limitBytes: number,
    readonly what: 'message' | 'call',
  ) {
    super(
      what === 'message'
        ? `the upstream server sent a message over ${limitBytes} bytes (UPSTREAM_MESSAGE_MAX_BYTES); it was cut there`
        : `the upstream server's answer to one request passed ${limitBytes} bytes (UPSTREAM_CALL_MAX_BYTES); it was cut there`,
    );
    this.name = 'AnswerTooLarge';
  }
}

export interface BoundedFetchOptions {
  /** The guarded dispatcher (the SSRF guard): every request passes it. */
  dispatcher: Dispatcher;
  maxMessageBytes: number;
  maxCallBytes: number;
  /** How long the answer to a POST may take, body included. */
  postDeadlineMs: number;
  /**
   * A body was cut. `requestId`: the JSON-RPC request it answered (a POST of one request), else
   * undefined (a GET stream, a POST of a notification or response).
   */
  onCut(error: AnswerTooLarge, requestId: string | number | undefined): void;
}

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Bytes of one answer handed on between two turns of the event loop (most answers: fewer). */
const TURN_BYTES = 64 * 1024;

/** Statuses whose responses have no body (a Response cannot be built with one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/** A fetch for the MCP SDK's HTTP transports whose every answer is bounded as described above. */
export function boundedFetch(options: BoundedFetchOptions): FetchLike {
  return (async (url: string | URL, init?: RequestInit) => {
    const post = (init?.method ?? 'GET').toUpperCase() === 'POST';
    // A GET with Last-Event-ID resumes a stream that broke (the SDK resumes a POST's answer so):
    // it is bounded like the answer it continues, or a stream could be resumed without end.
    const resumed = !post && new Headers(init?.headers).has('last-event-id');
    const requestId = post ? requestIdOf(init?.body) : undefined;
    const deadline = post || resumed ? new Deadline(options.postDeadlineMs, init?.signal) : undefined;
    let response: Response;
    try {
      response = await undiciFetch(url, {
        ...(init as object),
        dispatcher: options.dispatcher,
        ...((deadline?.signal ?? init?.signal) && { signal: deadline?.signal ?? init?.signal }),
      } as Parameters<typeof undiciFetch>[1]);
    } catch (error) {
      deadline?.end();
      throw error;
    }
    if (response.body === null || NULL_BODY.has(response.status)) {
      deadline?.end();
      return response;
    }
    const stream = mediaType(response.headers.get('content-type')) === 'text/event-stream';
    const cut = (error: AnswerTooLarge) => options.onCut(error, requestId);
    const length = Number(response.headers.get('content-length'));
    if (!stream && Number.isFinite(length) && length > options.maxMessageBytes) {
      const error = new AnswerTooLarge(options.maxMessageBytes, 'message');
      await response.body.cancel(error).catch(() => {});
      deadline?.end();
      cut(error);
      return new Response(erroredBody(error), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    const counter = stream
      ? eventCounter(options.maxMessageBytes, post || resumed ? options.maxCallBytes : Infinity)
      : bodyCounter(options.maxMessageBytes);
    let sinceTurn = 0;
    const bounded = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const error = counter(chunk);
          if (error === undefined) {
            controller.enqueue(chunk);
            sinceTurn += chunk.byteLength;
            if (sinceTurn < TURN_BYTES) return;
            // A fast upstream's bytes arrive buffered, and a pipe hands them on in microtasks
            // alone: the event loop would serve no other request until the whole burst is
            // parsed. Past TURN_BYTES the next chunk waits for a turn of the event loop.
            sinceTurn = 0;
            return new Promise<void>((resolve) => setImmediate(resolve));
          }
          // Erroring the transform cancels the source: undici destroys the connection.
          controller.error(error);
          deadline?.end();
          cut(error);
        },
        flush: () => deadline?.end(),
      }),
    );
    return new Response(deadline ? endingOnCancel(bounded, deadline) : bounded, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }) as unknown as FetchLike;
}

/**
 * The signal of one answer: aborted by the caller's signal or once `ms` pass. `end()` (the body
 * ended, failed or was cut) clears the timer and lets go of the caller's signal, so nothing of
 * a finished request stays reachable until its deadline.
 */
class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;

  constructor(
    ms: number,
    private readonly caller: AbortSignal | null | undefined,
  ) {
    this.onAbort = () => this.controller.abort(caller?.reason);
    this.timer = setTimeout(
      () => this.controller.abort(new Error(`the upstream's answer took longer than ${ms} ms; it was cut`)),
      ms,
    );
    this.timer.unref();
    if (caller?.aborted) this.onAbort();
    else caller?.addEventListener('abort', this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  end(): void {
    clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this.onAbort);
  }
}

/** Counts a body's bytes: the cap's error once they pass it. */
function bodyCounter(maxBytes: number): (chunk: Uint8Array) => AnswerTooLarge | undefined {
  let total = 0;
  return (chunk) => {
    total += chunk.byteLength;
    return total > maxBytes ? new AnswerTooLarge(maxBytes, 'message') : undefined;
  };
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts an event stream's bytes per event (an event ends at an empty line: LF, CR or CRLF line
 * ends, as the SSE grammar has them) and in all: the cap's error once either passes its cap.
 */
export function eventCounter(
  maxEventBytes: number,
  maxTotalBytes: number,
): (chunk: Uint8Array) => AnswerTooLarge | undefined {
  let total = 0;
  let event = 0;
  let line = 0;
  // A CR just ended a line: an LF right after it belongs to the same line end.
  let afterCr = false;
  return (chunk) => {
    total += chunk.byteLength;
    if (total > maxTotalBytes) return new AnswerTooLarge(maxTotalBytes, 'call');
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      event += 1;
      if (byte === LF || byte === CR) {
        if (byte === LF && afterCr) {
          afterCr = false;
          continue;
        }
        afterCr = byte === CR;
        // An empty line ends the event.
        if (line === 0) event = 0;
        line = 0;
      } else {
        afterCr = false;
        line += 1;
      }
      if (event > maxEventBytes) return new AnswerTooLarge(maxEventBytes, 'message');
    }
    return undefined;
  };
}

/** The SDK writes a request's id last (`{...request, jsonrpc, id}`): found without parsing the arguments. */
const TRAILING_ID = /"id":(\d{1,15})\}$/;
/** Bodies parsed whole when the id is not where the SDK puts it. */
const PARSED_BODY_MAX = 64 * 1024;

/** The id of the one JSON-RPC request a POST body carries (the SDK sends one message a POST). */
function requestIdOf(body: unknown): string | number | undefined {
  if (typeof body !== 'string') return undefined;
  const trailing = TRAILING_ID.exec(body);
  if (trailing && body.includes('"method":')) return Number(trailing[1]);
  if (body.length > PARSED_BODY_MAX) return undefined;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    if (typeof message.method !== 'string') return undefined;
    return typeof message.id === 'string' || typeof message.id === 'number' ? message.id : undefined;
  } catch {
    return undefined;
  }
}

function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** `body`, telling `deadline` when its reader cancels it (the SDK does so with answers it skips). */
function endingOnCancel(body: ReadableStream<Uint8Array>, deadline: Deadline): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        deadline.end();
        controller.error(error);
      }
    },
    cancel(reason) {
      deadline.end();
      return reader.cancel(reason);
    },
  });
}

function erroredBody(error: Error): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.error(error);
    },
  });
}
