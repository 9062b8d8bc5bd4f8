// A real MCP server of the 2026-07-28 era, for tests, written with the v2 SDK's McpServer, whose
// tools mark arguments to be mirrored into HTTP headers (x-mcp-header, SEP-2243). The SDK's HTTP
// handler refuses a tools/call whose Mcp-Param-* headers are missing or do not match (400,
// -32020), so a call it answers proves its client sent them. Its tools:
//   route_query {region (Mcp-Param-Region), rows? (Mcp-Param-Rows), dry? (Mcp-Param-Dry), query}
//     -> "region=<region> rows=<rows> dry=<dry> query=<query>", and the Mcp-Param-* headers it was sent
//   bad_mark {level (a number marked Mcp-Param-Level)} -> a mark the spec forbids (numbers)
//   plain {text} -> the text
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server';

function createHeaderParamsServer(seen) {
  const server = new McpServer({ name: 'bindery-test-header-params', version: '1.0.0' });
  server.registerTool(
    'route_query',
    {
      description: 'Runs a query in a region (the region routes by its header).',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: {
          region: { type: 'string', 'x-mcp-header': 'Region' },
          query: { type: 'string' },
          options: {
            type: 'object',
            properties: {
              rows: { type: 'integer', 'x-mcp-header': 'Rows' },
              dry: { type: 'boolean', 'x-mcp-header': 'Dry' },
            },
          },
        },
        required: ['query'],
      }),
    },
    async (args) => {
      return {
        content: [
          {
            type: 'text',
            text: `region=${args.region} rows=${args.options?.rows} dry=${args.options?.dry} query=${args.query}`,
          },
        ],
        // The Mcp-Param-* headers this request came with, as the handler saw them.
        structuredContent: { headers: seen.params ?? {} },
      };
    },
  );
  server.registerTool(
    'bad_mark',
    {
      description: 'Marks a number, which the spec forbids.',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { level: { type: 'number', 'x-mcp-header': 'Level' } },
      }),
    },
    async (args) => ({ content: [{ type: 'text', text: `level ${args.level}` }] }),
  );
  server.registerTool(
    'plain',
    {
      description: 'Answers the text.',
      inputSchema: fromJsonSchema({ type: 'object', properties: { text: { type: 'string' } } }),
    },
    async (args) => ({ content: [{ type: 'text', text: String(args.text) }] }),
  );
  return server;
}

/** The HTTP handler (`fetch(request)` answers a web Request), for one request at a time. */
export function headerParamsHandler() {
  const seen = {};
  const handler = createMcpHandler(() => createHeaderParamsServer(seen), { legacy: 'reject' });
  return {
    async fetch(request) {
      const params = {};
      for (const [name, value] of request.headers) if (name.startsWith('mcp-param-')) params[name] = value;
      seen.params = params;
      return handler.fetch(request);
    },
    close: () => handler.close(),
  };
}
