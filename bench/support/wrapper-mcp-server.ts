/**
 * The in-run reference of the HTTP tool benchmark: a hand-written MCP server wrapping the benchmark's
 * JSON API (support/json-api.ts at API_URL, key API_KEY) the way the SDK's stateless example does: a
 * new McpServer and transport for every request, one `get_item` tool doing one `fetch` per call.
 * Prints "Server listening at <url>" like the services.
 *   API_URL=... API_KEY=... tsx support/wrapper-mcp-server.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

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

const http = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    const body: unknown = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res, body))
      .catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
  });
});
http.listen(0, '127.0.0.1', () => {
  const { port } = http.address() as AddressInfo;
  console.log(`Server listening at http://127.0.0.1:${port}`);
});
process.on('SIGTERM', () => http.close(() => process.exit(0)));
