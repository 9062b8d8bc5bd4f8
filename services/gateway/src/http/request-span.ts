/**
 * One span per MCP request the gateway serves, when traces are on (service-kit's tracing.ts):
 * named after its method and target as OpenTelemetry's MCP conventions name them
 * ("tools/call get_customer"), continuing the agent's own trace when it sent one: the request's
 * `params._meta.traceparent` (MCP's keys for it, SEP-414), else its `traceparent` header. It ends
 * when the answer is sent. The control plane's spans of the call are its children: the call
 * carries the context to it (control-plane/client.ts).
 */
import { SpanKind, carriedContext, noteRequestTrace, openSpan, tracingOn } from '@bindery/service-kit';
import type { FastifyReply, FastifyRequest } from 'fastify';

interface Message {
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; uri?: unknown; _meta?: unknown };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The methods a span is named after; any other is `unknown`. A span's name and attributes come
 * from a request that is not yet authenticated: nothing of it is kept unbounded.
 */
const MCP_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'server/discover',
  'subscriptions/listen',
  'tasks/get',
  'tasks/list',
  'tasks/result',
  'tasks/cancel',
  'tasks/update',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
]);
/** A tool name or URI longer than this is left out of the span (MCP's own names are far shorter). */
export const MAX_TARGET_CHARS = 128;
const MAX_ID_CHARS = 64;

/**
 * Runs `serve` (the route's work for `request`) inside the request's span; with traces off, or for
 * a stream (GET) or a close (DELETE), just runs it.
 */
export function inRequestSpan<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  serve: () => Promise<T>,
): Promise<T> {
  if (request.method !== 'POST' || !tracingOn()) return serve();
  const message = (isObject(request.body) ? request.body : {}) as Message;
  const method =
    typeof message.method === 'string' && MCP_METHODS.has(message.method) ? message.method : 'unknown';
  const params = isObject(message.params) ? message.params : {};
  const named =
    typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
  const target = named !== undefined && named.length <= MAX_TARGET_CHARS ? named : undefined;
  const id =
    typeof message.id === 'string' || typeof message.id === 'number' ? String(message.id) : undefined;
  const session = request.headers['mcp-session-id'];
  return servedInSpan(
    request,
    reply,
    target === undefined ? method : `${method} ${target}`,
    isObject(params._meta) ? params._meta : undefined,
    {
      'mcp.method.name': method,
      ...(method === 'tools/call' && target !== undefined && { 'gen_ai.tool.name': target }),
      ...(method.startsWith('resources/') && target !== undefined && { 'mcp.resource.uri': target }),
      ...(id !== undefined && id.length <= MAX_ID_CHARS && { 'jsonrpc.request.id': id }),
      ...(typeof session === 'string' && { 'mcp.session.id': session }),
      'network.transport': 'tcp',
    },
    serve,
  );
}

/**
 * Runs `serve` in a server span named `name`, continuing the trace of `carrier` (a message's
 * `_meta`) or else of the request's `traceparent` header; the span ends when the answer is sent,
 * and the request's log lines name it. With traces off, just runs `serve`.
 */
export function servedInSpan<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  name: string,
  carrier: Record<string, unknown> | undefined,
  attributes: Record<string, string>,
  serve: () => Promise<T>,
): Promise<T> {
  const opened = openSpan(name, {
    kind: SpanKind.SERVER,
    parent: carriedContext(carrier, request.headers),
    attributes,
  });
  if (!opened) return serve();
  const { traceId, spanId } = opened.span.spanContext();
  // Its answer's line names the trace too (that line is written once the span has ended).
  noteRequestTrace(request, { trace_id: traceId, span_id: spanId });
  reply.raw.once('close', () =>
    opened.end(reply.raw.statusCode >= 500 ? `answered ${reply.raw.statusCode}` : undefined),
  );
  return opened.run(serve);
}
