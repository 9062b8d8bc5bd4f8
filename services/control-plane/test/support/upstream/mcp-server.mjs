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
//   progress {steps, pad?} -> notifications/progress steps times, 20 ms apart (with a progress token;
//                             each message padded to `pad` characters), then answers at once
//   set_tools {extra?: [..], resources?: [..], prompts?: [..]}
//                          -> adds tools named in `extra` (each echoes), resources of the URIs in
//                             `resources` (each a text naming its URI), prompts named in `prompts`
//                             (each without arguments), and announces the lists that changed
// Its resources: test://greeting (text, naming UPSTREAM_TEST_MARKER when set) and test://data.json
// (JSON), plus those named in UPSTREAM_TEST_EXTRA_RESOURCES (comma-separated URIs); an unknown URI
// is refused with -32002. Its prompts: greet {name, required} and summarise {topic}, plus those
// named in UPSTREAM_TEST_EXTRA_PROMPTS; greet without a name is refused with -32602. An extra
// resource whose URI starts with test://missing is listed but refused with -32002 when read. With
// UPSTREAM_TEST_SUBSCRIBE=1 its resources can be subscribed to (it writes "subscribed URI" and
// "unsubscribed URI" to stderr), and the extra tool `touch` {text: URI} (listed with
// UPSTREAM_TEST_EXTRA=touch) sends notifications/resources/updated for it to the subscribers. With
// UPSTREAM_TEST_TEMPLATE=1 it lists the resource template test://items/{id} (and, to be skipped,
// the same again and one that does not parse). With
// UPSTREAM_TEST_CATALOG=none it declares neither resources nor prompts (a tools-only server); with
// UPSTREAM_TEST_CATALOG=fail-again it lists them once, then fails every later resources/list and
// prompts/list.
// With UPSTREAM_TEST_MODE=not-mcp the script writes junk to stdout instead of speaking MCP; with
// UPSTREAM_TEST_MODE=exit it exits at once (a crashing server). It writes a line to stderr at start.
// UPSTREAM_TEST_BAD (comma-separated) makes it list or answer what a careless server might, beside
// its good tools: nul-name, surrogate-name (a tool named with a NUL, with an unpaired surrogate),
// nul-description, nul-annotation (`nul_description`, `nul_annotation`: callable), nul-schema-key
// (`nul_key`: a property named with a NUL), string-schema (`stringy`: input schema {type: string}), tools-nope (`tools: "nope"`),
// malformed-result (`malformed`: answers `content: "nope"`), resources-nope, prompts-nope, and
// bad-resource, bad-prompt (one more resource or prompt that MCP does not allow).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
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
    inputSchema: {
      type: 'object',
      properties: { steps: { type: 'integer' }, pad: { type: 'integer' } },
      required: ['steps'],
    },
  },
  {
    name: 'set_tools',
    description: 'Adds tools (each echoes) and announces the change.',
    inputSchema: {
      type: 'object',
      properties: {
        extra: { type: 'array', items: { type: 'string' } },
        resources: { type: 'array', items: { type: 'string' } },
        prompts: { type: 'array', items: { type: 'string' } },
      },
    },
  },
];

const BASE_RESOURCES = [
  {
    uri: 'test://greeting',
    name: 'greeting',
    title: 'Greeting',
    description: 'A friendly text.',
    mimeType: 'text/plain',
  },
  {
    uri: 'test://data.json',
    name: 'data',
    description: 'Some JSON.',
    mimeType: 'application/json',
    size: 17,
  },
];

const BASE_PROMPTS = [
  {
    name: 'greet',
    title: 'Greet someone',
    description: 'Asks for a greeting.',
    arguments: [{ name: 'name', description: 'who to greet', required: true }],
  },
  { name: 'summarise', description: 'Asks for a summary.', arguments: [{ name: 'topic' }] },
];

/** A server that serves tools only (UPSTREAM_TEST_CATALOG=none). */
const toolsOnly = process.env.UPSTREAM_TEST_CATALOG === 'none';
/** Lists resources and prompts once, then fails (UPSTREAM_TEST_CATALOG=fail-again). */
const failAgain = process.env.UPSTREAM_TEST_CATALOG === 'fail-again';
const listed = { resources: 0, prompts: 0 };
function countListing(list) {
  listed[list] += 1;
  if (failAgain && listed[list] > 1) throw new Error(`${list}/list is broken now`);
}

const listOf = (value) => (value ?? '').split(',').filter((name) => name !== '');

/** The tools beyond the base ones, shared by every server of this process (set_tools). */
const extraTools = new Set((process.env.UPSTREAM_TEST_EXTRA ?? '').split(',').filter((name) => name !== ''));
/** The resources and prompts beyond the base ones, shared like extraTools (set_tools, env). */
const extraResources = new Set(listOf(process.env.UPSTREAM_TEST_EXTRA_RESOURCES));
const extraPrompts = new Set(listOf(process.env.UPSTREAM_TEST_EXTRA_PROMPTS));
const servers = new Set();
/** UPSTREAM_TEST_SUBSCRIBE=1: resources can be subscribed to; the extra tool `touch` announces a change. */
const subscribable = process.env.UPSTREAM_TEST_SUBSCRIBE === '1';
/** Who subscribed to which URI (resources/subscribe), by connection. */
const subscribers = new Map();

/** What this server gets wrong on purpose (UPSTREAM_TEST_BAD). */
const bad = new Set(listOf(process.env.UPSTREAM_TEST_BAD));
const BAD_TOOLS = {
  'nul-name': { name: 'nul\u0000name', description: 'A NUL in its name.', inputSchema: { type: 'object' } },
  'surrogate-name': {
    name: 'lone\ud800name',
    description: 'Half a character in its name.',
    inputSchema: { type: 'object' },
  },
  'nul-description': {
    name: 'nul_description',
    description: 'before\u0000after',
    inputSchema: { type: 'object' },
  },
  'nul-annotation': {
    name: 'nul_annotation',
    description: 'A NUL in its annotations.',
    inputSchema: { type: 'object' },
    annotations: { title: 'x\u0000y', readOnlyHint: true },
  },
  'nul-schema-key': {
    name: 'nul_key',
    description: 'A NUL in a property name.',
    inputSchema: { type: 'object', properties: { 'a\u0000b': { type: 'string' } } },
  },
  'string-schema': { name: 'stringy', description: 'Not an object schema.', inputSchema: { type: 'string' } },
  'malformed-result': {
    name: 'malformed',
    description: 'Answers a result MCP does not allow.',
    inputSchema: { type: 'object' },
  },
};
const badTools = () => Object.entries(BAD_TOOLS).flatMap(([key, tool]) => (bad.has(key) ? [tool] : []));

const text = (value) => ({
  content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }],
});

/** One MCP server with the tools above; `onCrash` is what `crash` does. */
export function createMcpServer(onCrash = () => process.exit(1)) {
  const server = new Server(
    { name: 'bindery-test-upstream', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        ...(!toolsOnly && {
          resources: { listChanged: true, ...(subscribable && { subscribe: true }) },
          prompts: { listChanged: true },
        }),
      },
    },
  );
  servers.add(server);
  server.onclose = () => {
    servers.delete(server);
    for (const set of subscribers.values()) set.delete(server);
  };
  if (subscribable && !toolsOnly) {
    server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      const uri = request.params.uri;
      if (!subscribers.has(uri)) subscribers.set(uri, new Set());
      subscribers.get(uri).add(server);
      process.stderr.write(`subscribed ${uri}\n`);
      return {};
    });
    server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      subscribers.get(request.params.uri)?.delete(server);
      process.stderr.write(`unsubscribed ${request.params.uri}\n`);
      return {};
    });
  }
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    if (bad.has('tools-error-nul')) throw new McpError(ErrorCode.InternalError, 'broken\u0000list');
    return {
      tools: bad.has('tools-nope')
        ? 'nope'
        : [
            ...BASE_TOOLS,
            ...badTools(),
            ...[...extraTools].map((name) => ({
              name,
              description: `Extra tool ${name}.`,
              inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
            })),
          ],
    };
  });
  if (!toolsOnly) {
    server.setRequestHandler(ListResourcesRequestSchema, async () => {
      countListing('resources');
      if (bad.has('resources-nope')) return { resources: 'nope' };
      return {
        resources: [
          ...BASE_RESOURCES,
          ...(bad.has('bad-resource') ? [{ uri: 42, name: 'numbered' }] : []),
          ...[...extraResources].map((uri) => ({ uri, name: uri, mimeType: 'text/plain' })),
        ],
      };
    });
    // UPSTREAM_TEST_TEMPLATE=1: one resource template, test://items/{id}, read as "item {id}".
    if (process.env.UPSTREAM_TEST_TEMPLATE === '1') {
      server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
        resourceTemplates: [
          {
            uriTemplate: 'test://items/{id}',
            name: 'item',
            description: 'One item by id.',
            mimeType: 'text/plain',
          },
          { uriTemplate: 'test://items/{id}', name: 'item-again' },
          { uriTemplate: 'test://broken/{id', name: 'broken' },
        ],
      }));
    }
    server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
      const uri = request.params.uri;
      const item = /^test:\/\/items\/([^/]+)$/.exec(uri);
      if (item && process.env.UPSTREAM_TEST_TEMPLATE === '1') {
        return { contents: [{ uri, mimeType: 'text/plain', text: `item ${item[1]}` }] };
      }
      if (uri === 'test://greeting') {
        const marker = process.env.UPSTREAM_TEST_MARKER;
        const text = `Hello from ${marker ? marker : 'the test upstream'}`;
        return { contents: [{ uri, mimeType: 'text/plain', text }] };
      }
      if (uri === 'test://data.json') {
        return {
          contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ items: [1, 2, 3] }) }],
        };
      }
      if (extraResources.has(uri) && !uri.startsWith('test://missing'))
        return { contents: [{ uri, mimeType: 'text/plain', text: `resource ${uri}` }] };
      throw new McpError(-32002, `Resource ${uri} not found`, { uri });
    });
    server.setRequestHandler(ListPromptsRequestSchema, async () => {
      countListing('prompts');
      if (bad.has('prompts-nope')) return { prompts: 'nope' };
      return {
        prompts: [
          ...BASE_PROMPTS,
          ...(bad.has('bad-prompt') ? [{ name: 'broken', arguments: 'x' }] : []),
          ...[...extraPrompts].map((name) => ({ name, arguments: [] })),
        ],
      };
    });
    server.setRequestHandler(GetPromptRequestSchema, async (request) => {
      const args = request.params.arguments ?? {};
      const say = (text) => ({ role: 'user', content: { type: 'text', text } });
      switch (request.params.name) {
        case 'greet':
          if (typeof args.name !== 'string' || args.name === '')
            throw new McpError(ErrorCode.InvalidParams, 'greet needs a name');
          return { description: 'A greeting', messages: [say(`Please greet ${args.name} warmly.`)] };
        case 'summarise':
          return { messages: [say(`Summarise ${args.topic ?? 'anything'} in one line.`)] };
        default:
          if (extraPrompts.has(request.params.name)) return { messages: [say(request.params.name)] };
          throw new McpError(ErrorCode.InvalidParams, `Prompt ${request.params.name} not found`);
      }
    });
  }
  const callTool = async (request, extra) => {
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
              params: {
                progressToken: token,
                progress: step,
                total: steps,
                message: `step ${step}`.padEnd(Number(args.pad ?? 0), '.'),
              },
            });
          }
          // Between reports, a pause; the last one goes out right before the answer (in one chunk,
          // as a server that reports and answers in the same turn sends them).
          if (step < steps) await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return text(`done after ${steps} steps`);
      }
      case 'fail':
        return { ...text('this tool always fails'), isError: true };
      case 'nul_description':
      case 'nul_annotation':
        return text(`${request.params.name} answered`);
      case 'malformed':
        return { content: 'nope' };
      case 'set_tools': {
        for (const name of args.extra ?? []) extraTools.add(String(name));
        for (const uri of args.resources ?? []) extraResources.add(String(uri));
        for (const name of args.prompts ?? []) extraPrompts.add(String(name));
        const announce = (send) => Promise.all([...servers].map((s) => send(s).catch(() => {})));
        if (args.extra !== undefined || (args.resources === undefined && args.prompts === undefined))
          await announce((s) => s.sendToolListChanged());
        if (args.resources !== undefined && !toolsOnly) await announce((s) => s.sendResourceListChanged());
        if (args.prompts !== undefined && !toolsOnly) await announce((s) => s.sendPromptListChanged());
        return text([...extraTools]);
      }
      default:
        // `touch {uri}` (listed through UPSTREAM_TEST_EXTRA): the resource changed, subscribers hear it.
        if (request.params.name === 'touch' && extraTools.has('touch')) {
          const to = [...(subscribers.get(String(args.text)) ?? [])];
          await Promise.all(to.map((s) => s.sendResourceUpdated({ uri: String(args.text) }).catch(() => {})));
          return text(`told ${to.length}`);
        }
        if (extraTools.has(request.params.name)) return text(`${request.params.name}: ${args.text ?? ''}`);
        throw new Error(`unknown tool ${request.params.name}`);
    }
  };
  // The SDK's Server checks a tools/call result before sending it: a server that answers one it
  // does not allow is registered past that check.
  const register = bad.has('malformed-result')
    ? Protocol.prototype.setRequestHandler
    : Server.prototype.setRequestHandler;
  register.call(server, CallToolRequestSchema, callTool);
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
