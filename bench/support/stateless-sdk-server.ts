/**
 * Serves MCP over HTTP the way the SDK's stateless example does: a new server (from `mcpServer`)
 * and transport for every request, JSON answers. Listens on a free loopback port and prints
 * "Server listening at <url>" like the services; SIGTERM closes it. The benchmarks' references
 * (naive-mcp-server.ts, wrapper-mcp-server.ts) differ only in the server they make.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export function serveStateless(mcpServer: () => McpServer): void {
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
}
