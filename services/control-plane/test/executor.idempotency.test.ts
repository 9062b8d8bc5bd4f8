// Pins idempotent writes in the executor: a write retried with its idempotency key answers its
// first outcome and writes nothing (also when the retries race each other), the same key for
// another call is CONFLICT, keys belong to one exposure, failed writes are not remembered, reads
// ignore keys, legacy v1 tools take keys too, replays are audited as `replayed`, and expired
// records are deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpiredOutcomes } from '../src/kinds/idempotency.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { items: [], notes: {} },
    {
      add: { json_path: '/items', operation_type: 'create' },
      note: { json_path: '/notes', operation_type: 'create' },
      read: { json_path: '/items', operation_type: 'get_all' },
    },
  );
});
afterAll(() => t.close());

describe('a write retried with its key', () => {
  it('answers the first outcome again and writes once', async () => {
    const before = await tableState(t, f);
    const first = toolAnswer(await execute(t, f, 'add', { value: 'a' }, { idempotency_key: 'k-once' }));
    const retry = toolAnswer(await execute(t, f, 'add', { value: 'a' }, { idempotency_key: 'k-once' }));
    expect(first.isError).toBe(false);
    expect(retry).toEqual(first);
    const after = await tableState(t, f);
    expect(after.version).toBe(before.version + 1);
    expect(after.data.items.filter((x: string) => x === 'a')).toHaveLength(1);
  });

  it('writes once when twenty retries race, and retries are not metered as failed writes', async () => {
    const before = await tableState(t, f);
    const failedBefore = await writeCount('failed');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        execute(t, f, 'add', { value: 'race' }, { idempotency_key: 'k-race' }).then(toolAnswer),
      ),
    );
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    const after = await tableState(t, f);
    expect(after.version).toBe(before.version + 1);
    expect(after.data.items.filter((x: string) => x === 'race')).toHaveLength(1);
    // Retries that queued behind the first on the row lock end as skipped writes, never failed.
    expect(await writeCount('failed')).toBe(failedBefore);
  });

  it('is audited as replayed', async () => {
    await execute(t, f, 'add', { value: 'audited' }, { idempotency_key: 'k-audit' });
    await execute(t, f, 'add', { value: 'audited' }, { idempotency_key: 'k-audit' });
    const res = await t.call('GET', `/api/v2/audit?aei_id=${f.aeiId}&limit=2`, { token: f.token });
    expect(res.body.items.map((e: { status: string }) => e.status)).toEqual(['replayed', 'ok']);
    const replayed = await t.call('GET', `/api/v2/audit?status=replayed`, { token: f.token });
    expect(replayed.status).toBe(200);
    expect(replayed.body.items.length).toBeGreaterThan(0);
  });
});

describe('a key reused for something else', () => {
  it('is CONFLICT with other arguments, and nothing is written', async () => {
    await execute(t, f, 'add', { value: 'x' }, { idempotency_key: 'k-reuse' });
    const before = await tableState(t, f);
    const other = toolAnswer(await execute(t, f, 'add', { value: 'y' }, { idempotency_key: 'k-reuse' }));
    expect(other.isError).toBe(true);
    expect(other.value.error.code).toBe('CONFLICT');
    expect(other.value.error.message).toMatch(/already used for another call/);
    expect((await tableState(t, f)).version).toBe(before.version);
  });

  it('is CONFLICT on another tool of the same exposure', async () => {
    await execute(t, f, 'add', { value: 'z' }, { idempotency_key: 'k-tool' });
    const other = toolAnswer(
      await execute(t, f, 'note', { value: 'z', key: 'z' }, { idempotency_key: 'k-tool' }),
    );
    expect(other.value.error.code).toBe('CONFLICT');
  });

  it('writes again in another exposure: keys belong to one exposure', async () => {
    const g = await buildFixture(
      t,
      { items: [] },
      { add: { json_path: '/items', operation_type: 'create' } },
    );
    await execute(t, f, 'add', { value: 'mine' }, { idempotency_key: 'k-shared' });
    const theirs = toolAnswer(await execute(t, g, 'add', { value: 'mine' }, { idempotency_key: 'k-shared' }));
    expect(theirs.isError).toBe(false);
    expect((await tableState(t, g)).data.items).toEqual(['mine']);
  });
});

describe('what is not remembered', () => {
  it('a failed write: its retry runs again', async () => {
    const stale = { value: 'late', expected_version: 1 };
    const first = toolAnswer(await execute(t, f, 'add', stale, { idempotency_key: 'k-failed' }));
    expect(first.value.error.code).toBe('CONFLICT');
    const retry = toolAnswer(await execute(t, f, 'add', stale, { idempotency_key: 'k-failed' }));
    expect(retry.value.error.code).toBe('CONFLICT');
    expect(retry.value.error.details).toHaveProperty('current_version');
  });

  it('a read: keys are ignored', async () => {
    const one = toolAnswer(await execute(t, f, 'read', {}, { idempotency_key: 'k-read' }));
    await execute(t, f, 'add', { value: 'after-read' });
    const two = toolAnswer(await execute(t, f, 'read', {}, { idempotency_key: 'k-read' }));
    expect(two.value).toHaveLength(one.value.length + 1);
  });
});

describe('refused keys', () => {
  it.each([
    ['empty', ''],
    ['with a space', 'a b'],
    ['too long', 'k'.repeat(256)],
  ])('%s: 400 before anything runs', async (_name, key) => {
    const res = await execute(t, f, 'add', { value: 'never' }, { idempotency_key: key });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect((await tableState(t, f)).data.items).not.toContain('never');
  });
});

describe('legacy v1 tools', () => {
  it('take keys too', async () => {
    const created = await t.call('POST', '/api/v1/mcp', {
      token: f.token,
      body: { table_id: f.tableId, json_pointer: '/items' },
    });
    const run = () =>
      t.call('POST', `/internal/mcp-instance/${created.body.id}/execute`, {
        token: INTERNAL_TOKEN,
        body: { tool_name: 'create_data', arguments: { value: 'v1' }, idempotency_key: 'k-v1' },
      });
    const first = toolAnswer(await run());
    expect(toolAnswer(await run())).toEqual(first);
    expect((await tableState(t, f)).data.items.filter((x: string) => x === 'v1')).toHaveLength(1);
  });
});

describe('expiry', () => {
  it('deletes records older than the TTL, and a retry after that writes again', async () => {
    await execute(t, f, 'add', { value: 'old' }, { idempotency_key: 'k-old' });
    await t.database.prisma.idempotencyRecord.updateMany({
      where: { key: 'k-old' },
      data: { createdAt: new Date(Date.now() - 2 * 3_600_000) },
    });
    expect(await purgeExpiredOutcomes(t.database.prisma, 3_600_000)).toBeGreaterThanOrEqual(1);
    await execute(t, f, 'add', { value: 'old' }, { idempotency_key: 'k-old' });
    expect((await tableState(t, f)).data.items.filter((x: string) => x === 'old')).toHaveLength(2);
  });

  it('ignores an expired record the purge has not reached yet: the key is free again', async () => {
    await execute(t, f, 'add', { value: 'stale' }, { idempotency_key: 'k-stale' });
    // Older than the default 24 hours, and no purge runs in between.
    await t.database.prisma.idempotencyRecord.updateMany({
      where: { key: 'k-stale' },
      data: { createdAt: new Date(Date.now() - 25 * 3_600_000) },
    });
    const again = toolAnswer(await execute(t, f, 'add', { value: 'stale' }, { idempotency_key: 'k-stale' }));
    expect(again.isError).toBe(false);
    expect((await tableState(t, f)).data.items.filter((x: string) => x === 'stale')).toHaveLength(2);
    // The fresh outcome is what a retry now gets back.
    expect(
      toolAnswer(await execute(t, f, 'add', { value: 'stale' }, { idempotency_key: 'k-stale' })),
    ).toEqual(again);
    expect((await tableState(t, f)).data.items.filter((x: string) => x === 'stale')).toHaveLength(2);
  });
});

/** How many context writes ended with `outcome`, from the control plane's /metrics. */
async function writeCount(outcome: 'committed' | 'failed' | 'skipped'): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
  return sample(text, 'controlplane_context_write_seconds_count', { outcome }) ?? 0;
}
