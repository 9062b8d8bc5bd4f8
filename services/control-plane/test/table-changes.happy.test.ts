// Pins the "table changed" signal gateways turn into MCP resources/updated (the gateway's own
// end-to-end test, gateway.resources-subscribe.happy.test.ts, drives it through a real gateway;
// here recording gateways show the wire format and the timing): a tool's write through the
// executor and the admin API's replacement of the data each POST {"table_changes": [{table_id,
// version}]} with the ops token to every gateway's /cache/invalidate, and with Redis publish it
// on bindery:config-invalidate; a burst of writes is coalesced (at most one message per window,
// the last one carrying the final version); a failed write signals nothing; a gateway that is down
// slows no write and is warned about once.
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigChangeListener } from '../src/domain/context.ts';
import {
  INVALIDATION_CHANNEL,
  type ExposureInvalidationOptions,
} from '../src/exposure/exposure-invalidation.ts';
import { startTestApp, type TestApp } from './support/app.ts';
import {
  deadGatewayUrl,
  recordingGateway,
  testInvalidation,
  TEST_OPS_TOKEN,
  type RecordingGateway,
} from './support/gateways.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
const WINDOW_MS = 150;

let t: TestApp;
let f: Fixture;
/** The listener the test app forwards to; each test installs its own invalidation. */
let current: ConfigChangeListener | undefined;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  t = await startTestApp({
    listener: {
      configChanged: (ids) => current?.configChanged(ids),
      tableChanged: (tableId, version) => current?.tableChanged?.(tableId, version),
    },
  });
  f = await buildFixture(t, { items: [] }, { add_item: { json_path: '/items', operation_type: 'create' } });
});
afterEach(async () => {
  current = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => t.close());

function signalTo(options: Partial<ExposureInvalidationOptions>) {
  const made = testInvalidation({ tableSignalWindowMs: WINDOW_MS, ...options }, cleanups);
  current = made.invalidation;
  return made;
}

async function gateway(): Promise<RecordingGateway> {
  const g = await recordingGateway();
  cleanups.push(() => g.close());
  return g;
}

const addItem = async (value: string) => {
  const answer = toolAnswer(await execute(t, f, 'add_item', { value }));
  expect(answer.isError).toBe(false);
};
const replaceData = (items: string[]) =>
  t.call('PUT', `/api/v2/tables/${f.tableId}/data`, { token: f.token, body: { items } });
const tableChanges = (g: RecordingGateway) =>
  g.requests.map(
    (r) => (JSON.parse(r.body) as { table_changes: { table_id: string; version: number }[] }).table_changes,
  );
const waitFor = async (done: () => boolean, timeoutMs = 3_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
};

describe('the table-changed signal', () => {
  it('a tool write and an admin replacement each POST the table and its version to every gateway', async () => {
    const [one, two] = [await gateway(), await gateway()];
    const { invalidation, log } = signalTo({ gatewayUrls: [one.url, two.url] });

    await addItem('first');
    let { version } = await tableState(t, f);
    await waitFor(() => one.requests.length === 1 && two.requests.length === 1);
    for (const g of [one, two]) {
      expect(g.requests).toHaveLength(1);
      expect(g.requests[0]).toMatchObject({ method: 'POST', path: '/cache/invalidate' });
      expect(g.requests[0]?.headers.authorization).toBe(`Bearer ${TEST_OPS_TOKEN}`);
      expect(g.requests[0]?.body).toBe(
        `{"table_changes":[{"table_id":"${f.tableId}","version":${version}}]}`,
      );
    }

    expect((await replaceData(['replaced'])).status).toBe(200);
    version += 1;
    await invalidation.settled();
    await waitFor(() => one.requests.length === 2);
    expect(tableChanges(one)[1]).toEqual([{ table_id: f.tableId, version }]);
    expect((await tableState(t, f)).version).toBe(version);
    expect(log.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('a burst of writes: at most one message per window, the last with the final version', async () => {
    const one = await gateway();
    signalTo({ gatewayUrls: [one.url] });
    const before = (await tableState(t, f)).version;
    const writes = 12;
    for (let i = 0; i < writes; i += 1) await addItem(`burst ${i}`);
    const final = before + writes;
    await waitFor(() => tableChanges(one).some((c) => c.some((x) => x.version === final)));
    await new Promise((r) => setTimeout(r, WINDOW_MS * 2));
    const versions = tableChanges(one).map((changes) => {
      expect(changes).toHaveLength(1);
      return changes[0]?.version ?? 0;
    });
    console.log(
      `${writes} writes, ${versions.length} table-changes messages: versions ${versions.join(', ')}`,
    );
    expect(versions.length).toBeLessThan(writes);
    expect(versions.at(-1)).toBe(final);
    // Increasing: a message never announces an older version than the one before it.
    expect([...versions].sort((a, b) => a - b)).toEqual(versions);
  });

  it('a failed write signals nothing', async () => {
    const one = await gateway();
    const { invalidation } = signalTo({ gatewayUrls: [one.url] });
    const refused = await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, {
      token: f.token,
      headers: { 'if-match': '"1"' },
      body: { items: [] },
    });
    expect(refused.status).toBe(412);
    await new Promise((r) => setTimeout(r, WINDOW_MS * 2));
    await invalidation.settled();
    expect(one.requests).toEqual([]);
  });

  it('a gateway that is down slows no write and is warned about once', async () => {
    const dead = await deadGatewayUrl();
    const { invalidation, log } = signalTo({ gatewayUrls: [dead] });
    const started = performance.now();
    for (let i = 0; i < 5; i += 1) {
      await addItem(`unheard ${i}`);
      await new Promise((r) => setTimeout(r, WINDOW_MS + 20));
    }
    const elapsed = performance.now() - started;
    await invalidation.settled();
    const warnings = log.lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      message: expect.stringContaining('table changes not delivered'),
      details: { target: dead },
    });
    // Five writes and their pauses, nothing waiting on the dead gateway.
    expect(elapsed).toBeLessThan(5 * (WINDOW_MS + 20) + 2_000);
  });

  it('with Redis, the same message is published on the invalidation channel', async () => {
    const subscriber = createClient({ url: REDIS_URL });
    await subscriber.connect();
    cleanups.push(async () => {
      await subscriber.unsubscribe(INVALIDATION_CHANNEL);
      await subscriber.quit();
    });
    const heard: string[] = [];
    await subscriber.subscribe(INVALIDATION_CHANNEL, (message) => {
      // The channel is shared: only this table's messages are this test's.
      if (message.includes(f.tableId)) heard.push(message);
    });
    const { invalidation, log } = signalTo({ redisUrl: REDIS_URL });
    await log.waitFor((l) => l.message === 'redis connected');
    await addItem('published');
    const { version } = await tableState(t, f);
    await waitFor(() => heard.length > 0);
    await invalidation.settled();
    expect(heard.map((m) => JSON.parse(m))).toEqual([{ table_changes: [{ table_id: f.tableId, version }] }]);
  });
});
