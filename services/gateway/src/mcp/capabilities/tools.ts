/**
 * The tools capability: `tools/list` (pages built once per config, `mcp/tools/list.ts`) and
 * `tools/call` (`mcp/tools/call.ts`). The two functions the handlers call are handed back too:
 * they are the session's hot handlers, which the direct answer (`fast/direct-answer.ts`) calls.
 */
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { InputRequest } from '@bindery/contracts';
import { SOURCE_META_KEY } from '@bindery/contracts';
import type { Exposure } from '../../control-plane/exposure-cache.ts';
import { idempotencyKeyOf } from '../requests.ts';
import type { HandlerRegistry, RequestExtra } from '../handler-table.ts';
import { inputCapabilitiesOf, type RequestInput } from '../tools/client-input.ts';
import type { McpSessionContext } from '../session-context.ts';
import { callTool, type ToolCall, type ToolCallContext } from '../tools/call.ts';
import { listPage, type ListPage } from '../tools/list.ts';
import { sourceHintOf } from '../tools/source-routing.ts';

export type ToolsContext = ToolCallContext & Pick<McpSessionContext, 'pageSize' | 'charge' | 'requestOf'>;

/** The functions behind the tools handlers, for answers that do not go through the SDK. */
export interface ToolHandlers {
  /**
   * The tools/list page `cursor` names, built once per config (`mcp/tools/list.ts`). `known`: the
   * exposure the caller already resolved for this request, saving a second lookup.
   */
  listPage(cursor: string | undefined, known?: Exposure): Promise<ListPage>;
  callTool(name: string, args: Record<string, unknown>, call: ToolCall): Promise<CallToolResult>;
}

/** The schema a legacy client's answer to an input request is read with (the SDK checks it). */
const ANSWER_SCHEMAS = {
  'elicitation/create': ElicitResultSchema,
  'sampling/createMessage': CreateMessageResultSchema,
  'roots/list': ListRootsResultSchema,
} as const;

/** What the SDK tells a legacy handler besides the request: it can send requests to the client. */
interface SdkExtra {
  sendRequest?: (
    request: { method: string; params?: Record<string, unknown> },
    schema: (typeof ANSWER_SCHEMAS)[keyof typeof ANSWER_SCHEMAS],
    options?: { signal?: AbortSignal },
  ) => Promise<unknown>;
}

/**
 * Sets the tools/list and tools/call handlers of `server`; returns the functions they call.
 * `clientCapabilities`: what a legacy session's client declared (its tools may ask it for input on
 * the call's stream); a modern request's handler is told what its client declared in `extra`.
 */
export function registerTools(
  server: HandlerRegistry,
  session: ToolsContext,
  clientCapabilities?: () => unknown,
): ToolHandlers {
  // A legacy session's calls ask the client through the SDK, on the call's own stream.
  const legacyInput = (extra: SdkExtra): RequestInput | undefined => {
    const send = extra.sendRequest;
    if (!clientCapabilities || !send) return undefined;
    return {
      capabilities: inputCapabilitiesOf(clientCapabilities()),
      ask: (request: InputRequest, signal) => {
        const schema = ANSWER_SCHEMAS[request.method as keyof typeof ANSWER_SCHEMAS];
        if (!schema) return Promise.reject(new Error(`no client request ${request.method}`));
        return send({ method: request.method, params: request.params }, schema, signal && { signal });
      },
    };
  };
  const handlers: ToolHandlers = {
    listPage: async (cursor, known) =>
      listPage(await session.exposure(known), cursor, {
        pageSize: session.pageSize,
        client: session.client,
        charge: session.charge,
      }),
    callTool: (name, args, call) => callTool(session, name, args, call),
  };

  // The SDK path sends the page's prebuilt result; it serialises it itself.
  server.setRequestHandler(
    ListToolsRequestSchema,
    async (request) => (await handlers.listPage(request.params?.cursor)).result,
  );
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    handlers.callTool(request.params.name, request.params.arguments ?? {}, {
      ...session.requestOf(extra),
      idempotencyKey: idempotencyKeyOf(request.params),
      sourceHint: sourceHintOf(request.params, SOURCE_META_KEY),
      notify: (n) => extra.sendNotification(n),
      signal: extra.signal,
      input: (extra as Partial<RequestExtra>).input ?? legacyInput(extra as SdkExtra),
      ...(request.params._meta?.progressToken !== undefined && {
        progressToken: request.params._meta.progressToken,
      }),
    }),
  );

  return handlers;
}
