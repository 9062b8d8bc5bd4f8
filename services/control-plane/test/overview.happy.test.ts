// The console overview's two endpoints, on PostgreSQL and on PGlite. `GET /api/v2/audit/summary`:
// the caller's audit rows (written by real tool calls through the internal executor and by the
// audit writer) counted in their minutes, errors being `error` and `refused`; every minute of the
// window present, zeros included, oldest first; another user's rows never counted; `minutes` out of
// 1..1440 refused; the same counts in any database session time zone. `GET /api/v2/gateways`: each
// of GATEWAY_URLS (loopback servers this test starts, and a loopback port nothing listens on)
// probed at /readyz concurrently within the timeout, redirects not followed; empty without
// GATEWAY_URLS; the root user's demo exposure without its key.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MCP_SERVER_PATH } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { auditSummary } from '../src/audit/audit-summary.ts';
import { AuditWriter } from '../src/execution/audit-writer.ts';
import type { Principal } from '../src/domain/context.ts';
import type { AuditStatus } from '../src/audit/audit.ts';
import { DEMO_AEI } from '../src/demo.ts';
import { createMetrics } from '../src/metrics.ts';
import { ROOT_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { deadGatewayUrl } from './support/gateways.ts';
import { buildFixture, execute, toolAnswer, type Fixture } from './support/tools.ts';

const MINUTE = 60_000;

let t: TestApp;
let f: Fixture;
let other: { id: string; token: string };

function minuteOf(date: Date): string {
  return new Date(Math.floor(date.getTime() / MINUTE) * MINUTE).toISOString();
}

/** Rows as the executor writes them, for `userId`, through the app's own kind of audit writer. */
async function writeRows(userId: string, rows: { requestId: string; status: AuditStatus }[]): Promise<void> {
  const writer = new AuditWriter(t.database.sql, {
    flushMs: 0,
    batchMax: 100,
    queueMax: 100,
    meter: createMetrics().audit,
  });
  await Promise.all(
    rows.map((row) =>
      writer.record({
        userId,
        action: 'tool.execute',
        aeiId: f.aeiId,
        toolName: 'ask',
        operation: 'query',
        status: row.status,
        ...(row.status === 'error' && { errorCode: 'INTERNAL' as const }),
        durationMs: 1,
        args: {},
        requestId: row.requestId,
      }),
    ),
  );
  await writer.close();
}

async function moveRows(requestIds: string[], createdAt: Date): Promise<void> {
  await t.database.prisma.auditEvent.updateMany({
    where: { requestId: { in: requestIds } },
    data: { createdAt },
  });
}

/** What the summary should say from the caller's rows as stored: counts per created_at minute. */
async function expectedBuckets(
  userId: string,
  since: Date,
): Promise<Map<string, { calls: number; errors: number }>> {
  const rows = await t.database.prisma.auditEvent.findMany({
    where: { userId, createdAt: { gte: since } },
    select: { createdAt: true, status: true },
  });
  const buckets = new Map<string, { calls: number; errors: number }>();
  for (const row of rows) {
    const key = minuteOf(row.createdAt);
    const bucket = buckets.get(key) ?? { calls: 0, errors: 0 };
    bucket.calls += 1;
    if (row.status === 'error' || row.status === 'refused') bucket.errors += 1;
    buckets.set(key, bucket);
  }
  return buckets;
}

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { customers: [{ id: 1, name: 'Ada' }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
  other = await t.newUser('someone-else');
});
afterAll(() => t.close());

describe('GET /api/v2/audit/summary', () => {
  it('counts the caller’s calls and errors per minute, zero minutes included, oldest first', async () => {
    // Real calls: two that work, one whose query fails.
    expect(toolAnswer(await execute(t, f, 'ask', { query: 'length(@)' })).isError).toBe(false);
    expect(toolAnswer(await execute(t, f, 'ask', { query: '[0].name' })).isError).toBe(false);
    expect(toolAnswer(await execute(t, f, 'ask', { query: '[[[' })).isError).toBe(true);
    // Rows of every status, three minutes ago; one two hours ago; another user's, now.
    await writeRows(f.userId, [
      { requestId: 'past-ok', status: 'ok' },
      { requestId: 'past-error', status: 'error' },
      { requestId: 'past-refused', status: 'refused' },
      { requestId: 'past-replayed', status: 'replayed' },
      { requestId: 'long-ago', status: 'error' },
    ]);
    const threeMinutesAgo = new Date(Date.now() - 3 * MINUTE);
    await moveRows(['past-ok', 'past-error', 'past-refused', 'past-replayed'], threeMinutesAgo);
    await moveRows(['long-ago'], new Date(Date.now() - 120 * MINUTE));
    await writeRows(other.id, [
      { requestId: 'other-1', status: 'ok' },
      { requestId: 'other-2', status: 'error' },
      { requestId: 'other-3', status: 'refused' },
    ]);

    const before = Date.now();
    const res = await t.call('GET', '/api/v2/audit/summary', { token: f.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const summary = res.body;
    expect(summary.minutes).toBe(60);
    expect(summary.buckets).toHaveLength(60);
    // Contiguous minutes, oldest first, the last one the current minute.
    const starts = summary.buckets.map((b: { minute: string }) => Date.parse(b.minute));
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBe(MINUTE);
    expect(summary.from).toBe(summary.buckets[0].minute);
    expect(Date.parse(summary.to)).toBe(starts[59] + MINUTE);
    expect([minuteOf(new Date(before)), minuteOf(new Date(Date.now()))]).toContain(
      summary.buckets[59].minute,
    );

    // The three real calls (two ok, one error) and the four moved rows (two errors).
    const expected = await expectedBuckets(f.userId, new Date(starts[0]));
    const nonZero = summary.buckets.filter((b: { calls: number }) => b.calls > 0);
    expect(
      new Map(
        nonZero.map((b: { minute: string; calls: number; errors: number }) => [
          b.minute,
          { calls: b.calls, errors: b.errors },
        ]),
      ),
    ).toEqual(expected);
    expect(summary.buckets.find((b: { minute: string }) => b.minute === minuteOf(threeMinutesAgo))).toEqual({
      minute: minuteOf(threeMinutesAgo),
      calls: 4,
      errors: 2,
    });
    expect(summary.buckets.filter((b: { calls: number }) => b.calls === 0).length).toBeGreaterThanOrEqual(57);
    expect(summary.totals).toEqual({ calls: 7, errors: 3, error_rate: 3 / 7 });

    // Three hours back, the row of two hours ago is in.
    const longer = await t.call('GET', '/api/v2/audit/summary?minutes=180', { token: f.token });
    expect(longer.status).toBe(200);
    expect(longer.body.buckets).toHaveLength(180);
    expect(longer.body.totals).toEqual({ calls: 8, errors: 4, error_rate: 4 / 8 });
  });

  it('counts the same minutes whatever the database session’s time zone', async () => {
    const now = Date.now();
    const caller = { userId: f.userId } as Principal;
    const inUtc = await auditSummary(t.database.prisma, caller, { minutes: 180 }, now);
    expect(inUtc.totals.calls).toBeGreaterThan(0);
    for (const zone of ['Asia/Kolkata', 'America/Los_Angeles']) {
      const inZone = await t.database.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL TimeZone = '${zone}'`);
        return auditSummary(tx, caller, { minutes: 180 }, now);
      });
      expect(inZone, zone).toEqual(inUtc);
    }
  });

  it('never counts another user’s calls', async () => {
    const theirs = await t.call('GET', '/api/v2/audit/summary?minutes=5', { token: other.token });
    expect(theirs.status).toBe(200);
    expect(theirs.body.buckets).toHaveLength(5);
    expect(theirs.body.totals).toEqual({ calls: 3, errors: 2, error_rate: 2 / 3 });
    // Root owns no exposure here: nothing of either user.
    const root = await t.call('GET', '/api/v2/audit/summary');
    expect(root.status).toBe(200);
    expect(root.body.totals).toEqual({ calls: 0, errors: 0, error_rate: 0 });
    expect(
      root.body.buckets.every((b: { calls: number; errors: number }) => b.calls === 0 && b.errors === 0),
    ).toBe(true);
  });

  it('answers one minute, and refuses minutes out of 1..1440 and without a token', async () => {
    const one = await t.call('GET', '/api/v2/audit/summary?minutes=1', { token: f.token });
    expect(one.status).toBe(200);
    expect(one.body.buckets).toHaveLength(1);
    const day = await t.call('GET', '/api/v2/audit/summary?minutes=1440', { token: f.token });
    expect(day.status).toBe(200);
    expect(day.body.buckets).toHaveLength(1440);
    for (const minutes of ['0', '1441', '-5', '1.5', 'sixty']) {
      const res = await t.call('GET', `/api/v2/audit/summary?minutes=${minutes}`, { token: f.token });
      expect(res.status, minutes).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    expect((await t.call('GET', '/api/v2/audit/summary', { token: null })).status).toBe(401);
  });
});

describe('GET /api/v2/gateways', () => {
  let server: Server;
  let base: string;
  let followed = 0;
  let probes = 0;

  beforeAll(async () => {
    server = createServer((request, response) => {
      const path = request.url ?? '';
      if (path.endsWith('/readyz')) probes += 1;
      const json = (status: number, body: unknown) =>
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (path === '/ready/readyz')
        json(200, { status: 'ready', control_plane: 'the control plane answers' });
      else if (path === '/degraded/readyz') json(200, { status: 'degraded', control_plane: 'failing' });
      else if (path === '/waiting/readyz') json(503, { status: 'waiting', control_plane: 'not yet' });
      else if (path === '/redirect/readyz') response.writeHead(302, { location: `${base}/followed` }).end();
      else if (path === '/followed') {
        followed += 1;
        json(200, { status: 'ready' });
      } else if (path === '/html/readyz')
        response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hi</h1>');
      // /slow/readyz never answers.
      else if (path !== '/slow/readyz') json(404, { error: 'no' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('is an empty list without GATEWAY_URLS, with the public URL', async () => {
    const res = await t.call('GET', '/api/v2/gateways', { token: f.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ public_url: expect.any(String), gateways: [], demo: null });
  });

  it('probes every gateway at once, within the timeout, never following a redirect', async () => {
    const dead = await deadGatewayUrl();
    const urls = [
      `${base}/ready`,
      `${base}/degraded/`,
      `${base}/waiting`,
      `${base}/redirect`,
      `${base}/html`,
      `${base}/slow`,
      dead,
      `http://gw:s3cret-pass@127.0.0.1:${new URL(base).port}/ready?token=q-s3cret`,
    ];
    const app = await buildApp({
      config: {
        bodyLimitBytes: 1024 * 1024,
        logLevel: 'silent',
        internalToken: undefined,
        maxResultBytes: 1_000_000,
        gatewayUrls: urls,
        gatewayPublicUrl: 'http://127.0.0.1:4999',
      },
      engine: t.database.kind,
      domain: { prisma: t.database.prisma, listener: { configChanged: () => {} } },
      logger: false,
    });
    try {
      // The root user's demo exposure, as the seed names it.
      const demo = await t.call('POST', '/api/v2/aeis', { body: { name: DEMO_AEI } });
      expect(demo.status).toBe(201);

      const started = Date.now();
      const res = await app.inject({
        method: 'GET',
        url: '/api/v2/gateways',
        headers: { authorization: `Bearer ${ROOT_TOKEN}` },
      });
      const took = Date.now() - started;
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.public_url).toBe('http://127.0.0.1:4999');
      expect(body.gateways).toEqual([
        { url: `${base}/ready`, status: 'ready', http_status: 200, detail: 'the control plane answers' },
        { url: `${base}/degraded/`, status: 'degraded', http_status: 200, detail: 'failing' },
        { url: `${base}/waiting`, status: 'waiting', http_status: 503, detail: 'not yet' },
        {
          url: `${base}/redirect`,
          status: 'failing',
          http_status: 302,
          detail: 'answered a redirect (HTTP 302), not followed',
        },
        {
          url: `${base}/html`,
          status: 'failing',
          http_status: 200,
          detail: '/readyz answered HTTP 200, not as a gateway does',
        },
        { url: `${base}/slow`, status: 'unreachable', http_status: null, detail: 'no answer within 2 s' },
        { url: dead, status: 'unreachable', http_status: null, detail: 'connection refused (ECONNREFUSED)' },
        {
          url: `http://***:***@127.0.0.1:${new URL(base).port}/ready`,
          status: 'ready',
          http_status: 200,
          detail: 'the control plane answers',
        },
      ]);
      expect(followed).toBe(0);
      // Concurrently: the slow one's 2 s, not the sum.
      expect(took).toBeGreaterThanOrEqual(1_900);
      expect(took).toBeLessThan(5_000);
      expect(res.body).not.toContain('s3cret');
      // The demo: its name, id and the public MCP endpoint, never a key.
      expect(body.demo).toEqual({
        aei_id: demo.body.id,
        name: DEMO_AEI,
        mcp_url: `http://127.0.0.1:4999${MCP_SERVER_PATH}`,
      });
      expect(res.body).not.toContain(demo.body.api_key);

      // Any admin may ask: another user sees each gateway's state, not where it is nor what it
      // said, nor the root user's demo; within 5 s the same round of probes answers.
      const probesBefore = probes;
      const theirs = await app.inject({
        method: 'GET',
        url: '/api/v2/gateways',
        headers: { authorization: `Bearer ${f.token}` },
      });
      expect(theirs.statusCode).toBe(200);
      expect(theirs.json().demo).toBeNull();
      expect(theirs.json().gateways).toEqual(
        (body.gateways as { status: string; http_status: number | null }[]).map((probe, index) => ({
          url: `gateway ${index + 1}`,
          status: probe.status,
          http_status: probe.http_status,
          detail: probe.status,
        })),
      );
      expect(probes - probesBefore).toBe(0);
      const anonymous = await app.inject({ method: 'GET', url: '/api/v2/gateways' });
      expect(anonymous.statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });
});
