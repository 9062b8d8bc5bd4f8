/**
 * `bindery-mcp [caller] [--check] [--verbose]`: a stdio MCP server for desktop clients that relays
 * to a Bindery gateway (see relay.ts), or with `--check` a few lines on whether the gateway answers
 * and which profile the caller gets. Reads BINDERY_URL and BINDERY_KEY.
 */
import { isCallerName } from '@bindery/contracts/entries';
import { parseArgs } from 'node:util';
import { flagError } from './arguments.ts';
import { runCheck } from './check.ts';
import { stderrLogger } from './log.ts';
import { Relay } from './relay.ts';
import { UsageError, authHeaders, mcpEndpoint, readCredentials } from './settings.ts';

const USAGE = `usage: bindery-mcp [caller] [--check] [--verbose]

A stdio MCP server relaying to the Bindery gateway. Start it from an MCP client's configuration.

  caller     who is calling (vscode, claude, cursor, ...): with a personal key it picks the
             profile; without one the gateway goes by the client's name, else the default profile
  --check    print whether the gateway answers and which profile the caller gets, then exit
             (0 when both worked, 1 otherwise)
  --verbose  also log debug lines (on stderr)

Environment:
  BINDERY_KEY  a personal MCP key (bnd_pk_..., from POST /api/v2/mcp-keys) or an exposure's api_key
  BINDERY_URL  the gateway (default http://127.0.0.1:4100)
`;

function readArgs(argv: string[]): { caller?: string; check?: boolean; verbose?: boolean; help?: boolean } {
  const options = {
    check: { type: 'boolean' },
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
  return { ...parsed.values, ...(caller !== undefined && { caller }) };
}

async function main(): Promise<number> {
  let args: ReturnType<typeof readArgs>;
  let credentials;
  try {
    args = readArgs(process.argv.slice(2));
    if (args.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    credentials = readCredentials({
      BINDERY_URL: process.env.BINDERY_URL,
      BINDERY_KEY: process.env.BINDERY_KEY,
    });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(
      `bindery-mcp: ${error.message}\n${USAGE.split('\n', 1)[0]}\n       'bindery-mcp --help' tells more\n`,
    );
    return 2;
  }
  const log = stderrLogger(args.caller, args.verbose === true);
  if (credentials.warning) log.warning(credentials.warning);
  if (args.check) return runCheck(credentials, args.caller);

  const relay = new Relay({
    endpoint: mcpEndpoint(credentials, args.caller),
    headers: authHeaders(credentials),
    gatewayUrl: credentials.url,
    log,
  });
  // A client that went away: nothing left to write to.
  process.stdout.on('error', (error) => {
    log.debug(`stdout: ${error.message}`);
    void relay.close().then(() => process.exit(0));
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log.debug(`${signal}: closing`);
      void relay.close().then(() => process.exit(0));
    });
  }
  await relay.run();
  return 0;
}

const code = await main();
// stdout is flushed first: the last answers must not be cut off.
process.stdout.write('', () => process.exit(code));
