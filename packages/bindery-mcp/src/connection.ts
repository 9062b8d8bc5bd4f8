/**
 * One MCP session with the gateway: the SDK's StreamableHTTPClientTransport, with a fetch of our
 * own underneath that watches what the transport only reports as errors, if at all:
 *
 * - the standalone GET stream (server notifications), which the transport opens by itself once
 *   the gateway accepted notifications/initialized (it answers 202): refused (404 once the gateway
 *   no longer holds the session), unreachable, or ended. The transport's own reconnection is off
 *   (maxRetries 0): the relay decides whether to reopen the stream or start a new session.
 * - a request's answer stream (a POST answered as SSE) ending before the answer came;
 * - the body of a refused POST (an HTTP error carrying a JSON-RPC error), which the transport
 *   only folds into an exception's text.
 */
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { networkReason } from './settings.ts';

/** Why the standalone stream is gone. */
export type StreamLoss =
  | { kind: 'ended'; livedMs: number }
  | { kind: 'gone' }
  | { kind: 'refused'; status: number }
  | { kind: 'unreachable'; reason: string };

/** A JSON-RPC error object, as sent to the client. */
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** Why a message did not reach the gateway (or its answer did not come back). */
export type Failure =
  | { kind: 'unreachable'; reason: string }
  | { kind: 'http'; status: number; error?: RpcError; text: string }
  | { kind: 'rpc'; error: RpcError }
  | { kind: 'aborted' };

export interface ConnectionEvents {
  message(connection: GatewayConnection, message: JSONRPCMessage): void;
  streamLost(connection: GatewayConnection, loss: StreamLoss): void;
  /** A request's answer stream ended; those of `ids` still unanswered never will be. */
  answerStreamEnded(connection: GatewayConnection, ids: RequestId[]): void;
  transportError(connection: GatewayConnection, error: Error): void;
}

export class GatewayConnection {
  readonly transport: StreamableHTTPClientTransport;
  /** Replaced by a newer session: closes once its requests in flight are answered. */
  retired = false;
  closed = false;
  readonly #events: ConnectionEvents;
  /** Refused POSTs' answers, by the body sent (the transport serialises each message alike). */
  readonly #refusals = new Map<string, { status: number; text: string }>();

  constructor(
    readonly id: number,
    endpoint: URL,
    headers: Record<string, string>,
    events: ConnectionEvents,
  ) {
    this.#events = events;
    this.transport = new StreamableHTTPClientTransport(endpoint, {
      requestInit: { headers },
      fetch: (url, init) => this.#fetch(url, init),
      // The relay reopens the stream or starts a new session itself (see streamLost).
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 0,
        maxReconnectionDelay: 0,
        reconnectionDelayGrowFactor: 1,
      },
    });
    this.transport.onmessage = (message) => {
      if (!this.closed) this.#events.message(this, message);
    };
    this.transport.onerror = (error) => {
      if (!this.closed) this.#events.transportError(this, error);
    };
  }

  start(): Promise<void> {
    return this.transport.start();
  }

  get sessionId(): string | undefined {
    return this.transport.sessionId;
  }

  /** Sends `message`; rejects with the Failure when it did not get through. */
  async send(message: JSONRPCMessage): Promise<void> {
    try {
      await this.transport.send(message);
    } catch (error) {
      throw new SendError(this.#failure(message, error));
    }
  }

  /** Opens the standalone stream again on this session (its outcome reaches streamLost). */
  reopenStream(): void {
    // No Last-Event-ID: the gateway keeps no event log to resume from.
    this.transport.resumeStream('').catch(() => undefined);
  }

  /** DELETEs the session, waiting at most `timeoutMs`; never throws. */
  async terminate(timeoutMs: number): Promise<void> {
    if (this.closed || this.sessionId === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.transport.terminateSession().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Aborts everything in flight on this session (its GET stream included). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.transport.close().catch(() => undefined);
  }

  #failure(message: JSONRPCMessage, error: unknown): Failure {
    if (error instanceof StreamableHTTPError && typeof error.code === 'number' && error.code >= 100) {
      const body = JSON.stringify(message);
      const text = this.#refusals.get(body)?.text ?? '';
      this.#refusals.delete(body);
      const rpcError = rpcErrorOf(text);
      return { kind: 'http', status: error.code, text, ...(rpcError && { error: rpcError }) };
    }
    if (error instanceof StreamableHTTPError) {
      return { kind: 'http', status: 0, text: error.message };
    }
    if (this.closed || (error instanceof Error && error.name === 'AbortError')) return { kind: 'aborted' };
    return { kind: 'unreachable', reason: networkReason(error) };
  }

  async #fetch(url: string | URL, init?: RequestInit): Promise<Response> {
    const method = (init?.method ?? 'GET').toUpperCase();
    let response: Response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      if (method === 'GET' && !this.closed && !isAbort(error)) {
        this.#events.streamLost(this, { kind: 'unreachable', reason: networkReason(error) });
      }
      throw error;
    }
    if (method === 'GET') {
      if (!response.ok) {
        // 405: the gateway offers no stream; nothing to watch (the transport accepts that too).
        if (!this.closed && response.status !== 405) {
          this.#events.streamLost(
            this,
            response.status === 404 ? { kind: 'gone' } : { kind: 'refused', status: response.status },
          );
        }
        return response;
      }
      const opened = Date.now();
      return watched(response, () => {
        if (!this.closed) this.#events.streamLost(this, { kind: 'ended', livedMs: Date.now() - opened });
      });
    }
    if (method === 'POST') {
      if (!response.ok) {
        const text = await response
          .clone()
          .text()
          .catch(() => '');
        this.#refusals.set(String(init?.body), { status: response.status, text });
        return response;
      }
      const ids = requestIdsOf(init?.body);
      if (ids.length > 0 && response.headers.get('content-type')?.includes('text/event-stream')) {
        return watched(response, () => {
          if (!this.closed) this.#events.answerStreamEnded(this, ids);
        });
      }
    }
    return response;
  }
}

export class SendError extends Error {
  constructor(readonly failure: Failure) {
    super(failure.kind);
  }
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

/** The JSON-RPC error of a refusal's body (`{"jsonrpc": "2.0", "id": null, "error": {...}}`). */
export function rpcErrorOf(text: string): RpcError | undefined {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; data?: unknown } };
    const error = body?.error;
    if (error && typeof error.code === 'number' && typeof error.message === 'string') {
      return {
        code: error.code,
        message: error.message,
        ...(error.data !== undefined && { data: error.data }),
      };
    }
  } catch {
    // not JSON: the caller reports the status and text
  }
  return undefined;
}

/** The ids of the requests in a POST body (one message, or a batch). */
function requestIdsOf(body: unknown): RequestId[] {
  if (typeof body !== 'string') return [];
  try {
    const parsed = JSON.parse(body) as unknown;
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    return messages
      .filter((m): m is { id: RequestId; method: string } => {
        const message = m as { id?: unknown; method?: unknown };
        return (
          typeof message?.method === 'string' &&
          (typeof message.id === 'string' || typeof message.id === 'number')
        );
      })
      .map((m) => m.id);
  } catch {
    return [];
  }
}

/** `response` with a body that calls `onEnd` once when it ends, fails or is cancelled. */
function watched(response: Response, onEnd: () => void): Response {
  const source = response.body;
  if (!source) return response;
  const reader = source.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        controller.error(error);
        end();
        return;
      }
      if (chunk.done) {
        controller.close();
        end();
      } else {
        controller.enqueue(chunk.value);
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
