/**
 * The tools capability: `tools/list` (pages built once per config, `mcp/tools/list.ts`) and
 * `tools/call` (`mcp/tools/call.ts`). The two functions the handlers call are handed back too:
 * they are the session's hot handlers, which the direct answer (`fast/direct-answer.ts`) calls.
 */
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { SOURCE_META_KEY } from '@bindery/contracts';
import type { Exposure } from '../../control-plane/exposure-cache.ts';
import { idempotencyKeyOf } from '../requests.ts';
import { paramHeaderOf, type HandlerRegistry } from '../handler-table.ts';
import type { InputOf } from '../tools/client-input.ts';
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

/**
 * Sets the tools/list and tools/call handlers of `server`; returns the functions they call.
 * `input`: what a request's client can be asked for input, and how (`tools/client-input.ts`).
 */
export function registerTools(server: HandlerRegistry, session: ToolsContext, input?: InputOf): ToolHandlers {
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
      input: input?.(extra),
      paramHeader: paramHeaderOf(extra),
      ...(request.params._meta?.progressToken !== undefined && {
        progressToken: request.params._meta.progressToken,
      }),
    }),
  );

  return handlers;
}
