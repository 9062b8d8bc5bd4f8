/**
 * What the gateway checks in a JSON-RPC body before the MCP SDK sees it, so that every malformed
 * request gets a one-line JSON-RPC error instead of the SDK's raw validation dump or -32603:
 *
 * - the envelope (the whole body): a JSON-RPC 2.0 message or a non-empty batch of them, else
 *   -32600 with an HTTP 400 (an empty body is -32700, see http/json-body.ts);
 * - each request's params, for the methods this server handles: -32602 naming what is wrong
 *   (`tools/call needs params.name, a string`), answered with the request's id.
 *
 * The envelope is checked where the body is parsed (routes and fast lane); params are checked by
 * the direct answer and, on the SDK path, by a guard on the transport's message hook, so all three
 * paths answer alike. The SDK's own schemas stay the authority: a message they accept passes.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  PingRequestSchema,
  SetLevelRequestSchema,
  isJSONRPCRequest,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { IDEMPOTENCY_META_KEY, isIdempotencyKey } from '@bindery/contracts';
import { EMPTY_BODY } from '../http/json-body.ts';
import { JSONRPC, type JsonRpcErrorAnswer } from '../http/jsonrpc-errors.ts';

const invalidRequest = (message: string): JsonRpcErrorAnswer => ({
  status: 400,
  code: JSONRPC.INVALID_REQUEST,
  message: `Invalid Request: ${message}`,
  bindery: 'VALIDATION_FAILED',
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

/** Why one message is not JSON-RPC 2.0, in a line; undefined when the SDK's schema accepts it. */
function messageProblem(message: unknown, where: string): string | undefined {
  if (!isObject(message)) return `${where} must be a JSON-RPC message (an object)`;
  if (JSONRPCMessageSchema.safeParse(message).success) return undefined;
  if (message.jsonrpc !== '2.0') return `${where} needs "jsonrpc": "2.0"`;
  const unknown = Object.keys(message).find((k) => !MEMBERS.has(k));
  if (unknown !== undefined) return `${where} has an unknown member ${JSON.stringify(unknown)}`;
  const { id } = message;
  if (id !== undefined && typeof id !== 'string' && !Number.isSafeInteger(id)) {
    return `${where}: "id" must be a string or an integer`;
  }
  if ('method' in message) {
    if (typeof message.method !== 'string') return `${where}: "method" must be a string`;
    if (message.params !== undefined && !isObject(message.params)) {
      return `${where}: "params" must be an object`;
    }
    return `${where}: "params._meta" is malformed`;
  }
  if ('result' in message || 'error' in message) return `${where} is a malformed response`;
  return `${where} needs a "method" (or is a response without "result" or "error")`;
}

/**
 * The refusal of a POST body that is not a JSON-RPC message or a non-empty batch of them
 * (`undefined` is a POST without a body); undefined when the body may go on to the MCP layer.
 */
export function envelopeRefusal(body: unknown): JsonRpcErrorAnswer | undefined {
  if (body === undefined) return EMPTY_BODY;
  if (Array.isArray(body)) {
    if (body.length === 0) return invalidRequest('an empty batch');
    for (const [index, message] of body.entries()) {
      const problem = messageProblem(message, `batch item ${index}`);
      if (problem) return invalidRequest(problem);
    }
    return undefined;
  }
  const problem = messageProblem(body, 'the body');
  return problem === undefined ? undefined : invalidRequest(problem);
}

/** A JSON-RPC error object for a request's id. */
export interface RequestRefusal {
  code: number;
  message: string;
}

const invalidParams = (message: string): RequestRefusal => ({ code: ErrorCode.InvalidParams, message });

// The methods this server answers, with the SDK schema each request must pass.
const SCHEMAS = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'logging/setLevel': SetLevelRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
  'prompts/list': ListPromptsRequestSchema,
  'prompts/get': GetPromptRequestSchema,
  'completion/complete': CompleteRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
} as const;

function firstIssue(method: keyof typeof SCHEMAS, request: unknown): string | undefined {
  const parsed = SCHEMAS[method].safeParse(request);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  const path = (issue?.path ?? []).map(String).join('.');
  return `${method}: ${path || 'the request'} is invalid (${issue?.message ?? 'wrong shape'})`;
}

/**
 * The -32602 refusal of a request's params, for the methods this server handles; undefined when
 * they are fine (or the method is not one of ours: the SDK answers -32601).
 */
export function paramsRefusal(request: { method: string; params?: unknown }): RequestRefusal | undefined {
  const { method } = request;
  if (!Object.hasOwn(SCHEMAS, method)) return undefined;
  const params = isObject(request.params) ? request.params : {};
  if (params.task !== undefined) {
    return invalidParams(`${method}: this server does not run requests as tasks (params.task)`);
  }
  // The two hot methods are checked by hand: these are all their schemas ask beyond the envelope
  // (which has checked `_meta`), and a schema parse of large arguments costs about a millisecond.
  if (method === 'tools/call') {
    if (typeof params.name !== 'string') return invalidParams('tools/call needs params.name, a string');
    if (params.arguments !== undefined && !isObject(params.arguments)) {
      return invalidParams('tools/call params.arguments must be an object of named arguments');
    }
    const key = isObject(params._meta) ? params._meta[IDEMPOTENCY_META_KEY] : undefined;
    if (key !== undefined && !isIdempotencyKey(key)) {
      return invalidParams(
        `tools/call params._meta["${IDEMPOTENCY_META_KEY}"] must be 1-255 visible ASCII characters`,
      );
    }
    return undefined;
  }
  if (method === 'tools/list') {
    if (params.cursor !== undefined && typeof params.cursor !== 'string') {
      return invalidParams('tools/list params.cursor must be a string: the nextCursor of an earlier page');
    }
    return undefined;
  }
  const issue = firstIssue(method as keyof typeof SCHEMAS, request);
  return issue === undefined ? undefined : invalidParams(issue);
}

/** The idempotency key of a tools/call (checked by `paramsRefusal` first), if it carries one. */
export function idempotencyKeyOf(params: { _meta?: unknown } | undefined): string | undefined {
  const meta = params?._meta;
  const key = isObject(meta) ? meta[IDEMPOTENCY_META_KEY] : undefined;
  return isIdempotencyKey(key) ? key : undefined;
}

/**
 * Puts the params check in front of the SDK's request handlers on `transport` (call it after the
 * server has connected, which installs the hook being wrapped): a refused request is answered on
 * its own stream with its id, and never reaches the SDK's schema parse.
 */
export function guardRequests(transport: Transport): void {
  const deliver = transport.onmessage;
  if (!deliver) throw new Error('guardRequests: connect the server to the transport first');
  transport.onmessage = (message: JSONRPCMessage, extra) => {
    if (isJSONRPCRequest(message)) {
      const refusal = paramsRefusal(message);
      if (refusal) {
        // Delivery failures (the client went away) are the transport's to report.
        void transport.send({ jsonrpc: '2.0', id: message.id, error: refusal }).catch(() => undefined);
        return;
      }
    }
    deliver(message, extra);
  };
}
