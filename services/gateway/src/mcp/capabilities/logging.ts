/**
 * The logging capability: `logging/setLevel` sets the level of the session's log stream
 * (`McpSessionContext.clientLog`; `tools/call-log.ts` says what is sent at which level).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpSessionContext } from '../session-context.ts';

export type LoggingContext = Pick<McpSessionContext, 'clientLog'>;

/** Sets the logging/setLevel handler of `server`: the level holds for this session. */
export function registerLogging(server: Server, session: LoggingContext): void {
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    session.clientLog.level = request.params.level;
    return {};
  });
}
