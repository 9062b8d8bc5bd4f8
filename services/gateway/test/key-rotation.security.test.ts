// Pins that a rotated key stops working at once on every gateway of a control plane: sessions
// opened with an AEI's old api_key (in the URL and as a bearer header, on every path a request can
// take: the fast lane, Fastify's route, the SDK transport of a held session, a stateless server;
// and SDK clients with their GET stream) and the REST entry are refused with 401 by the very next
// request after `rotate-key` is answered, with no wait, on two gateways the control plane
// invalidates over HTTP (GATEWAY_URLS) and one it reaches over Redis only, the last two hearing of
// it late (a slow link); the new key works on all three. The same holds for a personal key
// rotated on the caller entry.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed, type Json } from '@bindery/test-support';
import { restCall } from './support/fixtures.ts';
import { delayProxy, type DelayProxy } from './support/delay-proxy.ts';
import { LANES, lanesFor, type Lanes, type McpAnswer } from './support/mcp-raw.ts';
import { freePort, startStack, type Stack } from './support/stack.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * How late the second gateway hears of a change over HTTP, and the third over Redis: each well
 * within the control plane's 1 s bound, Redis the later (so the wait for the slow HTTP delivery
 * cannot cover for it).
 */
const LATE_HTTP_MS = 200;
const LATE_REDIS_MS = 600;
let stack: Stack;
const gateways: { name: string; url: string }[] = [];
const clients: Client[] = [];
const proxies: DelayProxy[] = [];

beforeAll(async () => {
  // The second gateway is reached by the control plane through a slow link, and so is Redis by
  // the third: a rotation answered before they heard would leave them serving the old key.
  const listedPort = await freePort();
  const toListed = await delayProxy(`127.0.0.1:${listedPort}`, { toTargetMs: LATE_HTTP_MS });
  const toRedis = await delayProxy(new URL(REDIS_URL).host, { toClientMs: LATE_REDIS_MS });
  proxies.push(toListed, toRedis);
  stack = await startStack({
    controlPlaneEnv: { REDIS_URL },
    moreGatewayUrls: [`http://${toListed.address}`],
    // Every request of the test is its own: no rate limit gets in the way.
    gatewayEnv: { RATE_LIMIT_PER_SECOND: '10000', RATE_LIMIT_BURST: '10000' },
  });
  gateways.push({ name: 'listed in GATEWAY_URLS', url: stack.gatewayUrl });
  gateways.push({ name: 'listed, slow to reach', url: await stack.addGateway({}, listedPort) });
  gateways.push({
    name: 'on Redis only, slow to hear',
    url: await stack.addGateway({ REDIS_URL: `redis://${toRedis.address}` }),
  });
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await stack.close();
  for (const proxy of proxies) await proxy.close();
});

const CALL = JSON.stringify({
  jsonrpc: '2.0',
  id: 11,
  method: 'tools/call',
  params: { name: 'find_customers', arguments: { query: '[0].name' } },
});
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 12, method: 'tools/list' });

/** An SDK client on `url` (its GET stream open), closed after the file. */
async function sdkClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'rotation', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

function expectServed(answer: McpAnswer, where: string): void {
  expect(answer.status, `${where}: ${answer.text.slice(0, 300)}`).toBe(200);
  expect(answer.text, where).not.toContain('"error"');
}

function expectUnknownKey(answer: McpAnswer, where: string): void {
  expect(answer.status, `${where}: ${answer.text.slice(0, 300)}`).toBe(401);
  const error: Json = answer.messages[0]?.error;
  expect(error?.code, where).toBe(-32001);
  expect(error?.data.code, where).toBe('UNAUTHORIZED');
}

interface Opened {
  where: string;
  lanes: Lanes;
}

describe("an AEI's api_key rotated", () => {
  let exposed: Exposed;
  const opened: Opened[] = [];
  const sdk: { where: string; client: Client }[] = [];

  beforeAll(async () => {
    exposed = await twoTableExposure(stack);
    const bearer = { authorization: `Bearer ${exposed.apiKey}` };
    for (const { name, url } of gateways) {
      opened.push({
        where: `${name}, key in the URL`,
        lanes: await lanesFor(url, `/api/v2/mcp/server/${exposed.apiKey}`),
      });
      opened.push({ where: `${name}, bearer`, lanes: await lanesFor(url, '/api/v2/mcp/server', bearer) });
      sdk.push({
        where: `${name}, SDK client, key in the URL`,
        client: await sdkClient(`${url}/api/v2/mcp/server/${exposed.apiKey}`),
      });
      sdk.push({
        where: `${name}, SDK client, bearer`,
        client: await sdkClient(`${url}/api/v2/mcp/server`, bearer),
      });
    }
  });

  it('refuses the old key on the next request of every open session, on every gateway', async () => {
    const old = exposed.apiKey;
    // Everything is served (and cached, on every gateway) before the rotation.
    for (const { where, lanes } of opened) {
      for (const lane of LANES) expectServed(await lanes.post(lane, CALL), `${where}, ${lane}`);
    }
    for (const { where, client } of sdk) expect((await client.listTools()).tools, where).toHaveLength(2);
    for (const { url } of gateways) {
      expect((await restCall(url, 'GET', '/tools', { authorization: `Bearer ${old}` })).status).toBe(200);
    }

    const rotated = await stack.admin(
      'POST',
      `/api/v2/aeis/${exposed.aeiId}/rotate-key`,
      undefined,
      exposed.token,
    );
    expect(rotated.api_key).not.toBe(old);

    // No waiting: the very next request of each session, all at once, on every gateway.
    const raw = opened.flatMap(({ where, lanes }) =>
      LANES.map(async (lane) => expectUnknownKey(await lanes.post(lane, CALL), `${where}, ${lane}`)),
    );
    const viaSdk = sdk.map(({ where, client }) =>
      expect(
        client.callTool({ name: 'find_customers', arguments: { query: '[0].name' } }),
        where,
      ).rejects.toThrow(/401|unknown api_key/),
    );
    const viaRest = gateways.map(async ({ name, url }) => {
      const res = await restCall(url, 'GET', '/tools', { authorization: `Bearer ${old}` });
      expect(res.status, name).toBe(401);
      expect(res.body.error.code, name).toBe('UNAUTHORIZED');
    });
    await Promise.all([...raw, ...viaSdk, ...viaRest]);
    // And the request after that: nothing comes back to life.
    for (const { where, lanes } of opened) {
      for (const lane of LANES) expectUnknownKey(await lanes.post(lane, LIST), `${where}, ${lane}, again`);
    }

    // The new key works everywhere, on both MCP forms and on REST.
    for (const { name, url } of gateways) {
      const byUrl = await sdkClient(`${url}/api/v2/mcp/server/${rotated.api_key}`);
      expect((await byUrl.listTools()).tools, name).toHaveLength(2);
      const byBearer = await sdkClient(`${url}/api/v2/mcp/server`, {
        authorization: `Bearer ${rotated.api_key}`,
      });
      expect(
        (await byBearer.callTool({ name: 'find_customers', arguments: { query: '[0].name' } })).isError,
        name,
      ).toBeFalsy();
      const tools = await restCall(url, 'GET', '/tools', { authorization: `Bearer ${rotated.api_key}` });
      expect(tools.status, name).toBe(200);
    }
  });
});

describe('a personal key rotated', () => {
  it('is refused on the next request of its caller-entry sessions and on REST, on every gateway', async () => {
    const user = await twoTableExposure(stack);
    await stack.admin('PUT', '/api/v2/callers/vscode', { aei_id: user.aeiId }, user.token);
    const { id, key } = await stack.admin('POST', '/api/v2/mcp-keys', { name: 'rotating' }, user.token);
    const bearer = { authorization: `Bearer ${key}` };
    const opened: Opened[] = [];
    for (const { name, url } of gateways) {
      opened.push({
        where: `${name}, /caller/vscode`,
        lanes: await lanesFor(url, '/api/v2/mcp/caller/vscode', bearer),
      });
    }
    for (const { where, lanes } of opened) {
      for (const lane of LANES) expectServed(await lanes.post(lane, CALL), `${where}, ${lane}`);
    }
    const rest = { ...bearer, 'x-bindery-caller': 'vscode' };
    for (const { url } of gateways) expect((await restCall(url, 'GET', '/tools', rest)).status).toBe(200);

    const rotated = await stack.admin('POST', `/api/v2/mcp-keys/${id}/rotate`, undefined, user.token);

    await Promise.all([
      ...opened.flatMap(({ where, lanes }) =>
        LANES.map(async (lane) => expectUnknownKey(await lanes.post(lane, CALL), `${where}, ${lane}`)),
      ),
      ...gateways.map(async ({ name, url }) =>
        expect((await restCall(url, 'GET', '/tools', rest)).status, name).toBe(401),
      ),
    ]);
    for (const { name, url } of gateways) {
      const tools = await restCall(url, 'GET', '/tools', {
        authorization: `Bearer ${rotated.key}`,
        'x-bindery-caller': 'vscode',
      });
      expect(tools.status, name).toBe(200);
    }
  });
});
