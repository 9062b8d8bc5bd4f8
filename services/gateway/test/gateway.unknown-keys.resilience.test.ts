// Pins what keys the gateway does not know cost the control plane: one lookup each (AEI, legacy or
// unknown, told the URL flavour), an AEI key refused on a v1 URL without poisoning its v2 URL; a key
// not in the shape the control plane issues is refused as unknown (401) with no lookup and no token
// spent; and the caps on lookups that find nothing: per client address (one address flooding
// random keys gets 429 and cannot keep another address's new key out) and per gateway, while keys
// that exist never spend either (more new keys at once than the cap are all served), and cached
// keys are served all along. Clients are told apart by their loopback source address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, unusedApiKey, type Exposed } from '@bindery/test-support';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const CAP = 6;
const PER_ADDRESS = 3;
let stack: Stack;
let exposed: Exposed;

beforeAll(async () => {
  stack = await startStack({
    gatewayEnv: {
      UNKNOWN_KEY_LOOKUPS_PER_SECOND: String(CAP),
      UNKNOWN_KEY_LOOKUPS_PER_ADDRESS_PER_SECOND: String(PER_ADDRESS),
    },
  });
  exposed = await twoTableExposure(stack);
});
afterAll(() => stack?.close());

const lookups = async () =>
  (await stack.gateway.gateway.metrics.configFetches.get()).values.reduce((sum, v) => sum + v.value, 0);
const limited = async (scope: 'address' | 'gateway') =>
  (await stack.gateway.gateway.metrics.lookupsLimited.get()).values.find((v) => v.labels.scope === scope)
    ?.value ?? 0;
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const list = (path: string, from?: string) => rawPost(stack.gatewayUrl, path, LIST, from ? { from } : {});
const v2 = (key: string) => `/api/v2/mcp/server/${key}`;
/** Lets the lookup buckets fill up again (and any debt be repaid) between tests. */
const refill = () => new Promise((r) => setTimeout(r, 2_100));
const newAeiKeys = async (count: number, name: string) => {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    keys.push((await stack.admin('POST', '/api/v2/aeis', { name: `${name}-${i}` }, exposed.token)).api_key);
  }
  return keys;
};

describe('one lookup per key', () => {
  it('an unknown key costs exactly one control-plane request, then is remembered', async () => {
    const key = unusedApiKey();
    const before = await lookups();
    expect((await list(v2(key))).status).toBe(401);
    expect(await lookups()).toBe(before + 1);
    expect((await list(v2(key))).status).toBe(401);
    expect(await lookups()).toBe(before + 1);
  });

  it('a legacy key on the v2 URL costs one request and is served', async () => {
    const legacy = await stack.admin(
      'POST',
      '/api/v1/mcp',
      { table_id: exposed.tables.customers, json_pointer: '/list' },
      exposed.token,
    );
    const before = await lookups();
    const res = await list(v2(legacy.api_key));
    expect(res.status).toBe(200);
    expect(res.text).toContain('query_data');
    expect(await lookups()).toBe(before + 1);
  });

  it('an AEI key on a v1 URL is refused after one lookup, and still works on its v2 URL', async () => {
    await refill();
    const aei = await stack.admin('POST', '/api/v2/aeis', { name: 'flavours' }, exposed.token);
    const before = await lookups();
    expect((await list(`/api/v1/mcp/server/${aei.api_key}`)).status).toBe(401);
    expect(await lookups()).toBe(before + 1);
    expect((await list(v2(aei.api_key))).status).toBe(200);
    expect(await lookups()).toBe(before + 2);
    // Known now: the v1 URL refuses it without asking again.
    expect((await list(`/api/v1/mcp/server/${aei.api_key}`)).status).toBe(401);
    expect(await lookups()).toBe(before + 2);
  });
});

describe('keys that cannot exist', () => {
  it('are refused as unknown (401) on every URL, never looked up, spending no token', async () => {
    await refill();
    const unknown = JSON.parse((await list(v2(unusedApiKey()))).text);
    const before = await lookups();
    const shapes = [
      'bnd_key_short',
      `bnd_key_${'A'.repeat(33)}`,
      `bnd_admin_${'A'.repeat(32)}`,
      `xyz_key_${'A'.repeat(32)}`,
      `bnd_key_${'A'.repeat(31)}.`,
    ];
    // Far more than either cap, from one address: none is looked up, none is rate limited.
    const answers = await Promise.all(
      Array.from({ length: 10 * CAP }, (_, i) => {
        const key = `${shapes[i % shapes.length]}${i % shapes.length === 0 ? i : ''}`;
        if (i % 3 === 1) return list(`/api/v1/mcp/server/${key}`);
        if (i % 3 === 2) {
          return rawPost(stack.gatewayUrl, '/api/v2/mcp/server', LIST, {
            headers: { authorization: `Bearer ${key}` },
          });
        }
        return list(v2(key));
      }),
    );
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(401);
      expect(JSON.parse(answer.text)).toEqual(unknown);
    }
    expect(await lookups()).toBe(before);
    expect(await limited('address')).toBe(0);
    // The caps are untouched: a new key from the same address is looked up and served.
    const [fresh] = await newAeiKeys(1, 'after-malformed');
    expect((await list(v2(fresh!))).status).toBe(200);
    expect(await lookups()).toBe(before + 1);
  });
});

describe('lookup caps', () => {
  it('keys that exist spend neither cap: more new keys at once than the gateway cap are all served', async () => {
    await refill();
    // PER_ADDRESS keys from each of four addresses, all at once: twice the gateway's cap.
    const addresses = ['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14'];
    const keys = await newAeiKeys(PER_ADDRESS * addresses.length, 'restart');
    expect(keys.length).toBeGreaterThan(CAP);
    const before = await lookups();
    const answers = await Promise.all(keys.map((key, i) => list(v2(key), addresses[i % addresses.length])));
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    expect(await lookups()).toBe(before + keys.length);
    // One after another from one address, more than its own cap: each gives its token back.
    const more = await newAeiKeys(PER_ADDRESS + 2, 'sequential');
    for (const key of more) expect((await list(v2(key), '127.0.0.15')).status).toBe(200);
  });

  it('one address flooding random keys gets 429 from its own cap; a new key from another address connects', async () => {
    await refill();
    const known = v2(exposed.apiKey);
    expect((await list(known)).status).toBe(200); // cached and fresh from here on
    const [newKey] = await newAeiKeys(1, 'bystander');
    const before = await lookups();
    const started = performance.now();
    const flood = await Promise.all(Array.from({ length: 40 }, () => list(v2(unusedApiKey()), '127.0.0.2')));
    const seconds = (performance.now() - started) / 1000;
    const sent = (await lookups()) - before;
    // The address's bucket holds PER_ADDRESS tokens and refills PER_ADDRESS a second.
    expect(sent).toBeLessThanOrEqual(PER_ADDRESS + Math.floor(seconds * PER_ADDRESS));
    const refused = flood.filter((a) => a.status === 429);
    expect(flood.filter((a) => a.status === 401)).toHaveLength(sent);
    expect(refused).toHaveLength(flood.length - sent);
    expect(refused[0]!.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused[0]!.text).error).toMatchObject({
      code: -32029,
      message: expect.stringMatching(/from this address/),
      data: { code: 'RATE_LIMITED' },
    });
    expect(await limited('address')).toBeGreaterThan(0);

    // Still flooding: the other address's new key is looked up and served, the cached one too.
    const stillFlooding = Promise.all(
      Array.from({ length: 20 }, () => list(v2(unusedApiKey()), '127.0.0.2')),
    );
    const client = await stack.connect(v2(newKey!));
    expect((await client.listTools()).tools).toEqual([]);
    expect((await list(known)).status).toBe(200);
    await stillFlooding;
  });

  it('many addresses together meet the gateway cap: past it a new key gets 429 at once, cached keys are served', async () => {
    await refill();
    const known = v2(exposed.apiKey);
    expect((await list(known)).status).toBe(200);
    const addresses = Array.from({ length: 8 }, (_, i) => `127.0.0.${30 + i}`);
    let before = await lookups();
    const started = performance.now();
    const floods = addresses.map((from) =>
      Promise.all(Array.from({ length: PER_ADDRESS }, () => list(v2(unusedApiKey()), from))),
    );
    const answered = (await Promise.all(floods)).flat();
    const seconds = (performance.now() - started) / 1000;
    // Each address stayed within its own cap; together they reached the gateway's. Lookups in
    // flight when it ran dry still went out (at most each address's cap), and are owed.
    const sent = (await lookups()) - before;
    expect(answered.filter((a) => a.status === 401)).toHaveLength(sent);
    expect(sent).toBeGreaterThanOrEqual(CAP);
    expect(sent).toBeLessThanOrEqual(CAP + Math.ceil(seconds * CAP) + addresses.length * PER_ADDRESS);
    before = await lookups();
    const late = await list(v2(unusedApiKey()), '127.0.0.7');
    expect(late.status, late.text).toBe(429);
    expect(JSON.parse(late.text).error.message).toMatch(/on this gateway/);
    expect(Number(late.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await lookups()).toBe(before);
    expect(await limited('gateway')).toBeGreaterThan(0);
    expect((await list(known)).status).toBe(200);
  });
});
