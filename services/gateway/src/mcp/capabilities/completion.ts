/**
 * The completions capability: `completion/complete` for prompt arguments that declare their
 * choices (`mcp/prompts.ts`), and for the prompts and resource templates of attached upstream
 * servers, which their server completes (asked through the control plane, as a prompts/get is).
 */
import {
  CompleteResultSchema,
  CompleteRequestSchema,
  type CompleteResult,
} from '@modelcontextprotocol/sdk/types.js';
import { completePromptArgument, upstreamPrompt } from '../prompts.ts';
import { askUpstream, upstreamTemplatesOf } from '../upstream-catalog.ts';
import type { HandlerRegistry } from '../handler-table.ts';
import type { McpSessionContext } from '../session-context.ts';

export type CompletionContext = Pick<McpSessionContext, 'exposure' | 'client' | 'requestOf'>;

const NOTHING: CompleteResult = { completion: { values: [], total: 0, hasMore: false } };

/** Sets the completion/complete handler of `server`. */
export function registerCompletion(server: HandlerRegistry, session: CompletionContext): void {
  server.setRequestHandler(CompleteRequestSchema, async (request, extra) => {
    const { ref, argument, context } = request.params;
    const exposure = await session.exposure();
    const upstream =
      exposure.kind !== 'aei'
        ? undefined
        : ref.type === 'ref/prompt'
          ? upstreamPrompt(exposure, ref.name)
          : upstreamTemplatesOf(exposure).find((t) => t.uri_template === ref.uri);
    // The exposure's own prompts; no template of its own takes completions: nothing to offer.
    if (exposure.kind !== 'aei' || upstream === undefined) {
      return ref.type === 'ref/prompt' ? completePromptArgument(exposure, ref.name, argument) : NOTHING;
    }
    const { sessionId, requestId } = session.requestOf(extra);
    return askUpstream(
      exposure,
      session.client,
      {
        upstream_server_id: upstream.upstream_server_id,
        request_id: requestId,
        ...(sessionId !== undefined && { session_id: sessionId }),
        complete: {
          ref:
            'upstream_name' in upstream
              ? { type: 'ref/prompt', name: upstream.upstream_name }
              : { type: 'ref/resource', uri: upstream.uri_template },
          argument: { name: argument.name, value: argument.value },
          ...(context?.arguments !== undefined && { context: { arguments: context.arguments } }),
        },
      },
      {
        kind: ref.type === 'ref/prompt' ? 'prompt' : 'resource',
        name: ref.type === 'ref/prompt' ? ref.name : ref.uri,
        schema: CompleteResultSchema,
      },
      extra.signal,
    );
  });
}
