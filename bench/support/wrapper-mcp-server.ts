/**
 * The in-run reference of the HTTP tool benchmark: a hand-written MCP server wrapping the benchmark's
 * JSON API (support/json-api.ts at API_URL, key API_KEY) the way the SDK's stateless example does: a
 * new McpServer and transport for every request, one `get_item` tool doing one `fetch` per call.
 * Prints "Server listening at <url>" like the services.
 *   API_URL=... API_KEY=... tsx support/wrapper-mcp-server.ts
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { serveStateless } from './stateless-sdk-server.ts';

const API_URL = process.env.API_URL ?? '';
const API_KEY = process.env.API_KEY ?? '';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'wrapper', version: '1.0.0' });
  server.registerTool(
    'get_item',
    { description: 'One item of the API', inputSchema: { id: z.string(), q: z.string().optional() } },
    async ({ id, q }) => {
      const url = new URL(`${API_URL}/items/${encodeURIComponent(id)}`);
      if (q !== undefined) url.searchParams.set('q', q);
      const res = await fetch(url, { headers: { 'x-api-key': API_KEY, accept: 'application/json' } });
      const item = (await res.json()) as Record<string, unknown>;
      return {
        isError: !res.ok,
        content: [{ type: 'text', text: JSON.stringify(item) }],
        structuredContent: item,
      };
    },
  );
  return server;
}

serveStateless(mcpServer);
