/**
 * `pnpm start`: runs the control plane and the gateway for one person on one machine, and prints
 * one banner once both listen (where the docs, the gateway, the demo and the data are, and the
 * secrets shown once). Both services share the terminal; Ctrl+C stops them gracefully and exits 0.
 * A service that dies after it started listening is started again after a backoff (1 s, doubling
 * to 30 s while it keeps dying), saying so, while the other goes on; one that fails its first start
 * (a bad setting, a port in use) stops both, since a restart would fail the same way.
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
import { isStartedMessage, type ControlPlaneStarted, type GatewayStarted } from '@bindery/service-kit';
import { localUrl } from '@bindery/service-kit/settings';

// The repository: above scripts/ when run from this source (tests), above scripts/dist/ when built.
const root = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '..' : '../..', import.meta.url));
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
/** The running process of each service (none while it waits for a restart). */
const children = new Map<Service, ChildProcess>();
/** The last exit code of each service, once one exited. */
const exits = new Map<Service, number>();
/** Restarts waiting for their backoff, by service. */
const restarts = new Map<Service, NodeJS.Timeout>();
/** How often each service was restarted, and the backoff its next restart waits. */
const restarted = new Map<Service, { count: number; backoffMs: number }>();
let stopping = false;
/** When the first stop signal came: copies of it (the terminal's and the package manager's) are not a second Ctrl+C. */
let firstSignalAt: number | undefined;
/** Signals this close to the first are copies of the same Ctrl+C. */
const SAME_PRESS_MS = 1_000;
/** A service that dies is restarted after this, doubling to RESTART_MAX_MS while it keeps dying. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** A service that ran this long before it died starts its backoff again from RESTART_FIRST_MS. */
const HEALTHY_AFTER_MS = 60_000;

function run(service: Service): void {
  // Each service runs its build (dist/, made by `pnpm install` or `pnpm build`) with plain node.
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: resolve(root, 'services', service),
    env,
    // The terminal is the services' own (their logs are readable there); the channel carries
    // their "listening" message.
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
  });
  const startedAt = performance.now();
  children.set(service, child);
  child.on('message', (message) => {
    if (!isStartedMessage(message)) return;
    const again = started[service] !== undefined;
    if (message.service === 'control-plane') started['control-plane'] = message;
    else started.gateway = message;
    if (again) {
      process.stdout.write(
        `bindery: the ${service} is back (restart ${restarted.get(service)?.count ?? 0})\n`,
      );
      return;
    }
    // The gateway starts once the control plane answers, so its first config lookups find it.
    if (service === 'control-plane' && !stopping) run('gateway');
    if (started['control-plane'] && started.gateway) printBanner(started['control-plane'], started.gateway);
  });
  child.on('exit', (code, signal) => {
    children.delete(service);
    exits.set(service, code ?? (signal === null ? 1 : 128));
    const how = signal ?? `exit code ${code}`;
    if (!stopping && started[service] === undefined) {
      // It never listened (a bad setting, a port in use): starting it again would fail the same way.
      process.stderr.write(`bindery: the ${service} stopped (${how}); stopping.\n`);
      stop('SIGTERM');
    } else if (!stopping) {
      // It crashed after it served: the other service goes on (the gateway answers from its cache
      // while the control plane is away), and this one is started again.
      scheduleRestart(service, how, performance.now() - startedAt);
    }
    if (stopping && children.size === 0) {
      const clean = !stoppedByItself && [...exits.values()].every((exit) => exit === 0);
      process.exit(clean ? 0 : 1);
    }
  });
}

function scheduleRestart(service: Service, how: string, ranMs: number): void {
  const previous = restarted.get(service);
  const backoffMs =
    previous === undefined || ranMs >= HEALTHY_AFTER_MS
      ? RESTART_FIRST_MS
      : Math.min(RESTART_MAX_MS, previous.backoffMs * 2);
  const count = (previous?.count ?? 0) + 1;
  restarted.set(service, { count, backoffMs });
  process.stderr.write(
    `bindery: the ${service} stopped (${how}); restarting it in ${backoffMs / 1000} s (restart ${count})\n`,
  );
  restarts.set(
    service,
    setTimeout(() => {
      restarts.delete(service);
      if (!stopping) run(service);
    }, backoffMs),
  );
}

/** Set when a service stopped before it ever listened: the start failed, whatever the exit codes. */
let stoppedByItself = false;

function stop(signal: NodeJS.Signals): void {
  if (!stopping && [...exits.keys()].some((service) => started[service] === undefined))
    stoppedByItself = true;
  stopping = true;
  for (const timer of restarts.values()) clearTimeout(timer);
  restarts.clear();
  for (const child of children.values()) child.kill(signal);
  if (children.size === 0) {
    const clean = !stoppedByItself && [...exits.values()].every((exit) => exit === 0);
    process.exit(clean ? 0 : 1);
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
