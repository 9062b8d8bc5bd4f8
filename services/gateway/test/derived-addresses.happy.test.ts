// Pins that PORT and GATEWAY_PORT alone move both services and they still find each other: the
// control plane and the gateway run as their own processes with only those two addresses set (and
// the internal token `pnpm start` generates); the demo MCP URL the control plane prints is at
// GATEWAY_PORT, and an MCP client listing its tools there goes through the gateway to the control
// plane at PORT. A misspelt setting in the same environment gets a warning naming the right one.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CONTROL_PLANE_DIR, GATEWAY_DIR, reapAll, startService } from '@bindery/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './support/stack.ts';

let dataDir: string | undefined;

afterAll(async () => {
  await reapAll();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('derived addresses', { timeout: 120_000 }, () => {
  it('PORT and GATEWAY_PORT alone: the printed demo URL is at GATEWAY_PORT and serves the demo tools', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'bindery-derived-'));
    const env = {
      PORT: String(await freePort()),
      GATEWAY_PORT: String(await freePort()),
      INTERNAL_TOKEN: 'derived-addresses-internal-01',
      LOG_REQUESTS: 'false',
    };
    const [controlPlane, gateway] = await Promise.all([
      startService({ dir: CONTROL_PLANE_DIR, env: { ...env, BINDERY_DATA_DIR: dataDir } }),
      startService({ dir: GATEWAY_DIR, env: { ...env, GATEWAY_PROT: '1' } }),
    ]);
    expect(gateway.output()).toContain('unknown setting GATEWAY_PROT is ignored: did you mean GATEWAY_PORT?');

    const demoUrl = /MCP URL: (\S+)/.exec(controlPlane.output())?.[1];
    expect(demoUrl).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${env.GATEWAY_PORT}/api/v2/mcp/server/`));
    // The gateway may have started first and found no control plane yet: it says when it is ready.
    const gatewayUrl = `http://127.0.0.1:${env.GATEWAY_PORT}`;
    const deadline = Date.now() + 30_000;
    let readiness = '';
    while (Date.now() < deadline) {
      readiness = await (await fetch(`${gatewayUrl}/readyz`)).text();
      if ((JSON.parse(readiness) as { status: string }).status === 'ready') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(JSON.parse(readiness)).toMatchObject({ status: 'ready' });
    const client = new Client({ name: 'derived-addresses-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(demoUrl!)));
    try {
      const { tools } = await client.listTools();
      expect(tools.length).toBe(8);
    } finally {
      await client.close();
    }
  });
});
