// Pins the byte bounds on what the gateway keeps per key and per session: the config cache,
// filled from a real control plane, holds at most CONFIG_CACHE_MAX_BYTES of estimated heap (twice
// the JSON it received, plus a fixed overhead per entry, plus the tools/list pages built from it),
// dropping the least recently used config first (it is fetched again when asked); a config's pages
// are built once and go with it; a lookup in flight across an invalidation is not cached; progressive session states are bounded by bytes too, and a state
// over the whole budget keeps its app but not its catalog answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimatedBytes, keyHash } from '../src/control-plane/exposure-cache.ts';
import { listPage } from '../src/mcp/tools/list.ts';
import { MemorySessionStore, type SessionState } from '../src/mcp/tools/progressive-sessions.ts';
import { standaloneCache } from './support/cache.ts';
import { INTERNAL_TOKEN, startStack, type Stack } from './support/stack.ts';

let stack: Stack;
const keys: string[] = [];

beforeAll(async () => {
  stack = await startStack();
  const user = await stack.admin('POST', '/api/v2/users', { name: 'memory' });
  const as = user.token as string;
  const table = await stack.admin('POST', '/api/v2/tables', { name: 'big', data: { items: [] } }, as);
  const adis: string[] = [];
  for (let i = 0; i < 12; i++) {
    const adi = await stack.admin(
      'POST',
      '/api/v2/adis',
      { table_id: table.id, json_path: '/items', operation_type: 'query', name: `query_${i}` },
      as,
    );
    adis.push(adi.id);
  }
  for (let k = 0; k < 3; k++) {
    const aei = await stack.admin('POST', '/api/v2/aeis', { name: `agent-${k}` }, as);
    await stack.admin(
      'POST',
      `/api/v2/aeis/${aei.id}/bindings`,
      adis.map((adi_id) => ({ adi_id })),
      as,
    );
    keys.push(aei.api_key);
  }
});
afterAll(() => stack?.close());

function cacheWith(maxBytes: number) {
  const { cache, client, total } = standaloneCache(stack, { maxBytes });
  return { cache, client, gauge: total };
}

describe('config cache', () => {
  it('a lookup in flight when an invalidation comes answers its waiters, but is neither joined nor cached', async () => {
    const { cache, client, gauge } = cacheWith(64 * 1024 * 1024);
    const first = cache.resolve(keys[0]!);
    // It may read the config from before the change the invalidation announces.
    cache.invalidate({ all: true });
    const second = cache.resolve(keys[0]!);
    expect((await first).exposure.kind).toBe('aei');
    await second;
    expect(await gauge('configFetches')).toBe(2);
    expect(cache.size).toBe(1);
    // Only the lookup sent after the invalidation was kept: a third waits for nothing.
    const fetches = await gauge('configFetches');
    await cache.resolve(keys[0]!);
    expect(await gauge('configFetches')).toBe(fetches);

    // Alone: its answer is given, and not kept.
    const alone = cache.resolve(keys[1]!);
    cache.invalidate({ apiKeys: [keys[2]!] });
    expect((await alone).exposure.kind).toBe('aei');
    expect(cache.size).toBe(1);
    await client.close();
  });

  it('estimates an entry at twice its JSON plus a fixed overhead', async () => {
    const { cache, client, gauge } = cacheWith(64 * 1024 * 1024);
    const res = await fetch(`${stack.controlPlaneUrl}/internal/keys/${keys[0]}/config`, {
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });
    const json = Buffer.byteLength(await res.text());
    await cache.resolve(keys[0]!);
    expect(await gauge('cacheBytes')).toBe(estimatedBytes(json));
    expect(estimatedBytes(json)).toBe(2 * json + 512);
    await client.close();
  });

  it('holds at most CONFIG_CACHE_MAX_BYTES, dropping the least recently used config first', async () => {
    const probe = cacheWith(64 * 1024 * 1024);
    await probe.cache.resolve(keys[0]!);
    const one = await probe.gauge('cacheBytes');
    await probe.client.close();

    // Room for two configs of this size, not three.
    const { cache, client, gauge } = cacheWith(Math.floor(one * 2.5));
    for (const key of keys) expect((await cache.resolve(key)).exposure.kind).toBe('aei');
    expect(await gauge('cacheEntries')).toBe(2);
    expect(await gauge('cacheBytes')).toBeLessThanOrEqual(Math.floor(one * 2.5));
    expect(cache.peek(keyHash(keys[0]!))).toBeUndefined();
    expect(cache.peek(keyHash(keys[2]!))).toBeDefined();
    // The dropped one is fetched again when asked.
    const fetches = await gauge('configFetches');
    await cache.resolve(keys[0]!);
    expect(await gauge('configFetches')).toBe(fetches + 1);
    expect(await gauge('cacheEntries')).toBe(2);
    await client.close();
  });
});

describe('tools/list pages of a cached config', () => {
  it('count in its bytes, are built once, and go with it', async () => {
    const { cache, client, gauge } = cacheWith(64 * 1024 * 1024);
    const exposure = (await cache.resolve(keys[0]!)).exposure;
    const config = await gauge('cacheBytes');
    const options = { pageSize: 5, client, charge: cache.charge.bind(cache) };
    const first = listPage(exposure, undefined, options);
    expect(first.result.tools).toHaveLength(5);
    expect(first.bytes).toBeGreaterThan(first.tail.length);
    expect(await gauge('cacheBytes')).toBe(config + first.bytes);
    // The same page again is the same bytes, and costs nothing more.
    expect(listPage(exposure, undefined, options)).toBe(first);
    const second = listPage(exposure, first.result.nextCursor, options);
    expect(second).not.toBe(first);
    expect(await gauge('cacheBytes')).toBe(config + first.bytes + second.bytes);

    // Dropped with the config: the next one builds pages of its own, counted anew.
    cache.invalidate({ apiKeys: [keys[0]!] });
    expect(await gauge('cacheBytes')).toBe(0);
    const fresh = (await cache.resolve(keys[0]!)).exposure;
    const rebuilt = listPage(fresh, undefined, options);
    expect(rebuilt).not.toBe(first);
    expect(rebuilt.tail.equals(first.tail)).toBe(true);
    expect(await gauge('cacheBytes')).toBe(config + rebuilt.bytes);
    // A page of the config no longer cached is still answered, and not counted.
    listPage(exposure, second.result.nextCursor, options);
    expect(await gauge('cacheBytes')).toBe(config + rebuilt.bytes);
    await client.close();
  });

  it('count toward CONFIG_CACHE_MAX_BYTES: building them can push the least recently used config out', async () => {
    const probe = cacheWith(64 * 1024 * 1024);
    await probe.cache.resolve(keys[0]!);
    const one = await probe.gauge('cacheBytes');
    await probe.client.close();

    // Room for two configs, not for two configs and a list of all of one's tools.
    const { cache, client, gauge } = cacheWith(2 * one + 1024);
    await cache.resolve(keys[0]!);
    const second = (await cache.resolve(keys[1]!)).exposure;
    expect(await gauge('cacheEntries')).toBe(2);
    const page = listPage(second, undefined, { pageSize: 100, client, charge: cache.charge.bind(cache) });
    expect(page.bytes).toBeGreaterThan(1024);
    expect(await gauge('cacheEntries')).toBe(1);
    expect(cache.peek(keyHash(keys[0]!))).toBeUndefined();
    expect(cache.peek(keyHash(keys[1]!))).toBe(second);
    expect(await gauge('cacheBytes')).toBe(one + page.bytes);
    await client.close();
  });
});

describe('progressive session state', () => {
  const stateOf = (apis: number): SessionState => ({
    app_id: 'crm',
    catalog: {
      version: 1,
      app_id: 'crm',
      apis: {
        customers: Array.from({ length: apis }, (_, i) => ({
          name: `api_${i}`,
          description: 'x'.repeat(100),
          category_id: 'customers',
        })),
      },
    },
  });

  it('keeps at most its byte budget, least recently used out first', async () => {
    const store = new MemorySessionStore(60_000, 16 * 1024);
    for (let i = 0; i < 20; i++) await store.set(`session-${i}`, stateOf(10));
    expect(store.bytes).toBeLessThanOrEqual(16 * 1024);
    expect(await store.get('session-0')).toBeUndefined();
    expect(await store.get('session-19')).toEqual(stateOf(10));
  });

  it('keeps the app of a state larger than the whole budget, without its catalog answers', async () => {
    const store = new MemorySessionStore(60_000, 16 * 1024);
    await store.set('huge', stateOf(500));
    expect(await store.get('huge')).toEqual({ app_id: 'crm' });
    expect(store.bytes).toBeLessThanOrEqual(16 * 1024);
  });
});
