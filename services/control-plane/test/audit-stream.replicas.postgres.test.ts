// Pins the live audit stream with two control planes on one PostgreSQL database: a stream open on
// one sends the events of calls the other executed, in order, within two seconds, and a stream
// open on each sends every event once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { openStream } from './support/event-stream.ts';
import { buildFixture, type Fixture } from './support/tools.ts';

let first: TestApp;
let second: TestApp;
let f: Fixture;

beforeAll(async () => {
  first = await startTestApp();
  second = await startTestApp({ sameDatabaseAs: first });
  f = await buildFixture(
    first,
    { customers: [{ id: 1 }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
});
afterAll(async () => {
  await second?.close();
  await first?.close();
});

async function callOn(app: TestApp, requestId: string): Promise<void> {
  const tool = f.tools.ask!;
  const res = await app.call('POST', `/internal/adi/${tool.adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: {
      aei_id: f.aeiId,
      binding_id: tool.bindingId,
      arguments: { query: 'length(@)' },
      request_id: requestId,
    },
  });
  expect(res.status).toBe(200);
}

describe('the live audit stream with two control planes', () => {
  it('sends the events the other control plane wrote, once, in order', async () => {
    const onFirst = await openStream(first.baseUrl, f.token);
    const onSecond = await openStream(second.baseUrl, f.token);
    try {
      const ids = ['both-1', 'both-2', 'both-3', 'both-4'];
      for (const [index, id] of ids.entries()) await callOn(index % 2 === 0 ? first : second, id);
      for (const stream of [onFirst, onSecond]) {
        const got = [];
        for (let i = 0; i < ids.length; i++) got.push((await stream.next()).request_id);
        expect(got).toEqual(ids);
        expect(await stream.quiet(1_000)).toBe(true);
      }
    } finally {
      onFirst.close();
      onSecond.close();
    }
  });
});
