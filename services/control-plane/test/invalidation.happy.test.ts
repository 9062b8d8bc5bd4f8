// Pins how gateways hear about exposure changes: a real admin change makes the control plane POST
// {"aei_ids": [...]} with the ops token to every configured gateway's /cache/invalidate (one retry
// on a 5xx), a gateway that is down costs the admin nothing but a warning, and with Redis the same
// message is published on bindery:config-invalidate, asking its receivers to confirm: the change
// is answered once each has (a receiver that never does costs the announce bound and a warning).
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigChangeListener } from '../src/domain/context.ts';
import { ACK_CHANNEL } from '@bindery/service-kit';
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

const OPS_TOKEN = TEST_OPS_TOKEN;
const REDIS_URL = 'redis://127.0.0.1:6379';

let t: TestApp;
let user: { id: string; token: string };
/** The listener the test app forwards to; each test installs its own invalidation. */
let current: ConfigChangeListener | undefined;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  t = await startTestApp({ listener: { configChanged: (ids) => current?.configChanged(ids) } });
  user = await t.newUser('invalidation-user');
});
afterEach(async () => {
  current = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => t.close());

function invalidationTo(options: Partial<ExposureInvalidationOptions>) {
  const made = testInvalidation(options, cleanups);
  current = made.invalidation;
  return made;
}

async function gateway(answer?: Parameters<typeof recordingGateway>[0]): Promise<RecordingGateway> {
  const g = await recordingGateway(answer);
  cleanups.push(() => g.close());
  return g;
}

async function newAei(): Promise<string> {
  const res = await t.call('POST', '/api/v2/aeis', { token: user.token, body: { name: 'agent' } });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** A real admin change that bumps the AEI's config_version: a rename. */
async function renameAei(aeiId: string, name: string) {
  return t.call('PATCH', `/api/v2/aeis/${aeiId}`, { token: user.token, body: { name } });
}

describe('HTTP fan-out to gateways', () => {
  it('POSTs the changed AEI id with the ops token to /cache/invalidate of every gateway', async () => {
    const [one, two] = [await gateway(), await gateway()];
    const { invalidation, log } = invalidationTo({ gatewayUrls: [one.url, two.url] });
    const aeiId = await newAei();

    expect((await renameAei(aeiId, 'renamed agent')).status).toBe(200);
    await invalidation.settled();

    for (const g of [one, two]) {
      expect(g.requests).toHaveLength(1);
      const [request] = g.requests;
      expect(request).toMatchObject({ method: 'POST', path: '/cache/invalidate' });
      expect(request?.headers.authorization).toBe(`Bearer ${OPS_TOKEN}`);
      expect(request?.headers['content-type']).toBe('application/json');
      expect(JSON.parse(request?.body ?? '')).toEqual({ aei_ids: [aeiId] });
      expect(request?.body).toBe(`{"aei_ids":["${aeiId}"]}`);
    }
    expect(log.lines.filter((l) => l.level === 'warn')).toEqual([]);
    expect(log.lines.filter((l) => l.message === 'gateway cache invalidated')).toHaveLength(2);
  });

  it('names every AEI a change touched in one message', async () => {
    const g = await gateway();
    const { invalidation } = invalidationTo({ gatewayUrls: [g.url] });
    const [first, second] = [await newAei(), await newAei()];
    const table = await t.call('POST', '/api/v2/tables', {
      token: user.token,
      body: { name: 'shared', data: { items: [] } },
    });
    const adi = await t.call('POST', '/api/v2/adis', {
      token: user.token,
      body: { table_id: table.body.id, json_path: '/items', operation_type: 'get_all' },
    });
    for (const aeiId of [first, second]) {
      const bound = await t.call('POST', `/api/v2/aeis/${aeiId}/bindings`, {
        token: user.token,
        body: { adi_id: adi.body.id },
      });
      expect(bound.status).toBe(201);
    }
    await invalidation.settled();
    g.requests.length = 0;

    // Renaming the table changes the default descriptions of both exposures' tools.
    const renamed = await t.call('PATCH', `/api/v2/tables/${table.body.id}`, {
      token: user.token,
      body: { name: 'renamed' },
    });
    expect(renamed.status).toBe(200);
    await invalidation.settled();

    expect(g.requests).toHaveLength(1);
    const ids = JSON.parse(g.requests[0]?.body ?? '').aei_ids;
    expect([...ids].sort()).toEqual([first, second].sort());
  });

  it('retries once when a gateway answers 5xx', async () => {
    const g = await gateway((attempt, res) => res.writeHead(attempt === 1 ? 503 : 204).end());
    const { invalidation, log } = invalidationTo({ gatewayUrls: [g.url] });
    const aeiId = await newAei();

    expect((await renameAei(aeiId, 'retried')).status).toBe(200);
    await invalidation.settled();

    expect(g.requests).toHaveLength(2);
    expect(g.requests[1]?.body).toBe(`{"aei_ids":["${aeiId}"]}`);
    expect(log.lines.find((l) => l.message === 'gateway cache invalidated')?.details).toMatchObject({
      gateway: g.url,
      attempts: 2,
      status: 204,
    });
    expect(log.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('a gateway that is down fails nothing: the admin answer is 200, the others are told, a warning names it', async () => {
    const up = await gateway();
    const down = await deadGatewayUrl();
    const { invalidation, log } = invalidationTo({ gatewayUrls: [down, up.url] });
    const aeiId = await newAei();

    const res = await renameAei(aeiId, 'still renamed');
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('still renamed');
    await invalidation.settled();

    expect(up.requests).toHaveLength(1);
    const warnings = log.lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.details).toMatchObject({
      gateway: down,
      aei_ids: [aeiId],
      attempts: 2,
      code: 'ECONNREFUSED',
    });
    const after = await t.call('GET', `/api/v2/aeis/${aeiId}`, { token: user.token });
    expect(after.body).toMatchObject({ name: 'still renamed', config_version: 2 });
  });
});

describe('Redis fan-out', () => {
  it('publishes {"aei_ids": [...]} on bindery:config-invalidate', async () => {
    const subscriber = createClient({ url: REDIS_URL });
    await subscriber.connect();
    cleanups.push(() => subscriber.close());
    const received: string[] = [];
    await subscriber.subscribe(INVALIDATION_CHANNEL, (message) => void received.push(message));

    const { invalidation, log } = invalidationTo({ redisUrl: REDIS_URL });
    await log.waitFor((l) => l.message === 'redis connected');
    const aeiId = await newAei();

    expect((await renameAei(aeiId, 'published')).status).toBe(200);
    await invalidation.settled();

    // Other test files publish on the same channel: look for this AEI's message.
    const mine = () => received.map((m) => JSON.parse(m)).find((m) => m.aei_ids?.includes(aeiId));
    await expect.poll(mine, { timeout: 2_000 }).toMatchObject({ aei_ids: [aeiId] });
    // This test's own subscriber confirms nothing: the line is the warning of that.
    expect(log.lines.find((l) => l.message.startsWith('invalidation published'))?.details).toMatchObject({
      channel: 'bindery:config-invalidate',
      aei_ids: [aeiId],
    });
  });

  it('answers the change only once every receiver has confirmed it', async () => {
    const { invalidation, log } = invalidationTo({ redisUrl: REDIS_URL });
    await log.waitFor((l) => l.message === 'listening for confirmations');
    const aeiId = await newAei();
    // A receiver across a slow link: it confirms a while after the message reached Redis.
    const events: string[] = [];
    const subscriber = createClient({ url: REDIS_URL });
    const publisher = subscriber.duplicate();
    await Promise.all([subscriber.connect(), publisher.connect()]);
    cleanups.push(async () => {
      await subscriber.close();
      await publisher.close();
    });
    await subscriber.subscribe(INVALIDATION_CHANNEL, (raw) => {
      const message = JSON.parse(raw);
      if (!message.aei_ids?.includes(aeiId)) return;
      expect(typeof message.ack).toBe('string');
      setTimeout(() => {
        events.push('confirmed');
        void publisher.publish(ACK_CHANNEL, message.ack);
      }, 300);
    });

    expect((await renameAei(aeiId, 'confirmed')).status).toBe(200);
    events.push('answered');
    expect(events).toEqual(['confirmed', 'answered']);
    await invalidation.settled();
    // Other suites share this Redis, some with subscribers that confirm nothing: the line may be
    // the warning, but it counts this receiver's confirmation.
    const published = log.lines.find(
      (l) =>
        l.message.startsWith('invalidation published') &&
        (l.details.aei_ids as string[] | undefined)?.includes(aeiId),
    );
    expect(published?.details.confirmed).toBeGreaterThanOrEqual(1);
  });

  it('a receiver that never confirms costs the announce bound, and a warning says so', async () => {
    const { invalidation, log } = invalidationTo({ redisUrl: REDIS_URL, announceWaitMs: 200 });
    await log.waitFor((l) => l.message === 'listening for confirmations');
    const aeiId = await newAei();
    const silent = createClient({ url: REDIS_URL });
    await silent.connect();
    cleanups.push(() => silent.close());
    await silent.subscribe(INVALIDATION_CHANNEL, () => undefined);

    expect((await renameAei(aeiId, 'unconfirmed')).status).toBe(200);
    await invalidation.settled();
    const warning = await log.waitFor(
      (l) => l.level === 'warn' && l.message.startsWith('invalidation published'),
    );
    expect(warning.details).toMatchObject({ aei_ids: [aeiId] });
    expect(warning.details.confirmed as number).toBeLessThan(warning.details.receivers as number);
  });
});
