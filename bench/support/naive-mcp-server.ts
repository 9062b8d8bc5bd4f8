/**
 * The in-run reference of the hot-path benchmark: the simplest MCP server the SDK makes, stateless,
 * a new McpServer and transport for every request (as the SDK's stateless example does), answering
 * one `echo` tool from memory, no database. Prints "Server listening at <url>" like the services.
 *   tsx support/naive-mcp-server.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'naive', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Answers its arguments', inputSchema: { query: z.string() } },
    async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
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
