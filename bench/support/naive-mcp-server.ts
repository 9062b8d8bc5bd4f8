/**
 * The in-run reference of the hot-path benchmark: the simplest MCP server the SDK makes, stateless,
 * a new McpServer and transport for every request (as the SDK's stateless example does), answering
 * one `echo` tool from memory, no database. Prints "Server listening at <url>" like the services.
 *   tsx support/naive-mcp-server.ts
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { serveStateless } from './stateless-sdk-server.ts';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'naive', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Answers its arguments', inputSchema: { query: z.string() } },
    async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
  );
  return server;
}

serveStateless(mcpServer);
