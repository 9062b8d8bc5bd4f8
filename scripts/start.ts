/**
 * `pnpm start`: runs the control plane and the gateway for one person on one machine, and prints
 * one banner once both listen (where the docs, the gateway, the demo and the data are, and the
 * secrets shown once). Both services share the terminal; Ctrl+C stops them gracefully and exits 0.
 *
 * A small launcher rather than a task runner: it passes the whole environment to both services
 * (no list of variables to keep in step), forwards signals and waits for both, and exits with a
 * code that says whether they stopped cleanly, so the package manager adds nothing to the output.
 * It fills in what a local start needs and a person should not have to set: the embedded
 * database's directory, the shared internal and ops tokens, where the control plane tells the
 * local gateway about changes, and the launchers stdio upstream servers may run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { styleText } from 'node:util';
import { isStartedMessage, type ControlPlaneStarted, type GatewayStarted } from '@bindery/contracts/server';
import { localUrl } from '@bindery/contracts/settings';

const root = fileURLToPath(new URL('..', import.meta.url));
const env: NodeJS.ProcessEnv = { ...process.env };
const generatedToken = () => randomBytes(24).toString('base64url');
env.BINDERY_DATA_DIR ??= resolve(root, '.bindery');
env.INTERNAL_TOKEN ??= generatedToken();
env.OPS_TOKEN ??= generatedToken();
// One person on their own machine may run stdio MCP servers with the usual launchers (README).
env.UPSTREAM_STDIO_COMMANDS ??= 'npx,node,uvx,python3';
if (env.GATEWAY_URLS === undefined) {
  // The local gateway; a port that is not a number is the gateway's to refuse, with its message.
  const port = Number(env.GATEWAY_PORT ?? 4100);
  if (Number.isInteger(port)) env.GATEWAY_URLS = localUrl(env.GATEWAY_HOST, port);
}

// The admin console is built by `pnpm install`; a checkout without its build (installed with
// scripts off, or its dist deleted) gets one now. Should that fail, the control plane still starts
// and /console says how to build it.
if (!existsSync(resolve(root, 'services/console/dist/index.html'))) {
  process.stdout.write('bindery: building the admin console (services/console)\n');
  const built = spawnSync('pnpm', ['--filter', '@bindery/console', 'run', 'build'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (built.status !== 0) {
    process.stderr.write('bindery: the console build failed; /console will say how to build it\n');
  }
}

const tty = process.stdout.isTTY === true;
const style = (format: Parameters<typeof styleText>[0], text: string) =>
  tty ? styleText(format, text) : text;

type Service = 'control-plane' | 'gateway';
const started: { 'control-plane'?: ControlPlaneStarted; gateway?: GatewayStarted } = {};
const children = new Map<Service, ChildProcess>();
const exits = new Map<Service, number>();
let stopping = false;
/** When the first stop signal came: copies of it (the terminal's and the package manager's) are not a second Ctrl+C. */
let firstSignalAt: number | undefined;
/** Signals this close to the first are copies of the same Ctrl+C. */
const SAME_PRESS_MS = 1_000;

function run(service: Service): void {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: resolve(root, 'services', service),
    env,
    // The terminal is the services' own (their logs are readable there); the channel carries
    // their "listening" message.
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
  });
  children.set(service, child);
  child.on('message', (message) => {
    if (!isStartedMessage(message)) return;
    if (message.service === 'control-plane') started['control-plane'] = message;
    else started.gateway = message;
    // The gateway starts once the control plane answers, so its first config lookups find it.
    if (service === 'control-plane' && !stopping) run('gateway');
    if (started['control-plane'] && started.gateway) printBanner(started['control-plane'], started.gateway);
  });
  child.on('exit', (code, signal) => {
    exits.set(service, code ?? (signal === null ? 1 : 128));
    if (!stopping) {
      // One service gone (a bad setting, a port in use, a crash): the other is of no use alone.
      process.stderr.write(`bindery: the ${service} stopped (${signal ?? `exit code ${code}`}); stopping.\n`);
      stop('SIGTERM');
    }
    if (exits.size === children.size) {
      const clean = !stoppedByItself && [...exits.values()].every((exit) => exit === 0);
      process.exit(clean ? 0 : 1);
    }
  });
}

/** Set when a service stopped without being asked: the start failed, whatever the exit codes. */
let stoppedByItself = false;

function stop(signal: NodeJS.Signals): void {
  if (!stopping && exits.size > 0) stoppedByItself = true;
  stopping = true;
  for (const [service, child] of children) {
    if (!exits.has(service)) child.kill(signal);
  }
}

function onSignal(signal: NodeJS.Signals): void {
  if (firstSignalAt === undefined) {
    firstSignalAt = performance.now();
    // A terminal's Ctrl+C reaches the services too; the signal is forwarded for a `kill` of this
    // process alone, and a service ignores the second copy.
    process.stdout.write('\nbindery: stopping (requests in flight finish first; Ctrl+C again to force)\n');
    stop(signal);
  } else if (performance.now() - firstSignalAt > SAME_PRESS_MS) {
    process.stderr.write('bindery: forced stop\n');
    stop('SIGKILL');
  }
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

function printBanner(controlPlane: ControlPlaneStarted, gateway: GatewayStarted): void {
  const row = (label: string, value: string, note = '') =>
    `  ${label.padEnd(20)} ${value}${note === '' ? '' : `\n  ${''.padEnd(20)} ${style('dim', note)}`}`;
  const lines = [
    '',
    `  ${style('bold', 'Bindery is running')}   ${style('dim', 'Ctrl+C stops it')}`,
    '',
    row('Console', `${controlPlane.url}/console/`, 'log in with an admin token'),
    row('Admin API and docs', `${controlPlane.url}/docs`),
    row('Gateway (MCP)', `${gateway.url}/api/v2/mcp/server/<api_key>`),
    row(
      'Data',
      controlPlane.database === 'pglite'
        ? `${controlPlane.data} (embedded database)`
        : `${controlPlane.data} (PostgreSQL)`,
    ),
  ];
  if (controlPlane.rootToken !== undefined) {
    lines.push(
      row(
        'Root admin token',
        style('bold', controlPlane.rootToken),
        'shown once: store it now (BINDERY_ADMIN_TOKEN chooses your own)',
      ),
    );
  }
  const demo = controlPlane.demo;
  if (demo?.mcpUrl !== undefined) {
    lines.push(
      row(
        'Demo MCP URL',
        style('bold', demo.mcpUrl),
        `shown once (it holds the api_key); ${demo.tools} tools on a sample CRM. Try it: ` +
          '`npx @modelcontextprotocol/inspector`, transport "Streamable HTTP", paste the URL',
      ),
    );
  } else if (demo !== undefined) {
    lines.push(
      row(
        'Demo exposure',
        `"Demo agent" (${demo.aeiId})`,
        `its MCP URL was shown on the first start; POST /api/v2/aeis/${demo.aeiId}/rotate-key answers a new one`,
      ),
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

run('control-plane');
