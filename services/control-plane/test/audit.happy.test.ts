// Pins the audit trail's group commit, on PostgreSQL and on PGlite: a burst of 1,000 concurrent
// tool calls (sent at once over 128 connections, as a gateway's pool sends them) leaves exactly
// one row per call, each with its request id, written by fewer INSERTs than calls; a full queue makes new rows wait for room, never grow past its bound; and closing
// (the writer, or the app while calls wait for their rows) writes every row queued at once,
// without waiting for the flush delay.
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditWriter } from '../src/execution/audit-writer.ts';
import { createMetrics } from '../src/metrics.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { buildFixture, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { customers: [{ id: 1, name: 'Ada' }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
});
afterAll(() => t.close());

/** One `query` call with its own request id, through the internal executor API. */
function ask(app: TestApp, fixture: Fixture, requestId: string) {
  const tool = fixture.tools.ask!;
  return app.call('POST', `/internal/adi/${tool.adiId}/execute`, {
    token: INTERNAL_TOKEN,
    body: {
      aei_id: fixture.aeiId,
      binding_id: tool.bindingId,
      arguments: { query: 'length(@)' },
      request_id: requestId,
    },
  });
}

async function scrape(app: TestApp): Promise<string> {
  return (await fetch(`${app.baseUrl}/metrics`)).text();
}

async function requestIdsOf(app: TestApp, aeiId: string): Promise<string[]> {
  const rows = await app.database.prisma.auditEvent.findMany({
    where: { aeiId },
    select: { requestId: true },
  });
  return rows.map((row) => row.requestId ?? '(none)').sort();
}

/** An audit record as the executor makes one, with `requestId`. */
function record(requestId: string) {
  return {
    userId: 'usr_audit_writer_test',
    action: 'tool.execute',
    aeiId: 'aei_audit_writer_test',
    toolName: 'ask',
    operation: 'query',
    status: 'ok',
    durationMs: 1,
    args: { query: requestId },
    requestId,
  } as const;
}

describe('the audit trail under a burst', () => {
  it('has exactly one row per call after 1,000 concurrent calls, written by fewer INSERTs', async () => {
    const before = await scrape(t);
    const ids = Array.from({ length: 1_000 }, (_, i) => `burst-${String(i).padStart(4, '0')}`);
    const pool = new Pool(t.baseUrl, { connections: 128 });
    const tool = f.tools.ask!;
    const answers = await Promise.all(
      ids.map(async (id) => {
        const res = await pool.request({
          method: 'POST',
          path: `/internal/adi/${tool.adiId}/execute`,
          headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            aei_id: f.aeiId,
            binding_id: tool.bindingId,
            arguments: { query: 'length(@)' },
            request_id: id,
          }),
        });
        return { status: res.statusCode, body: await res.body.json() };
      }),
    );
    await pool.close();
    for (const answer of answers) {
      expect(answer).toEqual({
        status: 200,
        body: { content: [{ type: 'text', text: '1' }], structuredContent: { result: 1 } },
      });
    }

    expect(await requestIdsOf(t, f.aeiId)).toEqual(ids);
    const after = await scrape(t);
    const delta = (name: string) => (sample(after, name) ?? 0) - (sample(before, name) ?? 0);
    expect(delta('controlplane_audit_batch_rows_sum')).toBe(1_000);
    const inserts = delta('controlplane_audit_batch_rows_count');
    expect(inserts).toBeGreaterThan(0);
    expect(inserts).toBeLessThan(1_000);
    expect(delta('controlplane_audit_write_seconds_count')).toBe(1_000);
    expect(sample(after, 'controlplane_audit_writes_in_flight')).toBe(0);
  });
});

describe('the audit writer', () => {
  it('makes rows wait for room when its queue is full, and writes them all', async () => {
    const metrics = createMetrics();
    const writer = new AuditWriter(t.database.sql, {
      flushMs: 60_000,
      batchMax: 4,
      queueMax: 8,
      meter: metrics.audit,
    });
    const ids = Array.from({ length: 100 }, (_, i) => `room-${String(i).padStart(3, '0')}`);
    await Promise.all(ids.map((id) => writer.record(record(id))));

    expect(await requestIdsOf(t, 'aei_audit_writer_test')).toEqual(ids);
    const text = await metrics.registry.metrics();
    // The fourth row started a flush of four; the next eight filled the queue; the rest waited.
    expect(sample(text, 'controlplane_audit_queue_full_total')).toBe(100 - 4 - 8);
    // No INSERT carried more than a batch.
    expect(sample(text, 'controlplane_audit_batch_rows_bucket', { le: '4' })).toBe(100 / 4);
    expect(sample(text, 'controlplane_audit_batch_rows_count')).toBe(100 / 4);
    await writer.close();
    await t.database.prisma.auditEvent.deleteMany({ where: { aeiId: 'aei_audit_writer_test' } });
  });

  it('writes every row queued when it is closed, without waiting for the flush delay', async () => {
    const writer = new AuditWriter(t.database.sql, {
      flushMs: 60_000,
      batchMax: 500,
      queueMax: 5_000,
      meter: createMetrics().audit,
    });
    const ids = ['close-1', 'close-2', 'close-3'];
    const written = Promise.all(ids.map((id) => writer.record(record(id))));
    await writer.close();
    await written;
    expect(await requestIdsOf(t, 'aei_audit_writer_test')).toEqual(ids);
    await t.database.prisma.auditEvent.deleteMany({ where: { aeiId: 'aei_audit_writer_test' } });
  });
});

describe('closing the app', () => {
  it('writes the rows its calls wait for at once, although the flush delay is a minute', async () => {
    const app = await startTestApp({ audit: { auditFlushMs: 60_000 } });
    const fixture = await buildFixture(
      app,
      { customers: [{ id: 1 }] },
      { ask: { json_path: '/customers', operation_type: 'query' } },
    );
    try {
      const ids = ['shutdown-1', 'shutdown-2', 'shutdown-3', 'shutdown-4', 'shutdown-5'];
      const answers = Promise.all(ids.map((id) => ask(app, fixture, id)));
      // Every call has run and waits for its row, queued behind the one-minute delay.
      for (;;) {
        if (sample(await scrape(app), 'controlplane_audit_writes_in_flight') === ids.length) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await app.app.close();
      for (const answer of await answers) expect(toolAnswer(answer).isError).toBe(false);
      expect(await requestIdsOf(app, fixture.aeiId)).toEqual(ids);
    } finally {
      await app.close();
    }
  });
});
