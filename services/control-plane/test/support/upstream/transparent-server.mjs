// A real MCP server for the transparency tests, written with the MCP SDK's low-level Server (raw
// JSON Schemas, as servers built with other tools emit them): run as a script it serves stdio;
// imported, `createTransparentServer()` gives one server for an HTTP transport. What it offers:
// - tools whose schemas declare each JSON Schema dialect a server may use:
//     lookup {id, limit?}  draft-07 (`definitions`, `$ref`, vendor keywords, an unknown format)
//     sum {a, b}           2019-09 (`$defs`, `$ref`, `unevaluatedProperties`), with an output schema
//     below {n}            draft-04 (boolean `exclusiveMaximum`: n < 10)
//     odd                  a `$schema` no dialect has: Bindery cannot use it
//   and an MCP App tool, show_dashboard, with a title, icons, annotations, an output schema and
//   `_meta.ui.resourceUri` naming its `ui://` resource;
// - the resource ui://dashboard/main.html (an MCP App's HTML, `text/html;profile=mcp-app`, with
//   `_meta.ui` on its listing and its contents) and the template weather://forecast/{city};
// - the prompt plan {city} (with icons and `_meta`);
// - completions for plan's `city` and the template's `city`, from CITIES;
// - tools that ask their client while they run (2025-era server-to-client requests, sent on the
//   call's own stream): ask_name (elicitation/create), ask_model (sampling/createMessage),
//   list_roots (roots/list), ask_twice (two elicitations, one after the other). Each answers what
//   it was told, or `could not ask: <error>` when the client refused; a call cancelled by its
//   client writes `cancelled <tool>` to stderr;
// - log_steps {tag}: sends notifications/message at debug, info and warning (data `<tag>: <level>`),
//   a few milliseconds apart, on the call's stream, then answers `logged`.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { setTimeout } from 'node:timers';
import { pathToFileURL } from 'node:url';

export const CITIES = ['Paris', 'Pau', 'Perth', 'Lima', 'Lyon'];

const ICON = { src: 'data:image/svg+xml;base64,PHN2Zy8+', mimeType: 'image/svg+xml', sizes: ['any'] };
export const APP_URI = 'ui://dashboard/main.html';
const APP_MIME = 'text/html;profile=mcp-app';
const APP_META = { ui: { prefersBorder: true, csp: { connectDomains: [] } } };
export const APP_HTML = '<!doctype html><html><body><h1>Dashboard</h1></body></html>';

export const TOOLS = [
  {
    name: 'lookup',
    description: 'Looks an id up (a draft-07 schema, as zod-to-json-schema writes them).',
    inputSchema: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      definitions: { id: { type: 'string', pattern: '^[a-z]+$', 'x-vendor-hint': 'lowercase' } },
      properties: {
        id: { $ref: '#/definitions/id' },
        limit: { type: 'integer', minimum: 1, maximum: 50, format: 'page-size' },
      },
      required: ['id'],
      additionalProperties: false,
      'x-generator': 'zod-to-json-schema',
    },
  },
  {
    name: 'sum',
    description: 'Adds two numbers (a 2019-09 schema).',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      type: 'object',
      $defs: { n: { type: 'number' } },
      properties: { a: { $ref: '#/$defs/n' }, b: { $ref: '#/$defs/n' } },
      required: ['a', 'b'],
      unevaluatedProperties: false,
    },
    outputSchema: {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      type: 'object',
      properties: { sum: { type: 'number' } },
      required: ['sum'],
    },
  },
  {
    name: 'below',
    description: 'Takes a number under ten (a draft-04 schema).',
    inputSchema: {
      $schema: 'http://json-schema.org/draft-04/schema#',
      type: 'object',
      properties: { n: { type: 'number', maximum: 10, exclusiveMaximum: true } },
      required: ['n'],
    },
  },
  {
    name: 'odd',
    description: 'Declares a dialect nobody knows.',
    inputSchema: { $schema: 'https://example.test/my-own-dialect', type: 'object' },
  },
  {
    name: 'log_steps',
    description: 'Logs three lines while it runs.',
    inputSchema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
  },
  ...['ask_name', 'ask_model', 'list_roots', 'ask_twice'].map((name) => ({
    name,
    description: `Asks its client while it runs (${name}).`,
    inputSchema: { type: 'object', properties: {} },
  })),
  {
    name: 'show_dashboard',
    title: 'Show the dashboard',
    description: 'Shows the dashboard (an MCP App).',
    icons: [ICON],
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', properties: { shown: { type: 'boolean' } }, required: ['shown'] },
    annotations: { readOnlyHint: true, openWorldHint: false },
    _meta: { ui: { resourceUri: APP_URI }, 'com.example/tracking': { team: 'ops' } },
  },
];

const PROMPT = {
  name: 'plan',
  title: 'Plan a trip',
  description: 'Plans a trip to a city.',
  icons: [ICON],
  arguments: [{ name: 'city', description: 'Where to', required: true }],
  _meta: { 'com.example/category': 'travel' },
};

const TEMPLATE = {
  uriTemplate: 'weather://forecast/{city}',
  name: 'forecast',
  title: 'Forecast',
  mimeType: 'text/plain',
  annotations: { audience: ['user'], priority: 0.5 },
};

function completions(value) {
  const values = CITIES.filter((city) => city.toLowerCase().startsWith(value.toLowerCase()));
  return { completion: { values, total: values.length, hasMore: false } };
}

const NAME_FORM = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

/** Asks the client on the call's own stream; the error's message when the client refuses. */
async function asked(extra, method, params, schema) {
  try {
    return { answer: await extra.sendRequest({ method, params }, schema) };
  } catch (error) {
    return { error: `could not ask: ${error.message}` };
  }
}

const said = (text) => ({ content: [{ type: 'text', text }] });

async function callTool(name, args, extra) {
  // A call its client gave up is said on stderr (what the tests read back through the server's log).
  extra.signal.addEventListener('abort', () => process.stderr.write(`cancelled ${name}\n`), { once: true });
  switch (name) {
    case 'log_steps': {
      for (const level of ['debug', 'info', 'warning']) {
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level, logger: 'fixture', data: `${args.tag}: ${level}` },
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return said('logged');
    }
    case 'ask_name': {
      const { answer, error } = await asked(
        extra,
        'elicitation/create',
        { message: 'What is your name?', requestedSchema: NAME_FORM },
        ElicitResultSchema,
      );
      if (error) return said(error);
      return said(answer.action === 'accept' ? `Hello ${answer.content.name}` : `no name (${answer.action})`);
    }
    case 'ask_model': {
      const { answer, error } = await asked(
        extra,
        'sampling/createMessage',
        { messages: [{ role: 'user', content: { type: 'text', text: 'Name a colour' } }], maxTokens: 10 },
        CreateMessageResultSchema,
      );
      return said(error ?? `the model said ${answer.content.text}`);
    }
    case 'list_roots': {
      const { answer, error } = await asked(extra, 'roots/list', {}, ListRootsResultSchema);
      return said(error ?? `roots: ${answer.roots.map((root) => root.uri).join(' ')}`);
    }
    case 'ask_twice': {
      const first = await asked(
        extra,
        'elicitation/create',
        { message: 'First name?', requestedSchema: NAME_FORM },
        ElicitResultSchema,
      );
      if (first.error) return said(first.error);
      const second = await asked(
        extra,
        'elicitation/create',
        { message: 'Last name?', requestedSchema: NAME_FORM },
        ElicitResultSchema,
      );
      if (second.error) return said(second.error);
      return said(`${first.answer.content?.name} ${second.answer.content?.name}`);
    }
    case 'lookup':
      return { content: [{ type: 'text', text: `found ${args.id} (limit ${args.limit ?? 'none'})` }] };
    case 'sum':
      return {
        content: [{ type: 'text', text: String(args.a + args.b) }],
        structuredContent: { sum: args.a + args.b },
      };
    case 'below':
      return { content: [{ type: 'text', text: `${args.n} is below ten` }] };
    case 'odd':
      return { content: [{ type: 'text', text: 'odd' }] };
    case 'show_dashboard':
      return { content: [{ type: 'text', text: 'shown' }], structuredContent: { shown: true } };
    default:
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  }
}

export function createTransparentServer() {
  const server = new Server(
    { name: 'transparent-fixture', version: '1.0.0' },
    { capabilities: { tools: {}, resources: {}, prompts: {}, completions: {}, logging: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    callTool(request.params.name, request.params.arguments ?? {}, extra),
  );
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      {
        uri: APP_URI,
        name: 'dashboard',
        title: 'Dashboard',
        mimeType: APP_MIME,
        icons: [ICON],
        _meta: APP_META,
      },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [TEMPLATE] }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    const { uri } = request.params;
    if (uri === APP_URI) {
      return { contents: [{ uri, mimeType: APP_MIME, text: APP_HTML, _meta: APP_META }] };
    }
    const city = /^weather:\/\/forecast\/([^/]+)$/.exec(uri)?.[1];
    if (city)
      return { contents: [{ uri, mimeType: 'text/plain', text: `Sunny in ${decodeURIComponent(city)}` }] };
    throw new McpError(-32002, `no resource ${uri}`);
  });
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: [PROMPT] }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => ({
    description: PROMPT.description,
    messages: [
      {
        role: 'user',
        content: { type: 'text', text: `Plan three days in ${request.params.arguments?.city}` },
      },
    ],
  }));
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const { ref, argument } = request.params;
    const known =
      (ref.type === 'ref/prompt' && ref.name === 'plan') ||
      (ref.type === 'ref/resource' && ref.uri === TEMPLATE.uriTemplate);
    if (!known || argument.name !== 'city')
      throw new McpError(ErrorCode.InvalidParams, 'nothing to complete');
    return completions(argument.value);
  });
  return server;
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  await createTransparentServer().connect(new StdioServerTransport());
}
