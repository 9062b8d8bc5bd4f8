/**
 * `bindery <command>`: the tools of a Bindery profile from a shell or a script. Tools go through
 * the gateway's REST entry; resources and prompts through its MCP entry (the endpoint
 * `bindery-mcp` relays to). Reads BINDERY_URL and BINDERY_KEY. Output is plain and stable:
 * tab-separated lists, JSON results. Exit codes: 0 success, 1 a tool's or the gateway's error
 * (on stderr), 2 a usage error (with a short usage, on stderr).
 */
import { isCallerName } from '@bindery/contracts/entries';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { parseArgs } from 'node:util';
import { closeMatches, describeArguments, parseStringFlags, parseToolFlags } from './arguments.ts';
import { GatewayError, RestClient, type RestTool } from './rest.ts';
import {
  UsageError,
  authHeaders,
  mcpEndpoint,
  networkReason,
  readCredentials,
  type Credentials,
} from './settings.ts';

const USAGE = `usage: bindery [--caller <name>] <command> [arguments]

Commands:
  tools                            the tools: name<TAB>first line of its description
  help <tool>                      a tool's description and arguments
  call <tool> [--name value ...]   calls a tool and prints its result as JSON; arguments are typed
                                   by the tool's input schema (arrays: repeat the flag or give a
                                   JSON array; objects: JSON); --json '{...}' gives them all at once
  resources                        the resources: uri<TAB>name
  read <uri>                       a resource's contents (JSON pretty-printed)
  prompts                          the prompts: name<TAB>first line of its description
  prompt <name> [--arg value ...]  a prompt's messages, as JSON

Options (before the command):
  --caller <name>  with a personal key: whose profile (vscode, claude, ...); default: your default profile
  --help           this text

Environment:
  BINDERY_KEY  a personal MCP key (bnd_pk_..., from POST /api/v2/mcp-keys) or an exposure's api_key
  BINDERY_URL  the gateway (default http://127.0.0.1:4100)

Exit codes: 0 success, 1 a tool's or the gateway's error, 2 a usage error.
`;

const SHORT_USAGE =
  'usage: bindery [--caller <name>] <tools | help <tool> | call <tool> ... | resources | read <uri> | prompts | prompt <name> ...>\n' +
  "       'bindery --help' tells more\n";

const COMMANDS = ['tools', 'help', 'call', 'resources', 'read', 'prompts', 'prompt'];

/** A printed outcome: what goes to stdout, and the exit code. */
type Outcome = number;

const out = (text: string) => process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
const firstLine = (text: string | undefined) => (text ?? '').split('\n', 1)[0]!.trim();

/** The options before the command. */
const OPTIONS = { caller: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

async function main(argv: string[]): Promise<Outcome> {
  let caller: string | undefined;
  const setCaller = (value: string | undefined) => {
    if (value === undefined || value === '') throw new UsageError('--caller needs a name');
    if (!isCallerName(value)) {
      throw new UsageError(
        `"${value}" is not a caller name: lower-case letters, digits, ".", "_" and "-", starting with a letter or digit`,
      );
    }
    caller = value;
  };
  // parseArgs (not strict) reads past the command, into the flags of call and prompt: its tokens
  // tell where the command is. Commands without flags of their own take --caller after it too.
  const { tokens } = parseArgs({ args: argv, options: OPTIONS, strict: false, tokens: true });
  const at = tokens.find((token) => token.kind === 'positional')?.index ?? argv.length;
  const command = argv[at];
  const flagged = command === 'call' || command === 'prompt';
  const rest = flagged ? argv.slice(at + 1) : [];
  for (const token of tokens) {
    if (token.index === at || (flagged && token.index > at) || token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') rest.push(token.value);
    else if (token.name === 'caller') setCaller(token.value);
    else if (token.name !== 'help') throw new UsageError(`unknown option ${argv[token.index]}`);
    else {
      out(USAGE);
      return 0;
    }
  }
  if (command === undefined) {
    out(USAGE);
    return 2;
  }
  if (!COMMANDS.includes(command)) {
    const close = closeMatches(command, COMMANDS);
    throw new UsageError(
      `unknown command "${command}"${close.length > 0 ? `; did you mean ${close.join(' or ')}?` : ''}`,
    );
  }
  if (command === 'help' && rest.length === 0) {
    out(USAGE);
    return 0;
  }

  const credentials = readCredentials({
    BINDERY_URL: process.env.BINDERY_URL,
    BINDERY_KEY: process.env.BINDERY_KEY,
  });
  if (credentials.warning) process.stderr.write(`bindery: ${credentials.warning}\n`);
  if (caller !== undefined && !credentials.personal) {
    process.stderr.write(
      "bindery: --caller applies to personal keys only; an exposure's api_key has one profile\n",
    );
  }
  const restClient = new RestClient(credentials, caller);
  const exactly = (count: number, what: string) => {
    if (rest.length !== count) throw new UsageError(`${command} takes ${what}`);
  };

  switch (command) {
    case 'tools': {
      exactly(0, 'no arguments');
      const { tools } = await restClient.tools();
      out(tools.map((tool) => `${tool.name}\t${firstLine(tool.description)}`).join('\n'));
      return 0;
    }
    case 'help': {
      exactly(1, 'one tool name');
      const tool = await findTool(restClient, rest[0]!);
      out(toolHelp(tool));
      return 0;
    }
    case 'call': {
      const [name, ...flags] = rest;
      if (name === undefined || name.startsWith('--')) throw new UsageError('call needs a tool name first');
      const tool = await findTool(restClient, name);
      const parsed = parseToolFlags(name, flags, tool.input_schema);
      const answer = await restClient.callTool(name, parsed.json ?? parsed.values);
      if (answer.ok) {
        out(JSON.stringify(answer.result ?? null, null, 2));
        return 0;
      }
      process.stderr.write(
        `${answer.error?.code ?? 'ERROR'}: ${answer.error?.message ?? 'the tool failed'}\n`,
      );
      return 1;
    }
    case 'resources': {
      exactly(0, 'no arguments');
      const lines = await overMcp(credentials, caller, async (client) => {
        const found: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listResources(cursor === undefined ? {} : { cursor });
          for (const resource of page.resources) found.push(`${resource.uri}\t${resource.name}`);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return found;
      });
      out(lines.join('\n'));
      return 0;
    }
    case 'read': {
      exactly(1, 'one resource URI');
      const contents = await overMcp(credentials, caller, async (client) =>
        client.readResource({ uri: rest[0]! }).then((r) => r.contents),
      );
      for (const content of contents) {
        if ('text' in content && typeof content.text === 'string') {
          out(isJsonType(content.mimeType) ? prettyJson(content.text) : content.text);
        } else if ('blob' in content && typeof content.blob === 'string') {
          process.stdout.write(Buffer.from(content.blob, 'base64'));
        }
      }
      return 0;
    }
    case 'prompts': {
      exactly(0, 'no arguments');
      const lines = await overMcp(credentials, caller, async (client) => {
        const found: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listPrompts(cursor === undefined ? {} : { cursor });
          for (const prompt of page.prompts) found.push(`${prompt.name}\t${firstLine(prompt.description)}`);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return found;
      });
      out(lines.join('\n'));
      return 0;
    }
    case 'prompt': {
      const [name, ...flags] = rest;
      if (name === undefined || name.startsWith('--'))
        throw new UsageError('prompt needs a prompt name first');
      const args = parseStringFlags(flags);
      const messages = await overMcp(credentials, caller, async (client) =>
        client.getPrompt({ name, arguments: args }).then((r) => r.messages),
      );
      out(JSON.stringify(messages, null, 2));
      return 0;
    }
  }
  return 2;
}

async function findTool(client: RestClient, name: string): Promise<RestTool> {
  const { tools } = await client.tools();
  const tool = tools.find((t) => t.name === name);
  if (tool) return tool;
  const close = closeMatches(
    name,
    tools.map((t) => t.name),
  );
  throw new UsageError(
    `unknown tool "${name}"${close.length > 0 ? `; did you mean ${close.join(', ')}?` : ''} ('bindery tools' lists them)`,
  );
}

function toolHelp(tool: RestTool): string {
  const lines = [tool.name, ''];
  const description = (tool.description ?? '').trim();
  if (description !== '') lines.push(description, '');
  const args = describeArguments(tool.input_schema);
  if (args.length === 0) {
    lines.push('Arguments: none');
    return lines.join('\n');
  }
  lines.push('Arguments:');
  const width = Math.max(...args.map((a) => a.name.length)) + 2;
  for (const arg of args) {
    const facts = [arg.type, arg.required ? 'required' : 'optional'];
    if (arg.default !== undefined) facts.push(`default ${JSON.stringify(arg.default)}`);
    lines.push(`  --${arg.name.padEnd(width)}${facts.join(', ')}`);
    for (const line of (arg.description ?? '').trim().split('\n')) {
      if (line.trim() !== '') lines.push(`  ${' '.repeat(width + 2)}${line.trim()}`);
    }
  }
  return lines.join('\n');
}

function isJsonType(mimeType: string | undefined): boolean {
  return mimeType !== undefined && /^application\/(?:[\w.-]+\+)?json\b/.test(mimeType);
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** Runs `work` in an MCP session with the endpoint `bindery-mcp` relays to, then closes it. */
async function overMcp<T>(
  credentials: Credentials,
  caller: string | undefined,
  work: (client: Client) => Promise<T>,
): Promise<T> {
  const transport = new StreamableHTTPClientTransport(mcpEndpoint(credentials, caller), {
    requestInit: { headers: authHeaders(credentials) },
  });
  const client = new Client({ name: 'bindery-cli', version: '1.0.0' });
  try {
    await client.connect(transport);
    return await work(client);
  } catch (error) {
    throw mcpFailure(credentials, error);
  } finally {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      transport.terminateSession().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 1_000);
      }),
    ]);
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}

/** An MCP failure as a GatewayError with a message fit for stderr. */
function mcpFailure(credentials: Credentials, error: unknown): Error {
  if (error instanceof McpError) return new GatewayError(error.message);
  if (error instanceof StreamableHTTPError) {
    // The transport folds the gateway's JSON-RPC error body into its message.
    const brace = error.message.indexOf('{');
    if (brace !== -1) {
      try {
        const body = JSON.parse(error.message.slice(brace)) as { error?: { message?: unknown } };
        if (typeof body.error?.message === 'string') {
          return new GatewayError(
            `the gateway refused (HTTP ${error.code}): ${body.error.message}`,
            error.code,
          );
        }
      } catch {
        // not JSON: the message as it is
      }
    }
    return new GatewayError(error.message, error.code);
  }
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  if (error instanceof TypeError && cause !== undefined) {
    return new GatewayError(
      `the Bindery gateway at ${credentials.url} is unreachable (${networkReason(error)})`,
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

let code: number;
try {
  code = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`bindery: ${error.message}\n${SHORT_USAGE}`);
    code = 2;
  } else if (error instanceof GatewayError) {
    process.stderr.write(`bindery: ${error.message}\n`);
    code = 1;
  } else {
    process.stderr.write(`bindery: ${error instanceof Error ? error.message : String(error)}\n`);
    code = 1;
  }
}
process.stdout.write('', () => process.exit(code));
