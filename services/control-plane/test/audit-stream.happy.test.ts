// Pins the live audit trail, `GET /api/v2/audit/stream`, on PostgreSQL and on PGlite: the events
// written after a stream opened arrive in order within two seconds, as `event: audit` messages
// with their id; its filters apply; Last-Event-ID resumes after an event; a row committed late
// (as another control plane's can be) still arrives, once; a user never sees another's events;
// a user has at most five streams open (429 beyond); closing the last stream stops the poller.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditIdFloor } from '../src/audit/audit-stream.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { openStream, type OpenStream } from './support/event-stream.ts';
import { buildFixture, type Fixture } from './support/tools.ts';

let t: TestApp;
let alice: Fixture;
let bob: Fixture;
const streams: OpenStream[] = [];

beforeAll(async () => {
  t = await startTestApp();
  const specs = {
    ask: { json_path: '/customers', operation_type: 'query' },
    everything: { json_path: '/customers', operation_type: 'get_all' },
  };
  alice = await buildFixture(t, { customers: [{ id: 1, name: 'Ada' }] }, specs);
  bob = await buildFixture(t, { customers: [{ id: 2, name: 'Bo' }] }, specs);
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await t.close();
});

async function open(
  fixture: Fixture,
  query: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<OpenStream> {
  const stream = await openStream(t.baseUrl, fixture.token, query, headers);
  streams.push(stream);
  return stream;
}

/** One call of `tool` with request id `requestId`, through the internal executor API. */
async function call(fixture: Fixture, tool: 'ask' | 'everything', requestId: string): Promise<void> {
  const bound = fixture.tools[tool]!;
  const res = await t.call('POST', `/internal/adi/${bound.adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: {
      aei_id: fixture.aeiId,
      binding_id: bound.bindingId,
      arguments: tool === 'ask' ? { query: 'length(@)' } : {},
      request_id: requestId,
    },
  });
  expect(res.status).toBe(200);
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`still not ${what} after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function closeAll(): Promise<void> {
  for (const stream of streams.splice(0)) stream.close();
  await until(() => t.app.auditStreams.open === 0, 'every stream closed');
}

describe('the live audit stream', () => {
  it('sends the events written after it opened, in order, within two seconds', async () => {
    await call(alice, 'ask', 'before-open');
    const stream = await open(alice);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('cache-control')).toBe('no-store');
    for (const id of ['live-1', 'live-2', 'live-3']) await call(alice, 'ask', id);
    const started = Date.now();
    const events = [await stream.next(), await stream.next(), await stream.next()];
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(events.map((e) => e.request_id)).toEqual(['live-1', 'live-2', 'live-3']);
    for (const event of events) {
      expect(event.sse_id).toBe(event.id);
      expect(event).toMatchObject({
        action: 'tool.execute',
        aei_id: alice.aeiId,
        tool_name: 'ask',
        status: 'ok',
      });
    }
    expect(await stream.quiet(800)).toBe(true);
    await closeAll();
  });

  it('applies its filters: tool, status, exposure', async () => {
    const byTool = await open(alice, { tool_name: 'everything' });
    const failed = await open(alice, { status: 'error' });
    const otherExposure = await open(alice, { aei_id: bob.aeiId });
    await call(alice, 'ask', 'filter-ask');
    await call(alice, 'everything', 'filter-everything');
    expect((await byTool.next()).request_id).toBe('filter-everything');
    expect(await byTool.quiet(800)).toBe(true);
    expect(await failed.quiet(200)).toBe(true);
    expect(await otherExposure.quiet(200)).toBe(true);
    await closeAll();
  });

  it('answers 400 for a filter out of its schema', async () => {
    const stream = await open(alice, { status: 'sideways' });
    expect(stream.status).toBe(400);
    expect(stream.error.error.code).toBe('VALIDATION_FAILED');
    expect(t.app.auditStreams.open).toBe(0);
  });

  it('resumes after Last-Event-ID: the events missed first, then the live ones, none twice', async () => {
    const first = await open(alice);
    await call(alice, 'ask', 'resume-1');
    const seen = await first.next();
    expect(seen.request_id).toBe('resume-1');
    await closeAll();
    await call(alice, 'ask', 'resume-2');
    await call(alice, 'everything', 'resume-3');

    const again = await open(alice, {}, { 'last-event-id': seen.id });
    expect(again.status).toBe(200);
    expect((await again.next()).request_id).toBe('resume-2');
    expect((await again.next()).request_id).toBe('resume-3');
    await call(alice, 'ask', 'resume-4');
    expect((await again.next()).request_id).toBe('resume-4');
    expect(await again.quiet(1_200)).toBe(true);

    // With a filter, the missed events are filtered too.
    const filtered = await open(alice, { tool_name: 'everything' }, { 'last-event-id': seen.id });
    expect((await filtered.next()).request_id).toBe('resume-3');
    expect(await filtered.quiet(1_200)).toBe(true);
    await closeAll();
  });

  it('answers 400 for a Last-Event-ID that is not one of your events', async () => {
    await call(bob, 'ask', 'bob-anchor');
    const [bobs] = (await t.call('GET', '/api/v2/audit?limit=1', { token: bob.token })).body.items;
    for (const id of [bobs.id, 'evt_nothing', 'not an id']) {
      const stream = await open(alice, {}, { 'last-event-id': id });
      expect(stream.status, id).toBe(400);
      expect(stream.error.error.code).toBe('VALIDATION_FAILED');
      expect(stream.error.error.message).toMatch(/Last-Event-ID/);
    }
    expect(t.app.auditStreams.open).toBe(0);
  });

  it('sends a row committed late, with an id before one already sent, once', async () => {
    const stream = await open(alice);
    await call(alice, 'ask', 'on-time');
    const onTime = await stream.next();
    expect(onTime.request_id).toBe('on-time');
    // A row whose id was made a second ago, committed after the one just sent: another control
    // plane's INSERT that finished later than this one's, or whose clock is a little behind.
    const lateId = `${auditIdFloor(Date.now() - 1_000)}${'0'.repeat(16)}`;
    expect(lateId < onTime.id).toBe(true);
    await t.database.prisma.auditEvent.create({
      data: {
        id: lateId,
        userId: alice.userId,
        action: 'tool.execute',
        aeiId: alice.aeiId,
        toolName: 'ask',
        status: 'ok',
        requestId: 'committed-late',
      },
    });
    expect(await stream.next()).toMatchObject({ id: lateId, request_id: 'committed-late' });
    expect(await stream.quiet(1_200)).toBe(true);
    await closeAll();
  });

  it("never sends another user's events", async () => {
    // Alice's stream is open too: the poller reads her rows, and hands them to her streams only.
    const alices = await open(alice);
    const bobs = await open(bob);
    await call(alice, 'ask', 'alice-private');
    await call(bob, 'ask', 'bob-own');
    expect((await bobs.next()).request_id).toBe('bob-own');
    expect(await bobs.quiet(800)).toBe(true);
    expect((await alices.next()).request_id).toBe('alice-private');
    await closeAll();
  });

  it('opens at most five streams per user: the sixth answers 429, another user still gets one', async () => {
    const five = [];
    for (let i = 0; i < 5; i++) five.push(await open(alice));
    expect(five.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await open(alice);
    expect(sixth.status).toBe(429);
    expect(sixth.error.error.code).toBe('RATE_LIMITED');
    expect(sixth.error.error.message).toMatch(/at most 5 audit streams/);
    expect((await open(bob)).status).toBe(200);
    five[0]!.close();
    await until(() => t.app.auditStreams.open === 5, 'down to five streams');
    expect((await open(alice)).status).toBe(200);
    await closeAll();
  });

  it('stops polling once its last stream is closed', async () => {
    const a = await open(alice);
    const b = await open(bob);
    await call(alice, 'ask', 'poll-1');
    await a.next();
    expect(t.app.auditStreams.open).toBe(2);
    expect(t.app.auditStreams.polling).toBe(true);
    a.close();
    await until(() => t.app.auditStreams.open === 1, 'one stream left');
    expect(t.app.auditStreams.polling).toBe(true);
    b.close();
    streams.splice(0);
    await until(() => t.app.auditStreams.open === 0, 'no stream left');
    await until(() => !t.app.auditStreams.polling, 'stopped polling');
    // And stays stopped.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(t.app.auditStreams.polling).toBe(false);
  });

  it('sends keep-alive comments, and refuses a stream over the server-wide limit', async () => {
    const app = await startTestApp({ auditStreams: { keepAliveMs: 100, total: 2 } });
    const opened: OpenStream[] = [];
    try {
      const [one, two] = [await app.newUser('one'), await app.newUser('two')];
      opened.push(await openStream(app.baseUrl, one.token), await openStream(app.baseUrl, two.token));
      expect(opened.map((s) => s.status)).toEqual([200, 200]);
      const third = await openStream(app.baseUrl, one.token);
      expect(third.status).toBe(429);
      expect(third.error.error.message).toMatch(/2 audit streams open, its limit/);
      expect(await opened[0]!.quiet(350)).toBe(true);
      expect(opened[0]!.comments[0]).toBe('live');
      expect(opened[0]!.comments.filter((c) => c === 'keep-alive').length).toBeGreaterThanOrEqual(2);
    } finally {
      for (const stream of opened) stream.close();
      await app.close();
    }
  });

  it('ends its open streams when the app closes', async () => {
    const app = await startTestApp();
    try {
      const user = await app.newUser('closing');
      const stream = await openStream(app.baseUrl, user.token);
      expect(stream.status).toBe(200);
      await app.app.close();
      await expect(stream.next(2_000)).rejects.toThrow(/ended/);
      expect(app.app.auditStreams.open).toBe(0);
    } finally {
      await app.close();
    }
  });
});
