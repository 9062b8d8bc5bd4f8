/**
 * Plain JSON answers to `tools/call` and `tools/list` on a session this replica holds. The MCP
 * SDK's Streamable HTTP transport (web-standard Request/Response adaption, schema validation, SSE
 * framing) was most of the gateway's latency; these two methods are the hot ones, so they are
 * answered here by the session's own handlers, the very functions the SDK path calls. A list is
 * sent as bytes prebuilt once per config and page. Malformed params of these two get the SDK
 * path's answer from the same check (`mcp/requests.ts`); anything else still goes through the SDK
 * transport.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { McpError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { Exposure } from './exposure-cache.ts';
import { idempotencyKeyOf, paramsRefusal } from './mcp/requests.ts';
import { listAnswer } from './mcp/tools-list.ts';
import type { Session } from './sessions.ts';

/** True when the client can take a plain JSON answer at all (it accepts JSON, speaks a known version). */
export function acceptsDirectAnswer(headers: IncomingHttpHeaders): boolean {
  if (!(headers.accept ?? '').includes('application/json')) return false;
  const version = headers['mcp-protocol-version'];
  return version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(String(version));
}

/**
 * A direct answer's body: a serialised answer, or the chunks of a tools/list answer (prebuilt
 * bytes around the request's id, `mcp/tools-list.ts`).
 */
export type DirectBody = string | readonly Buffer[];

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
  if (method !== 'tools/list' && method !== 'tools/call') return undefined;
  if (!acceptsDirectAnswer(headers)) return undefined;
  const params = (rawParams ?? {}) as Record<string, unknown>;
  if (typeof params !== 'object' || Array.isArray(params)) return undefined;
  // A call of a client that asked for log messages gets them on the call's stream, and progress
  // tokens need notifications on the request's stream: the SDK handles those calls. A list sends
  // neither, so it is answered here all the same. Other `_meta` (an idempotency key, say) is read
  // here as the SDK path reads it.
  if (
    method === 'tools/call' &&
    (session.endpoint.wantsLogs() ||
      (typeof params._meta === 'object' && params._meta !== null && 'progressToken' in params._meta))
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
  return session.endpoint
    .callTool(params.name as string, (params.arguments ?? {}) as Record<string, unknown>, {
      sessionId: session.id,
      requestId: `${session.id}:${key}`,
      idempotencyKey: idempotencyKeyOf(params),
      known: exposure,
      signal: cancel.signal,
    })
    .then((result) => JSON.stringify({ jsonrpc: '2.0', id, result }), failed)
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

/** Writes a direct answer: one JSON response carrying the session id, as the SDK would. */
export function writeDirectAnswer(res: ServerResponse, session: Session, body: DirectBody): void {
  if (typeof body === 'string') {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': session.id });
    res.end(body);
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
