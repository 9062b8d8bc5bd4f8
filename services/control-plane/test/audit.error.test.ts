// Pins that one audit row the database refuses fails only its own call, on PostgreSQL and on
// PGlite: ten calls whose rows share one INSERT, one of them carrying a request id a CHECK
// constraint of the test database refuses; the batch is written again row by row, nine calls are
// answered with their result and have their row, and the tenth is answered INTERNAL (its outcome
// could not be audited) and has none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { buildFixture, toolAnswer, type Fixture } from './support/tools.ts';

const BATCH = 10;
let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  // A batch is written once BATCH rows are queued (the delay would be a minute): the ten calls
  // below share one INSERT, whatever the timing.
  t = await startTestApp({ audit: { auditFlushMs: 60_000, auditBatchMax: BATCH } });
  f = await buildFixture(
    t,
    { customers: [{ id: 1, name: 'Ada' }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
  await t.database.prisma.$executeRawUnsafe(
    `ALTER TABLE audit_event ADD CONSTRAINT refuses_poison CHECK (request_id IS DISTINCT FROM 'poison')`,
  );
});
afterAll(() => t.close());

describe('an audit row the database refuses', () => {
  it('fails only its own call; the other rows of its batch are written', async () => {
    const before = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const ids = Array.from({ length: BATCH }, (_, i) => (i === 3 ? 'poison' : `fine-${i}`));
    const tool = f.tools.ask!;
    const answers = await Promise.all(
      ids.map((id) =>
        t.call('POST', `/internal/adi/${tool.adiId}/execute`, {
          token: INTERNAL_TOKEN,
          body: {
            aei_id: f.aeiId,
            binding_id: tool.bindingId,
            arguments: { query: 'length(@)' },
            request_id: id,
          },
        }),
      ),
    );

    const poisoned = answers[3]!;
    expect(poisoned.status).toBe(500);
    expect(poisoned.body.error.code).toBe('INTERNAL');
    expect(JSON.stringify(poisoned.body)).not.toContain('refuses_poison');
    for (const answer of answers.filter((_, i) => i !== 3)) {
      expect(toolAnswer(answer)).toEqual({ isError: false, value: 1 });
    }
    const rows = await t.database.prisma.auditEvent.findMany({
      where: { aeiId: f.aeiId },
      select: { requestId: true },
    });
    expect(rows.map((row) => row.requestId).sort()).toEqual(ids.filter((id) => id !== 'poison').sort());

    // The refused batch was written again one row at a time: nine INSERTs of one row.
    const after = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const delta = (name: string, labels?: Record<string, string>) =>
      (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(delta('controlplane_audit_batch_rows_count')).toBe(BATCH - 1);
    expect(delta('controlplane_audit_batch_rows_bucket', { le: '1' })).toBe(BATCH - 1);
    expect(sample(after, 'controlplane_audit_writes_in_flight')).toBe(0);
  });
});
