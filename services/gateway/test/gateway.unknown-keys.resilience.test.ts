// Pins what keys the gateway does not know cost the control plane: one lookup each (AEI, legacy or
// unknown, told the URL flavour), an AEI key refused on a v1 URL without poisoning its v2 URL, and
// a global cap on lookups that find nothing: a burst of random keys reaches the control plane at
// most UNKNOWN_KEY_LOOKUPS_PER_SECOND times a second (the rest get 429 with Retry-After, never
// 401), while cached keys, and new keys that do exist, are served all along.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoTableExposure, type Exposed } from './support/fixtures.ts';
import { rawPost } from './support/raw-post.ts';
import { startStack, type Stack } from './support/stack.ts';

const CAP = 5;
let stack: Stack;
let exposed: Exposed;

beforeAll(async () => {
  stack = await startStack({ gatewayEnv: { UNKNOWN_KEY_LOOKUPS_PER_SECOND: String(CAP) } });
  exposed = await twoTableExposure(stack);
});
afterAll(() => stack?.close());

const lookups = async () =>
  (await stack.gateway.gateway.metrics.configFetches.get()).values.reduce((sum, v) => sum + v.value, 0);
const list = (path: string) =>
  rawPost(stack.gatewayUrl, path, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
const randomKey = () => `bnd_key_${randomBytes(12).toString('hex')}`;
/** Lets the lookup bucket fill up again between tests. */
const refill = () => new Promise((r) => setTimeout(r, 1_100));

describe('one lookup per key', () => {
  it('an unknown key costs exactly one control-plane request, then is remembered', async () => {
    const key = randomKey();
    const before = await lookups();
    expect((await list(`/api/v2/mcp/server/${key}`)).status).toBe(401);
    expect(await lookups()).toBe(before + 1);
    expect((await list(`/api/v2/mcp/server/${key}`)).status).toBe(401);
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
    const res = await list(`/api/v2/mcp/server/${legacy.api_key}`);
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
    expect((await list(`/api/v2/mcp/server/${aei.api_key}`)).status).toBe(200);
    expect(await lookups()).toBe(before + 2);
    // Known now: the v1 URL refuses it without asking again.
    expect((await list(`/api/v1/mcp/server/${aei.api_key}`)).status).toBe(401);
    expect(await lookups()).toBe(before + 2);
  });
});

describe('lookup cap', () => {
  it('a burst of random keys reaches the control plane at most the cap; a cached key is unaffected', async () => {
    await refill();
    const known = `/api/v2/mcp/server/${exposed.apiKey}`;
    expect((await list(known)).status).toBe(200); // cached and fresh from here on
    const before = await lookups();
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 10 === 0 ? list(known) : list(`/api/v2/mcp/server/${randomKey()}`),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    const sent = (await lookups()) - before;
    // The bucket holds CAP tokens and refills CAP per second.
    expect(sent).toBeLessThanOrEqual(CAP + Math.floor(seconds * CAP));
    const random = answers.filter((_, i) => i % 10 !== 0);
    const refused = random.filter((a) => a.status === 429);
    expect(random.filter((a) => a.status === 401)).toHaveLength(sent);
    expect(refused).toHaveLength(random.length - sent);
    expect(refused[0]!.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused[0]!.text).error).toMatchObject({
      code: -32029,
      data: { code: 'RATE_LIMITED' },
    });
    for (const [i, answer] of answers.entries()) if (i % 10 === 0) expect(answer.status).toBe(200);
  });

  it('keys that exist do not spend the cap: more new keys than the cap are all served', async () => {
    await refill();
    const keys: string[] = [];
    for (let i = 0; i < CAP + 3; i++) {
      keys.push((await stack.admin('POST', '/api/v2/aeis', { name: `new-${i}` }, exposed.token)).api_key);
    }
    const before = await lookups();
    for (const key of keys) expect((await list(`/api/v2/mcp/server/${key}`)).status).toBe(200);
    expect(await lookups()).toBe(before + keys.length);
  });
});
