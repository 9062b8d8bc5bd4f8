/**
 * Plain JSON answers to `tools/call` and `tools/list` on a session this replica holds. The MCP
 * SDK's Streamable HTTP transport (web-standard Request/Response adaption, schema validation, SSE
 * framing) was most of the gateway's latency; these two methods are the hot ones, so they are
 * answered here by the session's own handlers, the very functions the SDK path calls
 * (`mcp/capabilities/tools.ts`). A list is sent as bytes prebuilt once per config and page.
 * `ping` is answered here too (`{}`, as the SDK answers it), so a client's keep-alive costs no trip
 * through the transport. Malformed params of these get the SDK path's answer from the same check
 * (`mcp/requests.ts`); anything else still goes through the SDK transport.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { McpError, type ServerNotification } from '@modelcontextprotocol/sdk/types.js';
import { SOURCE_META_KEY } from '@bindery/contracts';
import { sseEvent } from '../http/event-stream.ts';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import { sourceHintOf } from '../mcp/tools/source-routing.ts';
import { speaksSupportedVersion } from '../mcp/protocol-version.ts';
import { idempotencyKeyOf, paramsRefusal } from '../mcp/requests.ts';
import { listAnswer } from '../mcp/tools/list.ts';
import { canBeAsked, inputCapabilitiesOf } from '../mcp/tools/client-input.ts';
import { mayAskInput } from '../mcp/tools/tool-index.ts';
import type { Session } from '../mcp/sessions.ts';

/** True when the client can take a plain JSON answer at all (it accepts JSON, speaks a known version). */
export function acceptsDirectAnswer(headers: IncomingHttpHeaders): boolean {
  if (!(headers.accept ?? '').includes('application/json')) return false;
  // Any other version is refused by the routes (`mcp/protocol-version.ts`).
  return speaksSupportedVersion(headers);
}

/**
 * A direct answer's body: a serialised answer, or the chunks of a tools/list answer (prebuilt
 * bytes around the request's id, `mcp/tools/list.ts`).
 */
export type DirectBody = string | readonly Buffer[] | EventStreamBody;

/** An answer that carries notifications first (a call's log lines): one SSE event each, then the answer. */
export interface EventStreamBody {
  events: string;
}

/** The client takes an event stream as the answer to a POST (every spec-following client does). */
function acceptsEventStream(headers: IncomingHttpHeaders): boolean {
  return (headers.accept ?? '').includes('text/event-stream');
}

/** `answer` as is, or, after notifications, as the SSE events the SDK transport would send. */
function withNotifications(answer: string, notes: readonly ServerNotification[]): DirectBody {
  if (notes.length === 0) return answer;
  return {
    events: notes.map((n) => sseEvent(JSON.stringify({ jsonrpc: '2.0', ...n }))).join('') + sseEvent(answer),
  };
}

/**
 * The JSON-RPC answer to `message`, or undefined when the message is not one this path takes
 * (then the SDK transport must handle it). Rejects only on a gateway fault (not an McpError).
 */
export function directAnswer(
  session: Session,
  exposure: Exposure,
  message: unknown,
  headers: IncomingHttpHeaders,
): Promise<DirectBody> | undefined {
  if (!message || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const { jsonrpc, id, method, params: rawParams } = message as Record<string, unknown>;
  if (method === 'notifications/cancelled') {
    // Aborts a call this path is answering; the SDK transport still takes the notification.
    cancelDirectCall(session, rawParams);
    return undefined;
  }
  if (jsonrpc !== '2.0' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  if (method !== 'tools/list' && method !== 'tools/call' && method !== 'ping') return undefined;
  if (!acceptsDirectAnswer(headers)) return undefined;
  const params = (rawParams ?? {}) as Record<string, unknown>;
  if (typeof params !== 'object' || Array.isArray(params)) return undefined;
  if (method === 'ping') {
    const refused = paramsRefusal({ method, params });
    return Promise.resolve(
      JSON.stringify(refused ? { jsonrpc: '2.0', id, error: refused } : { jsonrpc: '2.0', id, result: {} }),
    );
  }
  // Progress tokens need notifications on the request's stream while the call runs: the SDK
  // handles those calls. A call's log lines are known when it ends: they are sent here, before
  // the answer, in an event stream (mcp/tools/call-log.ts). Other `_meta` (an idempotency key,
  // say) is read here as the SDK path reads it.
  if (
    method === 'tools/call' &&
    typeof params._meta === 'object' &&
    params._meta !== null &&
    'progressToken' in params._meta
  ) {
    return undefined;
  }
  // A tool that may ask a client that can be asked needs the client's answers on the call's own
  // stream: the SDK path sends those requests (mcp/tools/client-input.ts).
  if (
    method === 'tools/call' &&
    typeof params.name === 'string' &&
    mayAskInput(exposure, params.name) &&
    canBeAsked({ capabilities: inputCapabilitiesOf(session.server.getClientCapabilities()) })
  ) {
    return undefined;
  }
  // Malformed params get the answer the SDK path's guard gives (mcp/requests.ts).
  const refusal = paramsRefusal({ method, params });
  if (refusal) return Promise.resolve(JSON.stringify({ jsonrpc: '2.0', id, error: refusal }));
  const failed = (error: unknown) => {
    if (!(error instanceof McpError)) throw error;
    return JSON.stringify({
      jsonrpc: '2.0',
      id,
      error: { code: error.code, message: error.message, data: error.data },
    });
  };
  if (method === 'tools/list') {
    return session.endpoint
      .listPage(params.cursor as string | undefined, exposure)
      .then((page) => listAnswer(id, page), failed);
  }
  const calls = (session.directCalls ??= new Map());
  const cancel = new AbortController();
  const key = String(id);
  calls.set(key, cancel);
  // A client that takes no event stream gets the answer alone.
  const notes: ServerNotification[] = [];
  const notify = acceptsEventStream(headers)
    ? (n: ServerNotification) => {
        notes.push(n);
        return Promise.resolve();
      }
    : undefined;
  return session.endpoint
    .callTool(params.name as string, (params.arguments ?? {}) as Record<string, unknown>, {
      sessionId: session.id,
      requestId: `${session.id}:${key}`,
      idempotencyKey: idempotencyKeyOf(params),
      sourceHint: sourceHintOf(params, SOURCE_META_KEY),
      known: exposure,
      signal: cancel.signal,
      notify,
    })
    .then((result) => JSON.stringify({ jsonrpc: '2.0', id, result }), failed)
    .then((answer) => withNotifications(answer, notes))
    .finally(() => {
      if (calls.get(key) === cancel) calls.delete(key);
    });
}

/** `notifications/cancelled` for a call in flight on the direct path: aborts it, with its reason. */
function cancelDirectCall(session: Session, params: unknown): void {
  if (!params || typeof params !== 'object') return;
  const { requestId, reason } = params as { requestId?: unknown; reason?: unknown };
  if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
  session.directCalls?.get(String(requestId))?.abort(typeof reason === 'string' ? reason : 'cancelled');
}

/** Writes a direct answer: one JSON response (or, with notifications, an event stream) carrying the session id, as the SDK would. */
export function writeDirectAnswer(res: ServerResponse, session: Session, body: DirectBody): void {
  if (typeof body === 'string') {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': session.id });
    res.end(body);
    return;
  }
  if ('events' in body) {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'mcp-session-id': session.id,
    });
    res.end(body.events);
    return;
  }
  let length = 0;
  for (const chunk of body) length += chunk.length;
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': length,
    'mcp-session-id': session.id,
  });
  // One write to the socket for the head, the id and the page's bytes (no copy of the page).
  res.cork();
  for (const chunk of body) res.write(chunk);
  res.end();
}
