/**
 * Where a capability module (`capabilities/`) sets its request handlers: the legacy era's MCP SDK
 * `Server` (a session's, or a stateless request's), or a `HandlerTable` the modern era
 * (`modern/`) dispatches from by method name. One registration serves both eras, so a handler is
 * written once.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { getLiteralValue, getObjectShape, safeParse } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestId, ServerNotification } from '@modelcontextprotocol/sdk/types.js';
import type { RequestInput } from './tools/client-input.ts';

/** What a capability registers on: the SDK server's `setRequestHandler`. */
export type HandlerRegistry = Pick<Server, 'setRequestHandler'>;

/** What a handler is told of its request (the part of the SDK's `extra` the capabilities read). */
export interface RequestExtra {
  requestId: RequestId;
  sessionId?: string | undefined;
  signal: AbortSignal;
  sendNotification(notification: ServerNotification): Promise<void>;
  /** What the client can be asked for input, and its answers of the previous round (modern). */
  input?: RequestInput | undefined;
  /**
   * A modern tools/call's `Mcp-Param-*` header of a lowercase name (no other), checked against the
   * tool's marked arguments (`tools/call.ts`); absent in the legacy era, which has no such headers.
   */
  paramHeader?: ParamHeader | undefined;
}

/** A request's one value of the lowercase `Mcp-Param-*` header `name`, if it has one. */
export type ParamHeader = (name: string) => string | undefined;

/** The modern request's Mcp-Param-* headers in a handler's `extra` (undefined for a legacy request's). */
export const paramHeaderOf = (extra: unknown): ParamHeader | undefined => (extra as RequestExtra).paramHeader;

type Handler = (request: unknown, extra: RequestExtra) => unknown;

interface Entry {
  schema: Parameters<Server['setRequestHandler']>[0];
  handler: Handler;
}

/** The outcome of checking a request against its method's schema. */
export type Parsed = { ok: true; request: unknown } | { ok: false; message: string };

// The method each request schema names, read once: a modern request builds its table anew.
const methods = new WeakMap<object, string>();

function methodOf(schema: Parameters<Server['setRequestHandler']>[0]): string {
  let method = methods.get(schema);
  if (method === undefined) {
    const named = getLiteralValue(getObjectShape(schema)?.method ?? schema);
    if (typeof named !== 'string') throw new Error('a request schema names its method');
    methods.set(schema, (method = named));
  }
  return method;
}

/** Request handlers by method, as the SDK's server keeps them, without a transport. */
export class HandlerTable implements HandlerRegistry {
  readonly #entries = new Map<string, Entry>();

  setRequestHandler: Server['setRequestHandler'] = (schema, handler) => {
    this.#entries.set(methodOf(schema), { schema, handler: handler as unknown as Handler });
  };

  has(method: string): boolean {
    return this.#entries.has(method);
  }

  /** `message` checked against its method's schema (the SDK's own check of a request). */
  parse(method: string, message: unknown): Parsed {
    const entry = this.#entries.get(method);
    if (!entry) return { ok: false, message: `Method not found: ${method}` };
    const parsed = safeParse(entry.schema, message);
    if (parsed.success) return { ok: true, request: parsed.data };
    const reason = parsed.error instanceof Error ? parsed.error.message : String(parsed.error);
    return { ok: false, message: `Invalid params for ${method}: ${reason}` };
  }

  /** Runs the handler of a parsed request. */
  run(method: string, request: unknown, extra: RequestExtra): Promise<unknown> {
    const entry = this.#entries.get(method);
    if (!entry) return Promise.reject(new Error(`no handler for ${method}`));
    return Promise.resolve(entry.handler(request, extra));
  }
}
