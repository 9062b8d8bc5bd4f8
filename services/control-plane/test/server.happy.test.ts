// Pins what a newcomer sees on first start: the control plane process starts on an empty embedded
// database, migrates it, prints a root token once, serves the API with it, and on a restart over
// the same data directory prints no new token while the old one keeps working.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { engine } from './support/app.ts';

const serviceDir = fileURLToPath(new URL('..', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];
let dataDir: string;

afterAll(async () => {
  for (const child of children) child.kill('SIGTERM');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Starts `tsx src/server.ts` and resolves with its URL and everything it printed until listening. */
function startServer(
  env: Record<string, string>,
): Promise<{ url: string; output: string; child: ChildProcessWithoutNullStreams }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: serviceDir,
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ url: match[1], output, child });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
}

function stop(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

// One engine suffices: this is about the process on the embedded database, not SQL.
describe.runIf(engine === 'pglite')('control plane process on the embedded database', () => {
  it('prints a root token once, serves with it, and keeps it across a restart', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'bindery-data-'));
    const first = await startServer({ BINDERY_DATA_DIR: dataDir });
    const token = /Root admin token \(shown once, store it now\): (\S+)/.exec(first.output)?.[1];
    expect(token).toMatch(/^bnd_admin_/);
    expect(first.output).toContain('"database":"pglite"');
    const me = await fetch(`${first.url}/api/v2/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ name: 'root', is_root: true });
    expect(await stop(first.child)).toBe(0);

    const second = await startServer({ BINDERY_DATA_DIR: dataDir });
    expect(second.output).not.toContain('Root admin token');
    expect(second.output).toContain('"migrated":[]');
    const again = await fetch(`${second.url}/api/v2/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(again.status).toBe(200);
    await stop(second.child);
  });

  it('refuses to start on a bad setting, saying which', async () => {
    await expect(startServer({ BINDERY_DATA_DIR: dataDir, PORT: 'eighty' })).rejects.toThrow(
      /PORT must be an integer/,
    );
  });
});
