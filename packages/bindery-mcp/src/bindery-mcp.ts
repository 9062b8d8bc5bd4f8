/**
 * `bindery-mcp [caller] [--check] [--verbose]`: a stdio MCP server for desktop clients that relays
 * to a Bindery gateway (see relay.ts), or with `--check` a few lines on whether the gateway answers
 * and which profile the caller gets. Reads BINDERY_URL and BINDERY_KEY. `bindery-mcp --sidebar`
 * serves one sidebar session of the control plane to an agent instead (sidebar-server.ts).
 */
import { isCallerName } from '@bindery/contracts/entries';
import { parseArgs } from 'node:util';
import { flagError } from './arguments.ts';
import { runCheck } from './check.ts';
import { stderrLogger, type Logger } from './log.ts';
import { Relay } from './relay.ts';
import {
  DEFAULT_CONTROL_PLANE_URL,
  DEFAULT_SIDEBAR_WAIT_MS,
  MAX_SIDEBAR_WAIT_MS,
  SIDEBAR_TOKEN_PREFIX,
  UsageError,
  authHeaders,
  mcpEndpoint,
  readCredentials,
  readSidebarSettings,
  type Credentials,
  type SidebarSettings,
} from './settings.ts';
import { SidebarServer } from './sidebar-server.ts';

const USAGE = `usage: bindery-mcp [caller] [--check] [--verbose]
       bindery-mcp --sidebar [--verbose]

A stdio MCP server relaying to the Bindery gateway. Start it from an MCP client's configuration.

  caller     who is calling (vscode, claude, cursor, ...): with a personal key it picks the
             profile; without one the gateway goes by the client's name, else the default profile
  --check    print whether the gateway answers and which profile the caller gets, then exit
             (0 when both worked, 1 otherwise)
  --sidebar  instead, serve one sidebar session of the control plane to an agent: its commands
             as the tools sidebar_run and sidebar_proposals; reads answer at once, a write waits
             for your verdict in the console
  --verbose  also log debug lines (on stderr)

Environment:
  BINDERY_KEY  a personal MCP key (bnd_pk_..., from POST /api/v2/mcp-keys) or an exposure's api_key
  BINDERY_URL  the gateway (default http://127.0.0.1:4100)

Environment with --sidebar:
  BINDERY_SIDEBAR_SESSION    the session's id (from POST /api/v2/sidebar/sessions)
  BINDERY_SIDEBAR_TOKEN      the session's token (${SIDEBAR_TOKEN_PREFIX}..., shown once when it opens)
  BINDERY_CONTROL_PLANE_URL  the control plane (default ${DEFAULT_CONTROL_PLANE_URL})
  BINDERY_SIDEBAR_WAIT_MS    how long a write waits for your verdict (default ${DEFAULT_SIDEBAR_WAIT_MS},
                             at most ${MAX_SIDEBAR_WAIT_MS}; 0: it answers the pending proposal)
`;

/** The usage lines, for a usage error. */
const SHORT_USAGE = USAGE.slice(0, USAGE.indexOf('\n\n'));

interface Args {
  caller?: string;
  check?: boolean;
  sidebar?: boolean;
  verbose?: boolean;
  help?: boolean;
}

function readArgs(argv: string[]): Args {
  const options = {
    check: { type: 'boolean' },
    sidebar: { type: 'boolean' },
    verbose: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  } as const;
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true });
  } catch (error) {
    throw flagError(
      error,
      (flag) => `unknown option ${flag}`,
      (name) => `--${name} takes no value`,
    );
  }
  const [caller, other] = parsed.positionals;
  if (other !== undefined) throw new UsageError(`one caller only (got "${caller}" and "${other}")`);
  if (caller !== undefined && !isCallerName(caller)) {
    throw new UsageError(
      `"${caller}" is not a caller name: lower-case letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64`,
    );
  }
  if (parsed.values.sidebar && (caller !== undefined || parsed.values.check)) {
    throw new UsageError('--sidebar takes no caller and no --check');
  }
  return { ...parsed.values, ...(caller !== undefined && { caller }) };
}

async function main(): Promise<number> {
  let args: Args;
  let settings: { sidebar: SidebarSettings } | { credentials: Credentials };
  try {
    args = readArgs(process.argv.slice(2));
    if (args.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    settings = args.sidebar
      ? {
          sidebar: readSidebarSettings({
            BINDERY_CONTROL_PLANE_URL: process.env.BINDERY_CONTROL_PLANE_URL,
            BINDERY_SIDEBAR_SESSION: process.env.BINDERY_SIDEBAR_SESSION,
            BINDERY_SIDEBAR_TOKEN: process.env.BINDERY_SIDEBAR_TOKEN,
            BINDERY_SIDEBAR_WAIT_MS: process.env.BINDERY_SIDEBAR_WAIT_MS,
          }),
        }
      : {
          credentials: readCredentials({
            BINDERY_URL: process.env.BINDERY_URL,
            BINDERY_KEY: process.env.BINDERY_KEY,
          }),
        };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(
      `bindery-mcp: ${error.message}\n${SHORT_USAGE}\n       'bindery-mcp --help' tells more\n`,
    );
    return 2;
  }
  if ('sidebar' in settings) {
    const log = stderrLogger('sidebar', args.verbose === true);
    const server = new SidebarServer({ settings: settings.sidebar, log });
    closeOnExit(() => server.close(), log);
    await server.run();
    return 0;
  }

  const { credentials } = settings;
  const log = stderrLogger(args.caller, args.verbose === true);
  if (credentials.warning) log.warning(credentials.warning);
  if (args.check) return runCheck(credentials, args.caller);

  const relay = new Relay({
    endpoint: mcpEndpoint(credentials, args.caller),
    headers: authHeaders(credentials),
    gatewayUrl: credentials.url,
    log,
  });
  closeOnExit(() => relay.close(), log);
  await relay.run();
  return 0;
}

/** A client gone (stdout broken) or a signal: close, then exit 0. */
function closeOnExit(close: () => Promise<void>, log: Logger): void {
  process.stdout.on('error', (error) => {
    log.debug(`stdout: ${error.message}`);
    void close().then(() => process.exit(0));
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log.debug(`${signal}: closing`);
      void close().then(() => process.exit(0));
    });
  }
}

const code = await main();
// stdout is flushed first: the last answers must not be cut off.
process.stdout.write('', () => process.exit(code));
