// Pins what a newcomer sees on first start: the control plane process starts on an empty embedded
// database, migrates it, prints a root token and the demo exposure's MCP URL once, serves the API
// with that token, and on a restart over the same data directory prints neither again while the
// old token keeps working.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { engine } from './support/app.ts';
import { adminCall, reapAll, startServer, PROCESS_TEST } from './support/server-process.ts';

// Answers are arbitrary JSON; the test reads the fields it needs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

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

  it('on SIGTERM answers the request in flight, then exits at once (no idle keep-alive socket holds it)', async () => {
    const env = {
      BINDERY_DATA_DIR: await mkdtemp(join(tmpdir(), 'bindery-stop-')),
      BINDERY_ADMIN_TOKEN: 'bnd_admin_shutdown-test-token-01',
      INTERNAL_TOKEN: 'internal-token-for-server-tests',
      BINDERY_SEED_DEMO: 'false',
    };
    const server = await startServer(env);
    try {
      const admin = (path: string, body: unknown) =>
        adminCall(server.url, env.BINDERY_ADMIN_TOKEN, 'POST', path, body).then((r) => r.body as Json);
      const table = await admin('/api/v2/tables', {
        name: 'numbers',
        data: { items: Array.from({ length: 1_000 }, (_, i) => i) },
      });
      const adi = await admin('/api/v2/adis', {
        table_id: table.id,
        json_path: '/items',
        operation_type: 'query',
      });
      const aei = await admin('/api/v2/aeis', { name: 'slow' });
      const binding = await admin(`/api/v2/aeis/${aei.id}/bindings`, { adi_id: adi.id });
      // A query that runs its whole 1 s budget in a worker thread, sent over a keep-alive connection.
      const inFlight = fetch(`${server.url}/internal/adi/${adi.id}/execute`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.INTERNAL_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          aei_id: aei.id,
          binding_id: binding.id,
          arguments: { query: 'map(&map(&map(&map(&map(&map(&@, $), $), $), $), $), $)' },
        }),
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const stopping = performance.now();
      const code = await server.stop();
      const took = performance.now() - stopping;
      const answer = await inFlight;
      expect(answer.status).toBe(200);
      expect(JSON.parse(((await answer.json()) as Json).content[0].text).error.code).toBe('LIMIT_EXCEEDED');
      expect(code).toBe(0);
      // Before answers sent while closing closed their connection, this took about a minute.
      expect(took).toBeLessThan(15_000);
    } finally {
      await rm(env.BINDERY_DATA_DIR, { recursive: true, force: true });
    }
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
