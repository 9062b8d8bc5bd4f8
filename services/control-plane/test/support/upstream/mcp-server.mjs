// A real MCP server for tests, written with the MCP SDK's low-level Server (raw JSON Schemas, no
// zod): run as a script it serves stdio; imported, `createMcpServer()` gives one server for an
// HTTP transport. Its tools:
//   echo {text, stderr?}   -> the text (first writing `stderr`, when given, to stderr)
//   add {a, b}             -> structuredContent {sum}, with an output schema
//   whoami                 -> {pid, marker} (this process and the UPSTREAM_TEST_MARKER env value): counts processes
//   slow {ms}              -> answers after ms
//   hang                   -> never answers (writes `hang cancelled` to stderr when cancelled)
//   crash                  -> the process exits at once (stdio) / the session is dropped (HTTP)
//   fail                   -> an isError result
//   progress {steps}       -> notifications/progress steps times (with a progress token), then answers
//   set_tools {extra: [..]}-> adds tools named in `extra` (each echoes) and announces list_changed
// With UPSTREAM_TEST_MODE=not-mcp the script writes junk to stdout instead of speaking MCP; with
// UPSTREAM_TEST_MODE=exit it exits at once (a crashing server). It writes a line to stderr at start.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { setInterval, setTimeout } from 'node:timers';
import { pathToFileURL } from 'node:url';

const BASE_TOOLS = [
  {
    name: 'echo',
    title: 'Echo',
    description: 'Answers the text it is given.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'add',
    description: 'Adds two numbers.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
    outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
  },
  { name: 'whoami', description: 'This process and its marker.', inputSchema: { type: 'object' } },
  {
    name: 'slow',
    description: 'Answers after a while.',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] },
  },
  { name: 'hang', description: 'Never answers.', inputSchema: { type: 'object' } },
  { name: 'crash', description: 'Exits the process.', inputSchema: { type: 'object' } },
  { name: 'fail', description: 'Answers a tool error.', inputSchema: { type: 'object' } },
  {
    name: 'progress',
    description: 'Reports progress `steps` times (when asked with a progress token), then answers.',
    inputSchema: { type: 'object', properties: { steps: { type: 'integer' } }, required: ['steps'] },
  },
  {
    name: 'set_tools',
    description: 'Adds tools (each echoes) and announces the change.',
    inputSchema: { type: 'object', properties: { extra: { type: 'array', items: { type: 'string' } } } },
  },
];

/** The tools beyond the base ones, shared by every server of this process (set_tools). */
const extraTools = new Set((process.env.UPSTREAM_TEST_EXTRA ?? '').split(',').filter((name) => name !== ''));
const servers = new Set();

const text = (value) => ({
  content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }],
});

/** One MCP server with the tools above; `onCrash` is what `crash` does. */
export function createMcpServer(onCrash = () => process.exit(1)) {
  const server = new Server(
    { name: 'bindery-test-upstream', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true } } },
  );
  servers.add(server);
  server.onclose = () => servers.delete(server);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      ...BASE_TOOLS,
      ...[...extraTools].map((name) => ({
        name,
        description: `Extra tool ${name}.`,
        inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      })),
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'echo':
        if (typeof args.stderr === 'string') {
          process.stderr.write(`${args.stderr}\n`);
          // The line travels on another pipe than the answer: give it time to arrive first.
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return text(String(args.text));
      case 'add': {
        const sum = Number(args.a) + Number(args.b);
        return { content: [{ type: 'text', text: JSON.stringify({ sum }) }], structuredContent: { sum } };
      }
      case 'whoami':
        return text({ pid: process.pid, marker: process.env.UPSTREAM_TEST_MARKER ?? null });
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, Number(args.ms)));
        return text(`slept ${args.ms}`);
      case 'hang':
        return new Promise((_resolve, reject) => {
          extra.signal.addEventListener('abort', () => {
            // Tests read this line back to see a cancellation arrive (stdio: through the logs API).
            process.stderr.write(`hang cancelled: ${String(extra.signal.reason)}\n`);
            reject(new Error('cancelled'));
          });
        });
      case 'crash':
        onCrash();
        return new Promise(() => {});
      case 'progress': {
        const token = request.params._meta?.progressToken;
        const steps = Number(args.steps);
        for (let step = 1; step <= steps; step++) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: step, total: steps, message: `step ${step}` },
            });
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return text(`done after ${steps} steps`);
      }
      case 'fail':
        return { ...text('this tool always fails'), isError: true };
      case 'set_tools': {
        for (const name of args.extra ?? []) extraTools.add(String(name));
        await Promise.all([...servers].map((s) => s.sendToolListChanged().catch(() => {})));
        return text([...extraTools]);
      }
      default:
        if (extraTools.has(request.params.name)) return text(`${request.params.name}: ${args.text ?? ''}`);
        throw new Error(`unknown tool ${request.params.name}`);
    }
  });
  return server;
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const mode = process.env.UPSTREAM_TEST_MODE;
  process.stderr.write(`test upstream ${process.pid} starting (${mode ?? 'mcp'})\n`);
  if (mode === 'exit') process.exit(3);
  if (mode === 'not-mcp') {
    process.stdout.write('this is not JSON-RPC\n');
    setInterval(() => process.stdout.write('still not JSON-RPC\n'), 200);
  } else {
    await createMcpServer().connect(new StdioServerTransport());
  }
}
