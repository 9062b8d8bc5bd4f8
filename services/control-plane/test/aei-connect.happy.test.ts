// Pins "ready to connect": creating an AEI and rotating its key answer, with the api_key, the MCP
// URL on the public gateway (key in the path), the URL for a key sent as a bearer header, and
// client configs for Claude Desktop (through mcp-remote, which needs --allow-http for plain http
// beyond loopback), VS Code, Cursor and the MCP Inspector CLI; none of it is in any other answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ gatewayPublicUrl: 'http://127.0.0.1:4999' });
});
afterAll(() => t.close());

function expectedConnection(base: string, name: string, key: string, bridgeExtra: string[] = []) {
  const url = `${base}/api/v2/mcp/server/${key}`;
  return {
    mcp_url: url,
    mcp_url_header: `${base}/api/v2/mcp/server`,
    client_configs: {
      claude_desktop: {
        file: 'claude_desktop_config.json',
        config: { mcpServers: { [name]: { command: 'npx', args: ['mcp-remote', url, ...bridgeExtra] } } },
      },
      vscode: { file: '.vscode/mcp.json', config: { servers: { [name]: { type: 'http', url } } } },
      cursor: { file: '.cursor/mcp.json', config: { mcpServers: { [name]: { url } } } },
      mcp_inspector: {
        command: `npx @modelcontextprotocol/inspector --cli ${url} --transport http --method tools/list`,
      },
    },
  };
}

describe('ready to connect', () => {
  let aei: { id: string; api_key: string };

  it('creating an AEI answers its URLs and client configs', async () => {
    const res = await t.call('POST', '/api/v2/aeis', { body: { name: 'CRM agent (prod)' } });
    expect(res.status).toBe(201);
    aei = res.body;
    expect(res.body).toMatchObject(
      expectedConnection('http://127.0.0.1:4999', 'crm-agent-prod', aei.api_key),
    );
  });

  it('rotating the key answers the same with the new key, and the old key is in none of it', async () => {
    const res = await t.call('POST', `/api/v2/aeis/${aei.id}/rotate-key`);
    expect(res.status).toBe(200);
    expect(res.body.api_key).not.toBe(aei.api_key);
    expect(res.body).toMatchObject(
      expectedConnection('http://127.0.0.1:4999', 'crm-agent-prod', res.body.api_key),
    );
    expect(JSON.stringify(res.body)).not.toContain(aei.api_key);
    aei = res.body;
  });

  it('no other answer holds the key or a URL with it', async () => {
    for (const path of [`/api/v2/aeis/${aei.id}`, '/api/v2/aeis']) {
      const res = await t.call('GET', path);
      expect(JSON.stringify(res.body)).not.toContain(aei.api_key);
      expect(JSON.stringify(res.body)).not.toContain('mcp_url');
    }
  });
});

describe('a gateway behind another address', () => {
  let other: TestApp;
  beforeAll(async () => {
    other = await startTestApp({ gatewayPublicUrl: 'http://10.1.2.3:8080/mcp-gw' });
  });
  afterAll(() => other.close());

  it('keeps its path prefix, and the bridge is told to allow plain http', async () => {
    const res = await other.call('POST', '/api/v2/aeis', { body: { name: '*** ***' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject(
      expectedConnection('http://10.1.2.3:8080/mcp-gw', 'bindery', res.body.api_key, ['--allow-http']),
    );
  });
});
