/**
 * One MCP server per session (or per request, for a session another replica opened): the
 * capabilities it declares, each set up by its own module in `capabilities/` (tools, resources,
 * prompts, completion, logging) over one shared session context (`session-context.ts`), as the
 * SDK keeps a registry of handlers per capability.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { registerCompletion } from './capabilities/completion.ts';
import { registerLogging } from './capabilities/logging.ts';
import { registerPrompts } from './capabilities/prompts.ts';
import { registerResourceSubscriptions, registerResources } from './capabilities/resources.ts';
import { registerTools, type ToolHandlers } from './capabilities/tools.ts';
import { sessionContext, type McpServerDeps, type McpSessionContext } from './session-context.ts';
import { inputOf } from './tools/client-input.ts';

/** Who the gateway says it is, in both eras. */
export const SERVER_INFO = { name: 'bindery-gateway', version: '0.1.0' };

/** What the gateway tells a client about itself, in both eras. */
export const INSTRUCTIONS =
  'Tools over JSON data. Every failure comes back as {"error": {code, message, details}}.';

/**
 * One session's MCP server, plus its two hot handlers for the gateway's fast path (plain JSON
 * answers to tools/list and tools/call on a session it holds), which run the very same code as
 * the server's own handlers.
 */
export interface McpEndpoint extends ToolHandlers {
  server: Server;
  listsChanged: McpSessionContext['listsChanged'];
}

/** A fresh low-level MCP server for one session of one exposure. */
export function createMcpServer(deps: McpServerDeps): McpEndpoint {
  const session = sessionContext(deps);
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true, subscribe: true },
      completions: {},
      logging: {},
    },
    instructions: INSTRUCTIONS,
  });
  registerLogging(server, session);
  // A request's tools, prompts and resources may ask the session's client for input.
  const input = inputOf(() => server.getClientCapabilities());
  const tools = registerTools(server, session, input);
  registerPrompts(server, session, input);
  registerResources(server, session, input);
  registerResourceSubscriptions(server, session);
  registerCompletion(server, session);
  return { server, ...tools, listsChanged: session.listsChanged };
}
