// Pins what an operator scraping the control plane's GET /metrics sees: the latency of a tool call
// just made, by kind (context, legacy), operation and outcome (ok, error, refused); the audit row
// and the context write it caused; context-cache hits after a repeated read; the PostgreSQL pool's
// connection counts (none on PGlite); default process metrics. Each app has its own registry, and
// /metrics stays out of the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, engine, startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { buildFixture, execute, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { customers: [{ id: 1, name: 'Ada' }], notes: [] },
    {
      all: { json_path: '/customers', operation_type: 'get_all' },
      ask: { json_path: '/customers', operation_type: 'query' },
      add: { json_path: '/notes', operation_type: 'create' },
    },
  );
});
afterAll(() => t.close());

async function scrape(app: TestApp = t): Promise<string> {
  const res = await fetch(`${app.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

const executions = (text: string, kind: string, operation: string, outcome: string) =>
  sample(text, 'controlplane_tool_execution_seconds_count', { kind, operation, outcome }) ?? 0;

describe('GET /metrics', () => {
  it('shows the latency of a tool call just made, by kind, operation and outcome', async () => {
    const before = await scrape();
    toolAnswer(await execute(t, f, 'ask', { query: 'length(@)' }));
    const failed = toolAnswer(await execute(t, f, 'ask', { query: 'length(' }));
    expect(failed.value.error.code).toBe('INVALID_QUERY');
    const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.ask!.bindingId}`;
    await t.call('PATCH', path, { token: f.token, body: { enabled: false } });
    const refused = toolAnswer(await execute(t, f, 'ask', { query: 'length(@)' }));
    expect(refused.value.error.code).toBe('FORBIDDEN');

    const after = await scrape();
    for (const outcome of ['ok', 'error', 'refused']) {
      expect(
        executions(after, 'context', 'query', outcome) - executions(before, 'context', 'query', outcome),
      ).toBe(1);
    }
    const seconds = sample(after, 'controlplane_tool_execution_seconds_sum', {
      kind: 'context',
      operation: 'query',
      outcome: 'ok',
    });
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(30);
    // Every execution wrote one audit row, and none is still in flight.
    const audits = (text: string) => sample(text, 'controlplane_audit_write_seconds_count') ?? 0;
    expect(audits(after) - audits(before)).toBe(3);
    expect(sample(after, 'controlplane_audit_writes_in_flight')).toBe(0);
  });

  it('labels legacy v1 executions with their own kind', async () => {
    const created = await t.call('POST', '/api/v1/mcp', {
      token: f.token,
      body: { table_id: f.tableId, json_pointer: '/customers' },
    });
    const res = await t.call('POST', `/internal/mcp-instance/${created.body.id}/execute`, {
      token: INTERNAL_TOKEN,
      body: { tool_name: 'get_all_data' },
    });
    expect(toolAnswer(res).isError).toBe(false);
    expect(executions(await scrape(), 'legacy', 'get_all', 'ok')).toBe(1);
  });

  it('follows a context write through the row lock', async () => {
    const before = await scrape();
    toolAnswer(await execute(t, f, 'add', { value: { text: 'hello' } }));
    const after = await scrape();
    const count = (text: string, name: string, labels?: Record<string, string>) =>
      sample(text, name, labels) ?? 0;
    expect(
      count(after, 'controlplane_context_write_seconds_count', { outcome: 'committed' }) -
        count(before, 'controlplane_context_write_seconds_count', { outcome: 'committed' }),
    ).toBe(1);
    expect(
      count(after, 'controlplane_context_write_wait_seconds_count') -
        count(before, 'controlplane_context_write_wait_seconds_count'),
    ).toBe(1);
    expect(sample(after, 'controlplane_context_writes_waiting')).toBe(0);
    expect(sample(after, 'controlplane_context_writes_locked')).toBe(0);
    expect(executions(after, 'context', 'create', 'ok')).toBe(1);
  });

  it('counts context-cache hits after a repeated read, and what the cache holds', async () => {
    const hits = (text: string) => sample(text, 'controlplane_context_cache_total', { result: 'hit' }) ?? 0;
    const misses = (text: string) =>
      sample(text, 'controlplane_context_cache_total', { result: 'miss' }) ?? 0;
    // A new version of the table: the next read cannot be served from the cache.
    const replaced = await t.call('PUT', `/api/v2/tables/${f.tableId}/data`, {
      token: f.token,
      body: { customers: [{ id: 2, name: 'Grace' }], notes: [] },
    });
    expect(replaced.status).toBe(200);
    const before = await scrape();
    toolAnswer(await execute(t, f, 'all'));
    const first = await scrape();
    expect(misses(first) - misses(before)).toBe(1);
    expect(hits(first) - hits(before)).toBe(0);
    toolAnswer(await execute(t, f, 'all'));
    toolAnswer(await execute(t, f, 'all'));
    const third = await scrape();
    expect(hits(third) - hits(first)).toBe(2);
    expect(misses(third) - misses(first)).toBe(0);
    expect(sample(third, 'controlplane_context_cache_entries')).toBeGreaterThanOrEqual(1);
    expect(sample(third, 'controlplane_context_cache_bytes')).toBeGreaterThanOrEqual(
      JSON.stringify([{ id: 2, name: 'Grace' }]).length,
    );
  });

  it.runIf(engine === 'postgres')('reports the PostgreSQL pool', async () => {
    // Hold connections busy in parallel so the pool has opened more than one.
    await Promise.all(Array.from({ length: 4 }, () => execute(t, f, 'all')));
    const text = await scrape();
    const total = sample(text, 'controlplane_db_pool_connections');
    const idle = sample(text, 'controlplane_db_pool_idle_connections');
    expect(total).toBeGreaterThanOrEqual(1);
    expect(idle).toBeGreaterThanOrEqual(0);
    expect(idle).toBeLessThanOrEqual(total!);
    expect(sample(text, 'controlplane_db_pool_waiting_requests')).toBe(0);
    expect(sample(text, 'controlplane_db_pool_max_connections')).toBe(10);
  });

  it.runIf(engine === 'pglite')('reports no pool on the embedded database', async () => {
    expect(sample(await scrape(), 'controlplane_db_pool_connections')).toBeUndefined();
  });

  it('has the default process metrics under the same prefix', async () => {
    const text = await scrape();
    expect(sample(text, 'controlplane_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'controlplane_nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('keeps one registry per app: a second app in this process counts only its own calls', async () => {
    toolAnswer(await execute(t, f, 'ask', { query: 'length(@)' }));
    const other = await startTestApp();
    try {
      const text = await scrape(other);
      expect(executions(text, 'context', 'query', 'ok')).toBe(0);
      expect(sample(text, 'controlplane_process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(executions(await scrape(), 'context', 'query', 'ok')).toBeGreaterThanOrEqual(1);
    } finally {
      await other.close();
    }
  });

  it('stays out of the OpenAPI document', async () => {
    const doc = await t.call('GET', '/openapi.json', { token: null });
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).not.toContain('/metrics');
    expect(Object.keys(doc.body.paths)).toContain('/api/v2/tables');
  });
});
