/**
 * The prompts capability: `prompts/list` and `prompts/get` (`mcp/prompts.ts` answers them from the
 * cached config; an upstream server's prompt is asked for through the control plane).
 */
import { GetPromptRequestSchema, ListPromptsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { getPrompt, getUpstreamPrompt, listPrompts, upstreamPrompt } from '../prompts.ts';
import type { HandlerRegistry } from '../handler-table.ts';
import type { InputOf } from '../tools/client-input.ts';
import type { McpSessionContext } from '../session-context.ts';

export type PromptsContext = Pick<McpSessionContext, 'exposure' | 'client' | 'pageSize' | 'requestOf'>;

/**
 * Sets the prompts/list and prompts/get handlers of `server`; an upstream's prompt may ask the
 * client for input (`input`: what it can be asked, and how).
 */
export function registerPrompts(server: HandlerRegistry, session: PromptsContext, input?: InputOf): void {
  server.setRequestHandler(ListPromptsRequestSchema, async (request) =>
    listPrompts(await session.exposure(), request.params?.cursor, session.pageSize),
  );
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const exposure = await session.exposure();
    const { name, arguments: args = {} } = request.params;
    const upstream = exposure.kind === 'aei' ? upstreamPrompt(exposure, name) : undefined;
    if (exposure.kind !== 'aei' || !upstream) return getPrompt(exposure, name, args);
    return getUpstreamPrompt(exposure, upstream, args, {
      client: session.client,
      ...session.requestOf(extra),
      signal: extra.signal,
      input: input?.(extra),
    });
  });
}
