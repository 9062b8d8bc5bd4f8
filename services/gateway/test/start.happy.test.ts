// Pins `pnpm start` as a person at a terminal meets it: one banner once both services listen (the
// docs URL, the gateway URL, where the data lives, the root token and the demo's MCP URL shown
// once, at the ports asked for), readable log lines without the probes, and a Ctrl+C (SIGINT to
// the whole process group, as a terminal sends it) that stops both services and exits 0 with no
// package-manager noise. A second start on the same data says where the demo is without its key
// and logs JSON lines when its output is not a terminal; a service that dies is restarted with a
// backoff while the other goes on; a bad setting stops the start with exit 1.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/stack.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const launches: ChildProcessWithoutNullStreams[] = [];
let dataDir: string;
let ports: { PORT: string; GATEWAY_PORT: string };

interface Launch {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs `command` from the repo root in its own process group (as a terminal would), output collected. */
function launch(command: string, args: string[], env: Record<string, string>): Launch {
  const child = spawn(command, args, {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  launches.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function until(check: () => boolean, what: string, output: () => string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The pid of the launcher's child running `service` (told apart by its working directory). */
function serviceProcess(launcher: number, service: 'control-plane' | 'gateway'): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === launcher && readlinkSync(`/proc/${entry}/cwd`).endsWith(`/services/${service}`)) {
        return Number(entry);
      }
    } catch {
      // The process ended while being read.
    }
  }
  throw new Error(`no ${service} process under ${launcher}`);
}

const bannerValue = (output: string, label: string) =>
  new RegExp(`^  ${label} +(\\S+)`, 'm').exec(output)?.[1];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'bindery-start-'));
  ports = { PORT: String(await freePort()), GATEWAY_PORT: String(await freePort()) };
});

afterAll(async () => {
  for (const child of launches) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
  await rm(dataDir, { recursive: true, force: true });
});

describe('pnpm start', { timeout: 180_000 }, () => {
  it('prints one banner, logs readable lines without probes, and stops on Ctrl+C with exit 0', async () => {
    const start = launch('pnpm', ['start'], { ...ports, BINDERY_DATA_DIR: dataDir, LOG_FORMAT: 'pretty' });
    await until(() => start.output().includes('Bindery is running'), 'the banner', start.output);
    const output = start.output();

    const controlPlane = `http://127.0.0.1:${ports.PORT}`;
    expect(bannerValue(output, 'Admin API and docs')).toBe(`${controlPlane}/docs`);
    expect(bannerValue(output, 'Console')).toBe(`${controlPlane}/console/`);
    expect(bannerValue(output, 'Gateway \\(MCP\\)')).toBe(
      `http://127.0.0.1:${ports.GATEWAY_PORT}/api/v2/mcp/server/<api_key>`,
    );
    expect(bannerValue(output, 'Data')).toBe(dataDir);
    const rootToken = bannerValue(output, 'Root admin token');
    expect(rootToken).toMatch(/^bnd_admin_/);
    const demoUrl = bannerValue(output, 'Demo MCP URL');
    expect(demoUrl).toMatch(
      new RegExp(`^http://127\\.0\\.0\\.1:${ports.GATEWAY_PORT}/api/v2/mcp/server/bnd_key_`),
    );
    // Shown once, in the banner: the services do not print them again in their own lines.
    expect(output.split(rootToken!).length - 1).toBe(1);
    expect(output.split(demoUrl!).length - 1).toBe(1);

    const client = new Client({ name: 'start-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(demoUrl!)));
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(8);
    // The demo's custom JavaScript tool runs in the started control plane's sandbox.
    const totals = await client.callTool({ name: 'order_totals', arguments: { status: 'paid' } });
    expect(totals.structuredContent).toEqual({ orders: 3, totals: { EUR: 1250, USD: 420.5, GBP: 310.75 } });
    await client.close();

    for (const url of [`${controlPlane}/healthz`, `${controlPlane}/readyz`, `${controlPlane}/metrics`]) {
      expect((await fetch(url)).status).toBe(200);
    }
    const gateway = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
    for (const url of [`${gateway}/healthz`, `${gateway}/readyz`, `${gateway}/metrics`]) {
      expect((await fetch(url)).status).toBe(200);
    }
    const adis = await fetch(`${controlPlane}/api/v2/adis`, {
      headers: { authorization: `Bearer ${rootToken}` },
    });
    expect(adis.status).toBe(200);
    await until(
      () => /INFO \(control-plane\): GET \/api\/v2\/adis 200 in [\d.]+ ms/.test(start.output()),
      'the request line',
      start.output,
    );

    // A terminal's Ctrl+C: SIGINT to every process of the group (pnpm, the launcher, both services).
    process.kill(-start.child.pid!, 'SIGINT');
    expect(await start.exited).toBe(0);
    const all = start.output();
    expect(all).toMatch(/INFO \(gateway\): stopped/);
    expect(all).toMatch(/INFO \(control-plane\): stopped/);
    expect(all).not.toContain('ELIFECYCLE');
    expect(all).not.toContain('forced stop');
    // Probes are logged at debug only; no JSON line reached the terminal.
    expect(all).not.toMatch(/\/(healthz|readyz|metrics)/);
    expect(all.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
  });

  it('a second start says where the demo is without its key, logs JSON off a terminal, stops on SIGTERM', async () => {
    const start = launch(process.execPath, ['scripts/dist/start.js'], {
      ...ports,
      BINDERY_DATA_DIR: dataDir,
    });
    await until(() => start.output().includes('Bindery is running'), 'the banner', start.output);
    const output = start.output();
    expect(output).not.toContain('Root admin token');
    expect(output).not.toContain('bnd_key_');
    expect(output).toMatch(/Demo exposure +"Demo agent" \((aei_\w+)\)/);
    expect(output).toMatch(/POST \/api\/v2\/aeis\/aei_\w+\/rotate-key answers a new one/);

    start.child.kill('SIGTERM'); // the launcher alone: it passes the signal on
    expect(await start.exited).toBe(0);
    const lines = start
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    const names = lines.map((line) => (JSON.parse(line) as { name: string; msg: string }).name);
    expect(new Set(names)).toEqual(new Set(['control-plane', 'gateway']));
    expect(lines.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
  });

  it('a service that dies is restarted with a backoff, saying so, while the other goes on', async () => {
    const start = launch(process.execPath, ['scripts/dist/start.js'], {
      ...ports,
      BINDERY_DATA_DIR: dataDir,
    });
    await until(() => start.output().includes('Bindery is running'), 'the banner', start.output);
    const controlPlane = `http://127.0.0.1:${ports.PORT}`;
    const gateway = `http://127.0.0.1:${ports.GATEWAY_PORT}`;

    // A crash of the control plane (as the out-of-memory abort was): the gateway keeps serving.
    process.kill(serviceProcess(start.child.pid!, 'control-plane'), 'SIGKILL');
    await until(
      () =>
        start
          .output()
          .includes('bindery: the control-plane stopped (SIGKILL); restarting it in 1 s (restart 1)'),
      'the restart notice',
      start.output,
    );
    expect((await fetch(`${gateway}/healthz`)).status).toBe(200);
    await until(
      () => start.output().includes('bindery: the control-plane is back (restart 1)'),
      'the control plane back',
      start.output,
    );
    expect((await fetch(`${controlPlane}/healthz`)).status).toBe(200);

    // The gateway is supervised the same way; dying twice in a row doubles its backoff.
    process.kill(serviceProcess(start.child.pid!, 'gateway'), 'SIGKILL');
    await until(
      () => start.output().includes('the gateway is back (restart 1)'),
      'the gateway back',
      start.output,
    );
    process.kill(serviceProcess(start.child.pid!, 'gateway'), 'SIGKILL');
    await until(
      () =>
        start.output().includes('bindery: the gateway stopped (SIGKILL); restarting it in 2 s (restart 2)'),
      'the second restart notice',
      start.output,
    );
    await until(() => start.output().includes('the gateway is back (restart 2)'), 'back again', start.output);
    // It finds the control plane again.
    let readiness = '';
    for (const end = Date.now() + 30_000; readiness !== 'ready' && Date.now() < end;) {
      readiness = ((await (await fetch(`${gateway}/readyz`)).json()) as { status: string }).status;
      if (readiness !== 'ready') await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(readiness).toBe('ready');
    // The banner (and anything shown once) is not printed again.
    expect(start.output().split('Bindery is running').length - 1).toBe(1);

    start.child.kill('SIGTERM');
    expect(await start.exited).toBe(0);
  });

  it('a bad setting stops the start with its message and exit code 1', async () => {
    const start = launch(process.execPath, ['scripts/dist/start.js'], {
      PORT: 'eighty',
      BINDERY_DATA_DIR: dataDir,
    });
    expect(await start.exited).toBe(1);
    expect(start.output()).toContain('PORT');
    expect(start.output()).toContain('eighty');
    expect(start.output()).toContain('bindery: the control-plane stopped (exit code 1); stopping.');
    expect(start.output()).not.toContain('Bindery is running');
  });
});
