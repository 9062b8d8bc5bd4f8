/**
 * The completions capability: `completion/complete` for prompt arguments that declare their
 * choices (`mcp/prompts.ts`).
 */
import { CompleteRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { completePromptArgument } from '../prompts.ts';
import type { HandlerRegistry } from '../handler-table.ts';
import type { McpSessionContext } from '../session-context.ts';

export type CompletionContext = Pick<McpSessionContext, 'exposure'>;

/** Sets the completion/complete handler of `server`. */
export function registerCompletion(server: HandlerRegistry, session: CompletionContext): void {
  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params;
    // No resource templates take completions (yet): nothing to offer, which is a valid answer.
    if (ref.type !== 'ref/prompt') return { completion: { values: [], total: 0, hasMore: false } };
    return completePromptArgument(await session.exposure(), ref.name, argument);
  });
}
