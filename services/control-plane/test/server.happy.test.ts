// Pins what a newcomer sees on first start: the control plane process starts on an empty embedded
// database, migrates it, prints a root token and the demo exposure's MCP URL once, serves the API
// with that token, and on a restart over the same data directory prints neither again while the
// old token keeps working.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { engine } from './support/app.ts';
import { reapAll, startServer, PROCESS_TEST } from './support/server-process.ts';

let dataDir: string;

afterAll(async () => {
  await reapAll();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// One engine suffices: this is about the process on the embedded database, not SQL.
describe.runIf(engine === 'pglite')('control plane process on the embedded database', PROCESS_TEST, () => {
  it('prints a root token and the demo MCP URL once, serves with it, and keeps it across a restart', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'bindery-data-'));
    const env = {
      BINDERY_DATA_DIR: dataDir,
      GATEWAY_PUBLIC_URL: 'http://gateway.test:4100/',
      INTERNAL_TOKEN: 'internal-token-for-server-tests',
    };
    const first = await startServer(env);
    const token = /Root admin token \(shown once, store it now\): (\S+)/.exec(first.output())?.[1];
    expect(token).toMatch(/^bnd_admin_/);
    expect(first.output()).toContain('"database":"pglite"');
    const me = await fetch(`${first.url}/api/v2/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ name: 'root', is_root: true });

    const mcpUrl = /MCP URL: (\S+)/.exec(first.output())?.[1];
    expect(mcpUrl).toMatch(/^http:\/\/gateway\.test:4100\/api\/v2\/mcp\/server\/bnd_key_[A-Za-z0-9_-]+$/);
    expect(first.output()).toContain('npx @modelcontextprotocol/inspector');
    const apiKey = mcpUrl!.split('/').pop()!;
    expect(first.output()).toContain('"msg":"demo exposure seeded"');
    const aeis = await fetch(`${first.url}/api/v2/aeis`, { headers: { authorization: `Bearer ${token}` } });
    const { items } = (await aeis.json()) as { items: { name: string; api_key_prefix: string }[] };
    expect(items).toHaveLength(1);
    expect(items[0]?.name).toBe('Demo agent');
    expect(apiKey.startsWith(items[0]?.api_key_prefix ?? '-')).toBe(true);
    // A gateway's config lookup carries the key in its path; the request log keeps only its prefix.
    const config = await fetch(`${first.url}/internal/aei/mcp/${apiKey}/config`, {
      headers: { authorization: 'Bearer internal-token-for-server-tests' },
    });
    expect(config.status).toBe(200);
    expect(await first.stop()).toBe(0);
    expect(first.output()).toContain(`/internal/aei/mcp/${apiKey.slice(0, 12)}…/config`);
    expect(first.output().split(apiKey)).toHaveLength(2); // the MCP URL line, nowhere else

    const second = await startServer(env);
    expect(second.output()).not.toContain('Root admin token');
    expect(second.output()).not.toContain('MCP URL');
    expect(second.output()).toContain('"migrated":[]');
    const again = await fetch(`${second.url}/api/v2/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(again.status).toBe(200);
    await second.stop();
  });

  it('refuses to start on a bad setting, saying which', async () => {
    await expect(startServer({ BINDERY_DATA_DIR: dataDir, PORT: 'eighty' })).rejects.toThrow(
      /PORT must be an integer/,
    );
    await expect(
      startServer({ BINDERY_DATA_DIR: dataDir, GATEWAY_URLS: 'http://127.0.0.1:4100' }),
    ).rejects.toThrow(/OPS_TOKEN must be set when GATEWAY_URLS is/);
  });
});
