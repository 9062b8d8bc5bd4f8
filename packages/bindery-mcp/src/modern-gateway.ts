/**
 * The gateway in the 2026-07-28 era: stateless POSTs, one per request, through the v2 SDK's
 * StreamableHTTPClientTransport. It derives the standard headers (MCP-Protocol-Version, Mcp-Method,
 * Mcp-Name) from each request's envelope, reads the answer as JSON or as the request's own event
 * stream (progress and log messages come on it), hands a 400's JSON-RPC error over as the answer,
 * and aborts the request's stream when its signal fires: cancellation on this wire. No session,
 * no standing stream: nothing to keep up between requests.
 */
import { SdkHttpError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { rpcErrorOf, SendError, type Failure } from './connection.ts';
import { networkReason } from './settings.ts';

export interface ModernGatewayEvents {
  /** An answer, or a notification on a request's stream. */
  message(message: JSONRPCMessage): void;
  /** A request's answer stream ended; the request, if still unanswered, never will be. */
  answerStreamEnded(id: RequestId): void;
}

export class ModernGateway {
  readonly #transport: StreamableHTTPClientTransport;
  readonly #events: ModernGatewayEvents;
  #started: Promise<void> | undefined;
  #closed = false;

  constructor(endpoint: URL, headers: Record<string, string>, events: ModernGatewayEvents) {
    this.#transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } });
    this.#transport.onmessage = (message) => {
      // The v2 and v1 SDKs' message types differ only in what the relay never looks into.
      if (!this.#closed) events.message(message as JSONRPCMessage);
    };
    // Every failure of a send also rejects it; the relay reports it there.
    this.#transport.onerror = () => undefined;
    this.#events = events;
  }

  /**
   * POSTs `request`; resolves once the gateway accepted it (its answer comes as a message),
   * rejects with a SendError when it did not get through. `signal` abandons it (a cancel);
   * `headers` go with this POST alone (a tools/call's Mcp-Param-*).
   */
  async send(request: JSONRPCMessage, signal?: AbortSignal, headers?: Record<string, string>): Promise<void> {
    this.#started ??= this.#transport.start();
    await this.#started;
    const id = (request as { id?: RequestId }).id;
    try {
      await this.#transport.send(request as Parameters<StreamableHTTPClientTransport['send']>[0], {
        ...(signal && { requestSignal: signal }),
        ...(headers && { headers }),
        ...(id !== undefined && {
          onRequestStreamEnd: () => {
            if (!this.#closed) this.#events.answerStreamEnded(id);
          },
        }),
      });
    } catch (error) {
      throw new SendError(this.#failure(error, signal));
    }
  }

  /** Aborts every request in flight. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#transport.close().catch(() => undefined);
  }

  #failure(error: unknown, signal: AbortSignal | undefined): Failure {
    if (this.#closed || signal?.aborted) return { kind: 'aborted' };
    if (error instanceof SdkHttpError) {
      const text = typeof error.data.text === 'string' ? error.data.text : '';
      const rpcError = rpcErrorOf(text);
      return { kind: 'http', status: error.status, text, ...(rpcError && { error: rpcError }) };
    }
    if (error instanceof Error && error.name === 'AbortError') return { kind: 'aborted' };
    return { kind: 'unreachable', reason: networkReason(error) };
  }
}
