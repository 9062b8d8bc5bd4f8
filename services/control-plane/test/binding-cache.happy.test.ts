// Pins what the executor's binding cache must keep: tool calls find their binding in memory, and an
// admin change to a binding, its ADI, its AEI or its owner is seen by the very next call, on this
// control plane (dropped before the change is answered) and on another one (the gateway's
// config_version, and the Redis channel for calls that carry none).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BindingCache } from '../src/execution/binding-cache.ts';
import { INTERNAL_TOKEN, engine, startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { buildFixture, execute, toolAnswer, type Fixture } from './support/tools.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
const DATA = {
  customers: [
    { id: 1, name: 'Ada' },
    { id: 2, name: 'Grace' },
  ],
  archive: [{ id: 9, name: 'Old' }],
};

async function cacheLookups(t: TestApp): Promise<{ hit: number; miss: number; shared: number }> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
  const of = (result: string) => sample(text, 'controlplane_binding_cache_total', { result }) ?? 0;
  return { hit: of('hit'), miss: of('miss'), shared: of('shared') };
}

function refusal(res: Awaited<ReturnType<typeof execute>>): { code: string; message: string } {
  const answer = toolAnswer(res);
  expect(answer.isError).toBe(true);
  return answer.value.error;
}

/** The config_version a gateway holds once it has fetched the key's config again. */
async function gatewayConfigVersion(t: TestApp, f: Fixture): Promise<number> {
  const res = await t.call('GET', `/internal/keys/${f.apiKey}/config`, { token: INTERNAL_TOKEN });
  expect(res.status).toBe(200);
  return res.body.config.aei.config_version;
}

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('one control plane', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await buildFixture(t, DATA, {
      read: { json_path: '/customers', operation_type: 'get_all' },
      peek: { json_path: '/customers', operation_type: 'preview' },
    });
  });

  /** Calls `read` twice and checks the second call found its binding in memory. */
  async function warm(name = 'read'): Promise<void> {
    await execute(t, f, name);
    const before = await cacheLookups(t);
    await execute(t, f, name);
    const after = await cacheLookups(t);
    expect(after.hit).toBe(before.hit + 1);
    expect(after.miss).toBe(before.miss);
  }

  it('serves repeated calls from memory', async () => {
    await warm();
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual(DATA.customers);
  });

  it('sees a disabled binding, and its re-enabling, at the next call', async () => {
    await warm();
    const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.read!.bindingId}`;
    expect((await t.call('PATCH', path, { token: f.token, body: { enabled: false } })).status).toBe(200);
    expect(refusal(await execute(t, f, 'read'))).toMatchObject({ code: 'FORBIDDEN' });
    expect((await t.call('PATCH', path, { token: f.token, body: { enabled: true } })).status).toBe(200);
    expect(toolAnswer(await execute(t, f, 'read')).isError).toBe(false);
  });

  it("sees a binding's new schema override at the next call", async () => {
    await warm('peek');
    const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.peek!.bindingId}`;
    const narrowed = {
      type: 'object',
      properties: { limit: { type: 'integer', minimum: 1, maximum: 1, default: 1 } },
      additionalProperties: false,
    };
    const res = await t.call('PATCH', path, { token: f.token, body: { input_schema: narrowed } });
    expect(res.body).toMatchObject({ input_schema: narrowed });
    expect(refusal(await execute(t, f, 'peek', { limit: 2 }))).toMatchObject({ code: 'VALIDATION_FAILED' });
    await t.call('PATCH', path, { token: f.token, body: { input_schema: null } });
    expect(toolAnswer(await execute(t, f, 'peek', { limit: 2 })).isError).toBe(false);
  });

  it("sees an ADI's new json_path at the next call", async () => {
    await warm();
    const adi = `/api/v2/adis/${f.tools.read!.adiId}`;
    expect((await t.call('PATCH', adi, { token: f.token, body: { json_path: '/archive' } })).status).toBe(
      200,
    );
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual(DATA.archive);
    await t.call('PATCH', adi, { token: f.token, body: { json_path: '/customers' } });
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual(DATA.customers);
  });

  it('sees a disabled AEI and a disabled owner at the next call', async () => {
    await warm();
    const aei = `/api/v2/aeis/${f.aeiId}`;
    await t.call('PATCH', aei, { token: f.token, body: { status: 'disabled' } });
    expect(refusal(await execute(t, f, 'read')).message).toMatch(/exposure "agent" is disabled/);
    await t.call('PATCH', aei, { token: f.token, body: { status: 'enabled' } });
    await warm();

    const user = `/api/v2/users/${f.userId}`;
    expect((await t.call('PATCH', user, { body: { status: 'disabled' } })).status).toBe(200);
    expect(refusal(await execute(t, f, 'read')).message).toMatch(/is disabled/);
    expect((await t.call('PATCH', user, { body: { status: 'enabled' } })).status).toBe(200);
    expect(toolAnswer(await execute(t, f, 'read')).isError).toBe(false);
  });

  it('lets lookups that miss together share one database read', async () => {
    const g = await buildFixture(t, DATA, { fresh: { json_path: '/customers', operation_type: 'get_all' } });
    const counts = { hit: 0, miss: 0, shared: 0 };
    const counter = (key: keyof typeof counts) => ({ inc: () => (counts[key] += 1) });
    const cache = new BindingCache(100, {
      hit: counter('hit'),
      miss: counter('miss'),
      shared: counter('shared'),
      entries: { set: () => undefined },
    });
    const id = g.tools.fresh!.bindingId;
    const found = await Promise.all(Array.from({ length: 40 }, () => cache.get(t.database.prisma, id)));
    expect(new Set(found).size).toBe(1);
    expect(found[0]).toMatchObject({ id, toolName: 'fresh', enabled: true });
    expect(counts).toEqual({ hit: 0, miss: 1, shared: 39 });

    // A caller that has seen a newer config than the shared read found reads again.
    cache.clear();
    const [first, newer] = await Promise.all([
      cache.get(t.database.prisma, id),
      cache.get(t.database.prisma, id, found[0]!.aei.configVersion + 1),
    ]);
    expect(first).toBeDefined();
    expect(newer).toBeDefined();
    expect(counts).toEqual({ hit: 0, miss: 3, shared: 39 });
  });

  it('answers NOT_FOUND at the next call after the binding is deleted', async () => {
    const g = await buildFixture(t, DATA, { gone: { json_path: '/customers', operation_type: 'get_all' } });
    await execute(t, g, 'gone');
    const path = `/api/v2/aeis/${g.aeiId}/bindings/${g.tools.gone!.bindingId}`;
    expect((await t.call('DELETE', path, { token: g.token })).status).toBe(204);
    expect(refusal(await execute(t, g, 'gone'))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('reads every binding from the database with BINDING_CACHE_ENTRIES=0', async () => {
    const uncached = await startTestApp({ bindingCacheEntries: 0 });
    try {
      const g = await buildFixture(uncached, DATA, {
        read: { json_path: '/customers', operation_type: 'get_all' },
      });
      expect(toolAnswer(await execute(uncached, g, 'read')).isError).toBe(false);
      await execute(uncached, g, 'read');
      expect(await cacheLookups(uncached)).toEqual({ hit: 0, miss: 0, shared: 0 });
    } finally {
      await uncached.close();
    }
  });
});

describe.runIf(engine === 'postgres')('two control planes on one database', () => {
  it('the next call on the other one runs the changed binding, given the config_version a gateway sends', async () => {
    // No Redis here: the version the gateway sends is all the other control plane learns from.
    const other = await startTestApp({ sameDatabaseAs: t });
    try {
      const f = await buildFixture(t, DATA, { read: { json_path: '/customers', operation_type: 'get_all' } });
      const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.read!.bindingId}`;
      const adi = `/api/v2/adis/${f.tools.read!.adiId}`;
      for (let round = 0; round < 5; round += 1) {
        const version = await gatewayConfigVersion(other, f);
        await execute(other, f, 'read', {}, { config_version: version });
        await t.call('PATCH', path, { token: f.token, body: { enabled: false } });
        const disabled = await gatewayConfigVersion(other, f);
        expect(disabled).toBeGreaterThan(version);
        expect(refusal(await execute(other, f, 'read', {}, { config_version: disabled })).code).toBe(
          'FORBIDDEN',
        );
        await t.call('PATCH', path, { token: f.token, body: { enabled: true } });
        await t.call('PATCH', adi, { token: f.token, body: { json_path: '/archive' } });
        const moved = await gatewayConfigVersion(other, f);
        expect(toolAnswer(await execute(other, f, 'read', {}, { config_version: moved })).value).toEqual(
          DATA.archive,
        );
        await t.call('PATCH', adi, { token: f.token, body: { json_path: '/customers' } });
      }
    } finally {
      await other.close();
    }
  });

  it('with REDIS_URL, the other one drops its cached binding when told, even for calls without a version', async () => {
    const first = await startTestApp({ sameDatabaseAs: t, redisUrl: REDIS_URL });
    const second = await startTestApp({ sameDatabaseAs: t, redisUrl: REDIS_URL });
    // The first one publishes what it changes, as a control plane with REDIS_URL does.
    const { ExposureInvalidation } = await import('../src/exposure/exposure-invalidation.ts');
    const quiet = { debug() {}, info() {}, warn() {} };
    const publisher = new ExposureInvalidation({
      gatewayUrls: [],
      opsToken: undefined,
      redisUrl: REDIS_URL,
      log: quiet,
    });
    const relay = await startTestApp({
      sameDatabaseAs: t,
      listener: { configChanged: (ids) => void publisher.configChanged(ids) },
    });
    try {
      const f = await buildFixture(relay, DATA, {
        read: { json_path: '/customers', operation_type: 'get_all' },
      });
      expect(toolAnswer(await execute(second, f, 'read')).isError).toBe(false);
      expect(toolAnswer(await execute(first, f, 'read')).isError).toBe(false);
      const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.read!.bindingId}`;
      expect((await relay.call('PATCH', path, { token: f.token, body: { enabled: false } })).status).toBe(
        200,
      );
      await publisher.settled();
      // Pub/sub delivery is asynchronous: a bounded wait, far below the entries' 60 s lifetime.
      for (const app of [first, second]) {
        const deadline = Date.now() + 5_000;
        let answer = toolAnswer(await execute(app, f, 'read'));
        while (!answer.isError && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          answer = toolAnswer(await execute(app, f, 'read'));
        }
        expect(answer.value.error?.code).toBe('FORBIDDEN');
      }
    } finally {
      await relay.close();
      await publisher.close();
      await second.close();
      await first.close();
    }
  });
});
