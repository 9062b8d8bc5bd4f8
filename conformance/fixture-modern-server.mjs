/**
 * The conformance suite's prompt that asks its client for input (`test_input_required_result_prompt`,
 * MCP 2026-07-28 MRTR), as an upstream server of the modern era (the v2 SDK, stdio) that a Bindery
 * exposure attaches without a prefix: Bindery relays its input_required to the agent and the
 * agent's answers back to it (its requestState wrapped in Bindery's own, signed).
 */
import { McpServer, acceptedContent, inputRequired } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const CONTEXT_SCHEMA = {
  type: 'object',
  properties: { context: { type: 'string' } },
  required: ['context'],
};

function createServer() {
  const server = new McpServer({ name: 'bindery-conformance-modern-fixtures', version: '1.0.0' });
  server.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'A prompt that asks the user for its context first' },
    async (ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_context');
      if (typeof answer?.context !== 'string') {
        return inputRequired({
          inputRequests: {
            user_context: inputRequired.elicit({
              message: 'What context should the prompt use?',
              requestedSchema: CONTEXT_SCHEMA,
            }),
          },
        });
      }
      return {
        messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${answer.context}` } }],
      };
    },
  );
  return server;
}

serveStdio(() => createServer(), { legacy: 'reject' });
