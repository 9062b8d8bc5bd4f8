// Pins query budgets through the real internal execute route, on both engines: the reproductions
// that killed or froze the control plane (two crash queries, a nested map over 1,000 items) answer
// a tool error while the control plane keeps answering, and while a hostile query runs the event
// loop is never held 100 ms and cheap calls keep answering. Also pins the worker path
// itself: a query that outgrows the in-process slice is answered by a worker thread, and the same
// query again skips the slice; a worker that runs out of heap is replaced; a full queue answers
// RATE_LIMITED with a retry hint; one tenant flooding the pool is refused past its share while
// another tenant's long query still runs; legacy v1 tools run under the same budget; a binding
// override's `pattern` checks an agent's argument in linear time, and means at call time what it
// meant when saved.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../src/generated/prisma/client.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { buildFixture, execute, toolAnswer, type Fixture } from './support/tools.ts';

const ITEMS = Array.from({ length: 1_000 }, (_, i) => i);
const TOOLS = {
  items: { json_path: '/items', operation_type: 'query' },
  small: { json_path: '/small', operation_type: 'query' },
} as const;
const DATA = { items: ITEMS, small: { name: 'small', values: [1, 2, 3] } };

/** `map(&map(&...map(&@, $)..., $), $)`: `depth` maps over the 1,000-item root, nested. */
function nestedMap(depth: number): string {
  return depth === 1 ? 'map(&@, $)' : `map(&${nestedMap(depth - 1)}, $)`;
}

async function query(t: TestApp, f: Fixture, tool: string, expression: string) {
  const started = performance.now();
  const answer = toolAnswer(await execute(t, f, tool, { query: expression }));
  return { ...answer, elapsed: performance.now() - started };
}

async function stillAnswers(t: TestApp): Promise<void> {
  const health = await t.call('GET', '/healthz', { token: null });
  expect(health.status).toBe(200);
}

/** One sample of the control plane's /metrics (0 when the series has none yet). */
async function metric(t: TestApp, name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${t.baseUrl}/metrics`);
  return sample(await res.text(), name, labels) ?? 0;
}

/** Waits until the query pool's running and queued counts, as /metrics shows them, are these. */
async function poolReaches(t: TestApp, running: number, queued: number): Promise<void> {
  const until = performance.now() + 10_000;
  for (;;) {
    const now = [
      await metric(t, 'controlplane_query_pool_running'),
      await metric(t, 'controlplane_query_pool_queued'),
    ];
    if (now[0] === running && now[1] === queued) return;
    if (performance.now() > until)
      throw new Error(`the pool stayed at ${now.join('/')}, not ${running}/${queued}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('the reproductions, with the default budget (1 s)', () => {
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await buildFixture(t, DATA, TOOLS);
    // A query past the slice starts the worker, as one long has on a serving control plane. Its own
    // answer does not matter here (on a starved machine it may run out of time).
    await query(t, f, 'items', 'sum(map(&length(map(&[@, @], $)), @))');
  });
  afterAll(() => t?.close());

  it("replace('a','a','b',`1000000000`) answers at once and the control plane stays up", async () => {
    const res = await query(t, f, 'items', "replace('a','a','b',`1000000000`)");
    // Only real occurrences are walked: there is one, so the answer is "b", not a billion-slot array.
    expect(res).toMatchObject({ isError: false, value: 'b' });
    expect(res.elapsed).toBeLessThan(3_000);
    await stillAnswers(t);
  });

  it("length(pad_left('a',`500000000`)) answers LIMIT_EXCEEDED and the control plane stays up", async () => {
    const res = await query(t, f, 'items', "length(pad_left('a',`500000000`))");
    expect(res.isError).toBe(true);
    expect(res.value.error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { limit: 'string_length' } });
    await stillAnswers(t);
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
  });

  it.each([6, 10])(
    'a map nested %i deep over 1,000 items answers LIMIT_EXCEEDED within about the budget; meanwhile the event loop is never held 100 ms',
    async (depth) => {
      // The client shares this process with the control plane, so a blocked event loop would also
      // delay the client's own timers: each cheap call's latency is counted from when it was due,
      // not from when it could start, which is what a separate client would see. The event loop's
      // delay is measured too: on it, the hostile query may only take its 10 ms slice.
      const delay = monitorEventLoopDelay({ resolution: 10 });
      const started = performance.now();
      let hostileDone = Infinity;
      delay.enable();
      const hostile = query(t, f, 'items', nestedMap(depth)).finally(() => (hostileDone = performance.now()));
      const cheap: number[] = [];
      for (let i = 0; i < 8; i += 1) {
        // Past the in-process slice (10 ms): the hostile query is in a worker thread by then.
        const due = started + 150 + i * 50;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
        if (due > hostileDone) break;
        const res = await query(t, f, 'small', 'values[1]');
        expect(res.value).toBe(2);
        cheap.push(performance.now() - due);
      }
      const res = await hostile;
      delay.disable();
      expect(res.isError).toBe(true);
      expect(res.value.error.code).toBe('LIMIT_EXCEEDED');
      expect(['time', 'memory', 'steps']).toContain(res.value.error.details.limit);
      expect(res.value.error.message).toMatch(/avoid nesting map\(\)/);
      expect(res.elapsed).toBeLessThan(4_000);
      // The strict measure: the longest the event loop was held (the histogram is in nanoseconds;
      // the query run in-process held it about a second; on a host shared with other suites a
      // descheduled process shows about 100 ms of it, so the bound is 250 ms). Cheap calls also wait for the database
      // (on PGlite, on this same thread) and for a CPU shared with other suites, so their bound is
      // looser, yet one a blocked loop fails: the call due 150 ms in would wait 850 ms.
      const held = delay.max / 1e6;
      expect(held, `event loop held ${held} ms; cheap calls ${cheap.join(', ')} ms`).toBeLessThan(250);
      expect(cheap.length).toBeGreaterThan(0);
      expect(Math.max(...cheap), `cheap calls ${cheap.join(', ')} ms`).toBeLessThan(500);
    },
  );

  it("a binding override's pattern checks a long argument at once (it backtracked exponentially)", async () => {
    const patched = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.small!.bindingId}`, {
      token: f.token,
      body: {
        input_schema: {
          type: 'object',
          properties: { query: { type: 'string', minLength: 1, pattern: '^(a+)+$' } },
          required: ['query'],
          additionalProperties: false,
        },
      },
    });
    expect(patched.status).toBe(200);
    const res = await query(t, f, 'small', `${'a'.repeat(5_000)}!`);
    expect(res.value.error.code).toBe('VALIDATION_FAILED');
    expect(res.value.error.message).toContain('must match pattern');
    expect(res.elapsed).toBeLessThan(3_000);
    await stillAnswers(t);
    const reset = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.small!.bindingId}`, {
      token: f.token,
      body: { input_schema: null },
    });
    expect(reset.status).toBe(200);
  });

  it('a pattern whose checks took seconds is refused when the override is saved, naming it; a normal one is saved', async () => {
    const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.small!.bindingId}`;
    const override = (pattern: string) => ({
      input_schema: {
        type: 'object',
        properties: { query: { type: 'string', minLength: 1, pattern } },
        required: ['query'],
        additionalProperties: false,
      },
    });
    const started = performance.now();
    const refused = await t.call('PATCH', path, { token: f.token, body: override('(?:[a-c]|ab){700,999}$') });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    expect(refused.body.error.message).toContain(
      'pattern "(?:[a-c]|ab){700,999}$" is too complex to check quickly',
    );
    const saved = await t.call('PATCH', path, { token: f.token, body: override('^[a-z]{1,64}$') });
    expect(saved.status).toBe(200);
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
    expect((await query(t, f, 'small', 'values[0]')).value.error.code).toBe('VALIDATION_FAILED');
    expect((await t.call('PATCH', path, { token: f.token, body: { input_schema: null } })).status).toBe(200);
  });

  it("an override means at call time what it meant when saved: its format is checked, \\s is JavaScript's", async () => {
    // Arguments were checked by a second ajv set-up without formats: "format" was saved and ignored.
    const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.small!.bindingId}`;
    const override = (query: Record<string, unknown>) => ({
      input_schema: {
        type: 'object',
        properties: { query: { type: 'string', minLength: 1, ...query } },
        required: ['query'],
        additionalProperties: false,
      },
    });
    expect(
      (await t.call('PATCH', path, { token: f.token, body: override({ format: 'email' }) })).status,
    ).toBe(200);
    const refused = await query(t, f, 'small', 'name');
    expect(refused.value.error.code).toBe('VALIDATION_FAILED');
    expect(refused.value.error.message).toContain('must match format "email"');
    // An address passes the schema and reaches the engine, which cannot read it as JMESPath.
    expect((await query(t, f, 'small', 'a@example.com')).value.error.code).toBe('INVALID_QUERY');
    expect(
      (await t.call('PATCH', path, { token: f.token, body: override({ pattern: '^\\S+$' }) })).status,
    ).toBe(200);
    // U+2003 (em space) is white space in JavaScript; RE2's own \S would take it.
    const spaced = await query(t, f, 'small', 'values\u2003');
    expect(spaced.value.error.code).toBe('VALIDATION_FAILED');
    expect(spaced.value.error.message).toContain('must match pattern');
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
    expect((await t.call('PATCH', path, { token: f.token, body: { input_schema: null } })).status).toBe(200);
  });

  it('an override saved before patterns ran on RE2, and one RE2 cannot run, answers a tool error naming the tool', async () => {
    // Saving it is refused now; a row from before is written directly, as an old database holds it.
    await t.database.prisma.aeiBinding.update({
      where: { id: f.tools.small!.bindingId },
      data: {
        inputSchema: {
          type: 'object',
          properties: { query: { type: 'string', minLength: 1, pattern: '^(?=n)name$' } },
          required: ['query'],
          additionalProperties: false,
        },
      },
    });
    // A row edited behind the API's back: say so, as a control plane starting on it knows nothing.
    await t.app.domain.listener.configChanged([f.aeiId]);
    const res = await query(t, f, 'small', 'name');
    // Not the server's fault: the tool cannot be called until its schema changes, and says why.
    expect(res.value.error.code).toBe('PRECONDITION_FAILED');
    expect(res.value.error.message).toContain('the input schema of small cannot be used');
    expect(res.value.error.message).toContain('(?=');
    await t.database.prisma.aeiBinding.update({
      where: { id: f.tools.small!.bindingId },
      data: { inputSchema: Prisma.DbNull },
    });
    await t.app.domain.listener.configChanged([f.aeiId]);
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
  });

  it('a legacy v1 query tool runs under the same budget', async () => {
    const created = await t.call('POST', '/api/v1/mcp', {
      token: f.token,
      body: { table_id: f.tableId, json_pointer: '/items' },
    });
    expect(created.status).toBe(201);
    const run = async (query: string) =>
      toolAnswer(
        await t.call('POST', `/internal/mcp-instance/${created.body.id}/execute`, {
          token: INTERNAL_TOKEN,
          body: { tool_name: 'query_data', arguments: { query } },
        }),
      );
    expect((await run("length(pad_left('a',`500000000`))")).value.error.code).toBe('LIMIT_EXCEEDED');
    expect((await run(nestedMap(6))).value.error.code).toBe('LIMIT_EXCEEDED');
    expect((await run('length(@)')).value).toBe(1_000);
  });
});

describe('the worker path', () => {
  // A 1 ms slice (100,000 steps): anything bigger than a cheap query moves to a worker. The time
  // budget is generous: these tests are about the path, and a busy machine starves workers (nice +10).
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    t = await startTestApp({ query: { queryInlineMs: 1, queryTimeoutMs: 10_000 } });
    f = await buildFixture(t, DATA, { ...TOOLS, add: { json_path: '/items', operation_type: 'create' } });
  });
  afterAll(() => t?.close());

  it('a query that outgrows the slice but fits the budget is answered by a worker', async () => {
    // About four million steps: twenty times the slice, far inside the budget.
    const res = await query(t, f, 'items', 'sum(map(&length(map(&[@, @], $)), @))');
    expect(res).toMatchObject({ isError: false, value: 1_000_000 });
    // Errors of the worker keep their code and message; a second run uses the worker's parsed copy.
    const bad = await query(t, f, 'items', 'sum(map(&length(map(&[@, @], $)), @)) | no_such_function(@)');
    expect(bad.value.error).toMatchObject({ code: 'INVALID_QUERY', details: { stage: 'evaluation' } });
    const tooLarge = await query(t, f, 'items', 'map(&map(&@, $), @)');
    expect(tooLarge.value.error.code).toBe('RESULT_TOO_LARGE');
  }, 120_000);

  it('a query that outgrew the slice before goes straight to a worker the next time', async () => {
    const expression = 'sum(map(&length(map(&[@, @], $)), @)) + `1`';
    const escalations = await metric(t, 'controlplane_query_escalations_total');
    const skips = await metric(t, 'controlplane_query_slice_skips_total');
    expect((await query(t, f, 'items', expression)).value).toBe(1_000_001);
    expect(await metric(t, 'controlplane_query_escalations_total')).toBe(escalations + 1);
    expect(await metric(t, 'controlplane_query_slice_skips_total')).toBe(skips);
    expect((await query(t, f, 'items', expression)).value).toBe(1_000_001);
    expect(await metric(t, 'controlplane_query_escalations_total')).toBe(escalations + 2);
    expect(await metric(t, 'controlplane_query_slice_skips_total')).toBe(skips + 1);
    // Another expression, or the same one on another context, still gets its slice.
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
    expect(await metric(t, 'controlplane_query_slice_skips_total')).toBe(skips + 1);
  }, 120_000);

  it('a worker answers with the data of the current version after a write', async () => {
    const count = 'length(map(&length(map(&[@, @], $)), @))';
    expect((await query(t, f, 'items', count)).value).toBe(1_000);
    expect(toolAnswer(await execute(t, f, 'add', { value: 1_000 })).isError).toBe(false);
    expect((await query(t, f, 'items', count)).value).toBe(1_001);
  });
});

describe('a context too large for a worker’s heap', () => {
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    // Every query goes to a worker, and a worker's heap (32 MiB) cannot hold this 16 MB context
    // parsed (at 8 MB it sometimes could): it is refused before a worker tries. Letting the worker
    // run out of heap instead once took the whole process down (V8 aborted, not the worker).
    t = await startTestApp({
      bodyLimitBytes: 32 * 1024 * 1024,
      query: { queryInlineMs: 0, queryWorkerMemoryMb: 32, queryTimeoutMs: 10_000 },
    });
    const big = Array.from({ length: 200_000 }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      tags: ['a', 'b'],
      nested: { x: i },
    }));
    f = await buildFixture(
      t,
      { big, small: DATA.small },
      {
        big: { json_path: '/big', operation_type: 'query' },
        small: TOOLS.small,
      },
    );
  }, 120_000);
  afterAll(() => t?.close());

  it('answers LIMIT_EXCEEDED (memory) before any worker parses it; the next calls work', async () => {
    const res = await query(t, f, 'big', 'length(@)');
    expect(res.value.error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { limit: 'memory' } });
    await stillAnswers(t);
    expect((await query(t, f, 'small', 'values[2]')).value).toBe(3);
    // And again: each failure is its own, the pool keeps serving.
    expect((await query(t, f, 'big', 'length(@)')).value.error.details.limit).toBe('memory');
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
  }, 120_000);
});

describe('a full queue', () => {
  let t: TestApp;
  let f: Fixture;

  beforeAll(async () => {
    // One worker, one waiting place, every query in a worker; the tenant's share is not the limit
    // here.
    t = await startTestApp({
      query: {
        queryInlineMs: 0,
        queryWorkers: 1,
        queryQueue: 1,
        queryTimeoutMs: 1_000,
        queryTenantEscalations: 10,
      },
    });
    f = await buildFixture(t, DATA, TOOLS);
    // The worker has started (a queued query would otherwise also wait for that).
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
  });
  afterAll(() => t?.close());

  it('answers RATE_LIMITED with a retry hint while the worker and its queue are taken', async () => {
    const running = query(t, f, 'items', nestedMap(6));
    await poolReaches(t, 1, 0);
    const waiting = query(t, f, 'items', nestedMap(6));
    await poolReaches(t, 1, 1);
    const refused = await query(t, f, 'small', 'name');
    expect(refused.value.error).toMatchObject({
      code: 'RATE_LIMITED',
      details: { retry_after_seconds: 1, reason: 'queue_full' },
    });
    expect(refused.value.error.message).toMatch(/Retry/);
    // Refused at once, not after waiting for the queue.
    expect(refused.elapsed).toBeLessThan(1_000);
    expect((await running).value.error.code).toBe('LIMIT_EXCEEDED');
    expect((await waiting).value.error.code).toBe('LIMIT_EXCEEDED');
    // Once the worker is free, the same call is answered.
    expect((await query(t, f, 'small', 'name')).value).toBe('small');
    expect(await metric(t, 'controlplane_query_rejections_total', { reason: 'queue_full' })).toBe(1);
    await poolReaches(t, 0, 0);
  });
});

describe('two tenants sharing the query pool', () => {
  // One worker and room for four waiting; each tenant (the user owning the exposure) may have two
  // queries in the pool (the default). Tenant A floods it with hostile queries, each taking the
  // whole 2 s budget; B's long query (about 400,000 steps, past the 1 ms slice) must still run.
  let t: TestApp;
  let a: Fixture;
  let b: Fixture;
  const slowButFine = 'sum(map(&length(map(&[@, @], $[:100])), @))';

  beforeAll(async () => {
    t = await startTestApp({
      // The wait bound is not what this test is about: on a loaded host the worker may start a
      // task late (its budget counts from then), so B could wait past twice the budget.
      query: {
        queryInlineMs: 1,
        queryWorkers: 1,
        queryQueue: 4,
        queryTimeoutMs: 2_000,
        queryMaxWaitMs: 30_000,
      },
    });
    a = await buildFixture(t, DATA, TOOLS);
    b = await buildFixture(t, DATA, TOOLS);
    // The worker has started.
    expect((await query(t, b, 'items', 'length(map(&[@, @], @))')).value).toBe(1_000);
  });
  afterAll(() => t?.close());

  it("one tenant's flood is refused past its share; another tenant's long query still runs and its cheap calls stay fast", async () => {
    // The warm-up may or may not have outgrown its slice, depending on the machine: count from here.
    const escalatedBefore = await metric(t, 'controlplane_query_escalations_total');
    const flood = Array.from({ length: 6 }, () => query(t, a, 'items', nestedMap(6)));
    // A's share is in the pool: one running, one waiting; the other four were refused at once.
    await poolReaches(t, 1, 1);
    const long = query(t, b, 'items', slowButFine);
    await poolReaches(t, 1, 2);
    const cheap: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await query(t, b, 'small', 'values[1]');
      expect(res.value).toBe(2);
      cheap.push(res.elapsed);
    }
    // Cheap calls never reach the pool; the bound leaves room for a CPU shared with other suites.
    expect(Math.max(...cheap), `cheap calls ${cheap.join(', ')} ms`).toBeLessThan(500);
    // B's query goes before A's second: a freed thread goes to the tenant served longest ago.
    const longAnswer = await long;
    expect(longAnswer, JSON.stringify(longAnswer.value)).toMatchObject({ isError: false, value: 100_000 });
    const answers = await Promise.all(flood);
    const refused = answers.filter((res) => res.value.error?.details?.reason === 'tenant_limit');
    expect(refused, JSON.stringify(answers.map((res) => res.value.error))).toHaveLength(4);
    for (const res of refused) {
      expect(res.value.error).toMatchObject({ code: 'RATE_LIMITED', details: { retry_after_seconds: 2 } });
      expect(res.value.error.message).toContain('This account already has 2 long-running queries');
    }
    // A's two in the pool ran out of time (on a starved machine the second may instead have waited
    // past two budgets: it goes after B's).
    for (const res of answers.filter((res) => !refused.includes(res))) {
      expect(['LIMIT_EXCEEDED', 'RATE_LIMITED']).toContain(res.value.error.code);
    }
    await poolReaches(t, 0, 0);
    expect(await metric(t, 'controlplane_query_rejections_total', { reason: 'tenant_limit' })).toBe(4);
    expect(await metric(t, 'controlplane_query_rejections_total', { reason: 'queue_full' })).toBe(0);
    // A's two (less one that waited too long) and B's one.
    const timedOut = answers.filter((res) => res.value.error?.details?.reason === 'wait_timeout').length;
    expect(await metric(t, 'controlplane_query_escalations_total')).toBe(escalatedBefore + 3 - timedOut);
  });
});
