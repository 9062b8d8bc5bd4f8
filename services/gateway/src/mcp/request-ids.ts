/**
 * JSON-RPC ids of the requests a session has in flight through the MCP SDK's transport. The
 * transport routes each answer to the HTTP stream registered under its request id, so two requests
 * with one id in one session would get one crossed answer and one that never arrives. A request
 * whose id is taken is therefore refused on its own HTTP response before the transport sees it.
 *
 * An id is free again once its HTTP response has closed and the SDK is done with it: it sent the
 * answer, the client cancelled the request (then no answer is ever sent), or the transport refused
 * the message before dispatching it. Releasing on the response's close alone would not do: a
 * client that hangs up mid-call and reuses the id would receive the first call's late answer.
 *
 * The direct-answer path (`direct-answer.ts`) is not tracked: it answers each request on its own
 * HTTP response and never touches the transport's id map, so it cannot cross answers, and a
 * same-id request there beside one on the SDK path is harmless.
 */
import type { ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JSONRPC, type JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';

interface InFlight {
  /** The request's HTTP response has closed. */
  closed: boolean;
  /** The transport handed the request to the server, which will answer it (or see it cancelled). */
  dispatched: boolean;
  /** The answer was sent, or the request was cancelled. */
  done: boolean;
}

function requestIdsOf(message: unknown): RequestId[] {
  const ids: RequestId[] = [];
  for (const m of Array.isArray(message) ? message : [message]) {
    if (!m || typeof m !== 'object') continue;
    const { method, id } = m as { method?: unknown; id?: unknown };
    if (typeof method === 'string' && (typeof id === 'string' || typeof id === 'number')) ids.push(id);
  }
  return ids;
}

function refusal(id: RequestId): JsonRpcErrorAnswer {
  return {
    status: 409,
    code: JSONRPC.INVALID_REQUEST,
    message: `request id ${JSON.stringify(id)} is already in use in this session; wait for its answer or use another id`,
    bindery: 'CONFLICT',
  };
}

export class RequestIds {
  // A Map tells 1 from "1", as the SDK's own maps do.
  readonly #inFlight = new Map<RequestId, InFlight>();

  /**
   * Watches `transport` (after the server connected to it): what it dispatches, the answers it
   * sends, and cancellations.
   */
  constructor(transport: Transport) {
    const onmessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      this.#observeIncoming(message);
      onmessage?.(message, extra);
    };
    const send = transport.send.bind(transport);
    transport.send = async (message, options) => {
      try {
        await send(message, options);
      } finally {
        if (!('method' in message) && 'id' in message && message.id !== undefined) {
          this.#finish(message.id, 'done');
        }
      }
    };
  }

  #observeIncoming(message: JSONRPCMessage): void {
    if (!('method' in message)) return;
    if ('id' in message) {
      const entry = this.#inFlight.get(message.id);
      if (entry) entry.dispatched = true;
      return;
    }
    if (message.method === 'notifications/cancelled') {
      const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
      // The SDK aborts the handler and sends no answer for a cancelled request.
      if (typeof id === 'string' || typeof id === 'number') this.#finish(id, 'done');
    }
  }

  /**
   * Claims the ids of the requests in `message` (one message or a batch) until `res` closes and
   * the SDK is done with them; a refusal (nothing claimed) when one is in flight already or
   * appears twice in the batch.
   */
  claim(message: unknown, res: ServerResponse): JsonRpcErrorAnswer | undefined {
    const ids = requestIdsOf(message);
    if (ids.length === 0) return undefined;
    const seen = new Set<RequestId>();
    for (const id of ids) {
      if (this.#inFlight.has(id) || seen.has(id)) return refusal(id);
      seen.add(id);
    }
    const entries = ids.map((id) => {
      const entry: InFlight = { closed: false, dispatched: false, done: false };
      this.#inFlight.set(id, entry);
      return [id, entry] as const;
    });
    res.once('close', () => {
      for (const [id, entry] of entries) {
        if (this.#inFlight.get(id) === entry) this.#finish(id, 'closed');
      }
    });
    return undefined;
  }

  #finish(id: RequestId, what: 'closed' | 'done'): void {
    const entry = this.#inFlight.get(id);
    if (!entry) return;
    entry[what] = true;
    if (entry.closed && (entry.done || !entry.dispatched)) this.#inFlight.delete(id);
  }

  get size(): number {
    return this.#inFlight.size;
  }
}
