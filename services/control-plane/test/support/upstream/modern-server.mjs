// A real MCP server of the 2026-07-28 era only, for tests, written with the v2 SDK's McpServer: run
// as a script it serves stdio; imported, `modernHandler()` gives the web handler for HTTP. Both
// refuse the 2025 era (an `initialize` is answered -32022 with the versions it supports), as a
// modern-only server does. Its tools:
//   shout {text}  -> the text in capitals
//   whoami        -> {pid, era: "modern"}
//   greet_reader  -> asks who reads (input_required: an elicitation), then "Hello {name}"
//   touch_news    -> announces an update of modern://news to the listen streams subscribed to it
//   log_steps {tag} -> notifications/message at debug, info and warning (`<tag>: <level>`), then "logged"
// Its prompt briefing {topic} asks who reads it (and, when the client can sample, for a summary).
// Its resource modern://news can be subscribed to (a listen stream's resourceSubscriptions).
// It writes a line to stderr at start.
import {
  acceptedContent,
  createMcpHandler,
  fromJsonSchema,
  InMemoryServerEventBus,
  inputRequired,
  inputResponse,
  McpServer,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { setTimeout } from 'node:timers';
import { pathToFileURL } from 'node:url';

/** The change events of this process's listen streams (resource updates). */
const bus = new InMemoryServerEventBus();

/** A fresh server (the SDK builds one per request or connection). */
function createModernServer() {
  const server = new McpServer(
    { name: 'bindery-test-modern-upstream', version: '1.0.0' },
    { capabilities: { resources: { subscribe: true }, logging: {} } },
  );
  server.registerResource('news', 'modern://news', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'the news' }],
  }));
  server.registerTool(
    'touch_news',
    { description: 'Announces an update of modern://news.', inputSchema: fromJsonSchema({ type: 'object' }) },
    async () => {
      bus.publish({ kind: 'resource_updated', uri: 'modern://news' });
      return { content: [{ type: 'text', text: 'touched' }] };
    },
  );
  server.registerTool(
    'shout',
    {
      description: 'Answers the text in capitals.',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
      }),
    },
    async (args) => ({ content: [{ type: 'text', text: String(args.text).toUpperCase() }] }),
  );
  server.registerTool(
    'whoami',
    { description: 'This process and its era.', inputSchema: fromJsonSchema({ type: 'object' }) },
    async () => ({
      content: [{ type: 'text', text: JSON.stringify({ pid: process.pid, era: 'modern' }) }],
    }),
  );
  server.registerTool(
    'log_steps',
    {
      description: 'Logs three lines while it runs (for a request that asks for log messages).',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { tag: { type: 'string' } },
        required: ['tag'],
      }),
    },
    async (args, ctx) => {
      for (const level of ['debug', 'info', 'warning']) {
        await ctx.mcpReq.log(level, `${String(args.tag)}: ${level}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return { content: [{ type: 'text', text: 'logged' }] };
    },
  );
  server.registerTool(
    'greet_reader',
    { description: 'Asks who reads, then greets them.', inputSchema: fromJsonSchema({ type: 'object' }) },
    async (_args, ctx) => {
      const who = acceptedContent(ctx.mcpReq.inputResponses, 'who');
      if (typeof who?.name !== 'string') {
        return inputRequired({
          inputRequests: {
            who: inputRequired.elicit({
              message: 'Who reads this?',
              requestedSchema: {
                type: 'object',
                properties: { name: { type: 'string' } },
                required: ['name'],
              },
            }),
          },
        });
      }
      return { content: [{ type: 'text', text: `Hello ${who.name}` }] };
    },
  );
  server.registerPrompt(
    'briefing',
    {
      description: 'A briefing that asks who reads it first.',
      argsSchema: fromJsonSchema({
        type: 'object',
        properties: { topic: { type: 'string' } },
        required: ['topic'],
      }),
    },
    async ({ topic }, ctx) => {
      const who = acceptedContent(ctx.mcpReq.inputResponses, 'who');
      const summary = inputResponse(ctx.mcpReq.inputResponses, 'summary');
      const declared = ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {};
      const sampling = declared.sampling !== undefined;
      const asks = {};
      if (typeof who?.name !== 'string') {
        asks.who = inputRequired.elicit({
          message: 'Who reads the briefing?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        });
      }
      if (sampling && summary.kind !== 'sampling') {
        asks.summary = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: `Summarise ${topic}` } }],
          maxTokens: 50,
        });
      }
      if (Object.keys(asks).length > 0) return inputRequired({ inputRequests: asks });
      const said = summary.kind === 'sampling' ? summary.result.content.text : 'no summary';
      return {
        messages: [
          { role: 'user', content: { type: 'text', text: `Brief ${who.name} on ${topic}: ${said}` } },
        ],
      };
    },
  );
  return server;
}

/** The modern-only HTTP handler (`fetch(request)` answers a web Request). */
export function modernHandler() {
  return createMcpHandler(() => createModernServer(), { legacy: 'reject', bus });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stderr.write(`test modern upstream ${process.pid} starting\n`);
  serveStdio(() => createModernServer(), { legacy: 'reject' });
}
