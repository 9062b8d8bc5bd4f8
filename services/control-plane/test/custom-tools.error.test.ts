// Pins how custom tools fail, for their author and for the agent calling them: a bad save is a 4xx
// naming the field (bad JS with its line and column, a bad schema, an unknown secret, a missing
// context path, a host that is not a host, a name used twice); a call that loops ends with TIMEOUT
// in under 2 s while the control plane keeps answering other calls, an allocation bomb with a
// memory error, an answer outside the output schema with a tool error, a call stopped after it
// began writing says the outcome is unknown, and calls past the account's share are RATE_LIMITED
// and counted in the metrics; a call's writes past CUSTOM_TOOL_MAX_WRITES are LIMIT_EXCEEDED with
// the earlier ones kept, and writes from 16 loops at once are paced to CUSTOM_TOOL_WRITES_PER_SECOND
// while another user's calls are answered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { sample } from '@bindery/test-support';
import { SUM_TOOL, customTool, customToolUser, type CustomToolUser } from './support/custom-tools.ts';

let t: TestApp;
let u: CustomToolUser;

beforeAll(async () => {
  t = await startTestApp();
  u = await customToolUser(t, { customers: [{ id: 'c1', tier: 'gold' }], notes: [] });
  await u.add('crm_query', { table_id: u.tableId, json_path: '', operation_type: 'query' });
});
afterAll(() => t.close());

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

describe('saving', () => {
  it('bad JavaScript: 400 naming code, with the line and column', async () => {
    const res = await u.save(
      customTool('export default async function (args) {\n  const total = ;\n  return total;\n}'),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: "code: The source has a syntax error (line 2, column 17): unexpected token in expression: ';'",
      details: { field: 'code', line: 2, column: 17 },
    });
  });

  it('a module without a default function, or an empty one: 400 naming code', async () => {
    const none = await u.save(customTool('export const x = 1;'));
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { field: 'code' } });
    expect(none.body.error.message).toMatch(/^code: .*default export/);
    const empty = await u.save(customTool(''));
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toMatch(/code/);
  });

  it('a bad input or output schema: 400 naming it', async () => {
    const typo = await u.save(
      customTool('export default () => 1', {
        input_schema: { type: 'object', properties: { a: { type: 'strng' } } },
      }),
    );
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { field: 'input_schema' } });
    expect(typo.body.error.message).toMatch(/^input_schema: not a usable JSON Schema/);

    const notObject = await u.save(customTool('export default () => 1', { input_schema: { type: 'array' } }));
    expect(notObject.body.error).toMatchObject({ details: { field: 'input_schema' } });
    expect(notObject.body.error.message).toMatch(/"type": "object"/);

    const output = await u.save(
      customTool('export default () => 1', { output_schema: { type: 'object', minProperties: 'two' } }),
    );
    expect(output.status).toBe(400);
    expect(output.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { field: 'output_schema' },
    });
  });

  it('an unknown secret: 400 naming secrets and the name', async () => {
    const res = await u.save(customTool('export default () => 1', { secrets: ['NOT_THERE'] }));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { field: 'secrets', missing: ['NOT_THERE'] },
    });
    expect(res.body.error.message).toMatch(/^secrets: no secret named NOT_THERE/);
  });

  it('a context path missing from the table: 4xx naming json_path; another user’s table: 404', async () => {
    const missing = await u.save(
      customTool('export default () => 1', { context: { table_id: u.tableId, json_path: '/orders' } }),
    );
    expect(missing.status).toBeGreaterThanOrEqual(400);
    expect(missing.status).toBeLessThan(500);
    expect(JSON.stringify(missing.body.error)).toMatch(/json_path/);
    expect(missing.body.error.message).toMatch(/\/orders/);

    const other = await customToolUser(t, { mine: [] }, 'someone-else');
    const foreign = await u.save(
      customTool('export default () => 1', { context: { table_id: other.tableId, json_path: '/mine' } }),
    );
    expect(foreign.status).toBe(404);
    const climbing = await u.save(
      customTool('export default () => 1', { context: { table_id: u.tableId, json_path: '/notes/..' } }),
    );
    expect(climbing.status).toBe(400);
    expect(climbing.body.error.details).toMatchObject({ field: 'json_path' });
  });

  it('allowed_hosts that are not hosts: 400 naming allowed_hosts and the entry', async () => {
    for (const [entry, why] of [
      ['https://api.example.com/v1', /write the host alone/],
      ['*.example.com', /wildcard/],
      ['api.example.com:99999', /port/],
      ['exa mple.com', /not a host/],
      ['[::1', /host/],
    ] as const) {
      const res = await u.save(
        customTool('export default () => 1', { allowed_hosts: ['ok.example.com', entry] }),
      );
      expect(res.status, entry).toBe(400);
      expect(res.body.error, entry).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { field: 'allowed_hosts', index: 1 },
      });
      expect(res.body.error.message, entry).toMatch(why);
    }
  });

  it('duplicate names: the same secret or host twice is 400; two tools of one name in an exposure 409', async () => {
    const secrets = await u.save(customTool('export default () => 1', { secrets: ['A', 'A'] }));
    expect(secrets.status).toBe(400);
    expect(JSON.stringify(secrets.body.error)).toMatch(/secrets/);
    const hosts = await u.save(
      customTool('export default () => 1', { allowed_hosts: ['a.example.com', 'A.example.com'] }),
    );
    expect(hosts.status).toBe(400);
    expect(hosts.body.error).toMatchObject({ details: { field: 'allowed_hosts', index: 1 } });

    await u.add('twin', customTool('export default () => 1'));
    const second = await u.save({ ...customTool('export default () => 2'), name: 'twin' });
    expect(second.status).toBe(201);
    const bind = await t.call('POST', `/api/v2/aeis/${u.aeiId}/bindings`, {
      token: u.token,
      body: { adi_id: second.body.id },
    });
    expect(bind.status).toBe(409);
    expect(JSON.stringify(bind.body.error)).toMatch(/twin/);
  });

  it('fields of another kind, or a custom body without code: 400 naming the field', async () => {
    const mixed = await u.save({ ...SUM_TOOL, operation_type: 'query' });
    expect(mixed.status).toBe(400);
    expect(JSON.stringify(mixed.body.error)).toMatch(/operation_type/);
    const noCode = await u.save({ kind: 'custom', input_schema: { type: 'object' } });
    expect(noCode.status).toBe(400);
    expect(JSON.stringify(noCode.body.error)).toMatch(/code/);
    const { adiId } = await u.add('patch_me', customTool('export default () => 1'));
    const patch = await t.call('PATCH', `/api/v2/adis/${adiId}`, {
      token: u.token,
      body: { json_path: '/x' },
    });
    expect(patch.status).toBe(400);
    expect(patch.body.error).toMatchObject({ details: { field: 'json_path' } });
    const badCode = await t.call('PATCH', `/api/v2/adis/${adiId}`, {
      token: u.token,
      body: { code: 'export default (' },
    });
    expect(badCode.status).toBe(400);
    expect(badCode.body.error).toMatchObject({ details: { field: 'code', line: 1 } });
  });
});

describe('calling', () => {
  it('while(true){} ends with TIMEOUT in under 2 s; a context query answers meanwhile', async () => {
    await u.add('spin', customTool('export default function () { while (true) {} }'));
    // The sandbox's threads are started (the first call of a fresh app starts them).
    await u.add('warm', customTool('export default () => 1'));
    await Promise.all([u.call('warm'), u.call('warm')]);

    const spinning = timed(u.call('spin'));
    const query = await timed(u.call('crm_query', { query: "customers[?tier=='gold'].id" }));
    const ended = await spinning;
    expect(query.value).toMatchObject({ isError: false, value: ['c1'] });
    expect(query.ms).toBeLessThan(ended.ms);
    expect(ended.value).toMatchObject({
      isError: true,
      value: { error: { code: 'TIMEOUT', details: { limit: 'time', timeout_ms: 1_000 } } },
    });
    expect(ended.ms).toBeLessThan(2_000);
  });

  it('an allocation bomb ends with a clear memory error', async () => {
    // On an app of its own with a 60 s time limit, so memory is what ends it on any host: the
    // sandbox's workers run at a lower CPU priority, and on a host loaded with other processes
    // even a few ms of their work can take past the 1 s default (CI saw TIMEOUT that way).
    const roomy = await startTestApp({ customTool: { customToolTimeoutMs: 60_000 } });
    try {
      const v = await customToolUser(roomy, { notes: [] });
      await v.add(
        'bomb',
        // 8 MB buffers reach the 32 MB limit in five steps, each needing the memory to grow.
        customTool('export default () => { const a = []; while (true) a.push(new ArrayBuffer(8e6)); }'),
      );
      const answer = await v.call('bomb');
      expect(answer).toMatchObject({
        isError: true,
        value: { error: { code: 'LIMIT_EXCEEDED', details: { limit: 'memory', memory_mb: 32 } } },
      });
      expect(answer.value.error.message).toMatch(/^The tool ran out of memory/);
    } finally {
      await roomy.close();
    }
  });

  it('arguments outside the input schema: VALIDATION_FAILED before the code runs', async () => {
    await u.add('strict_sum', SUM_TOOL);
    const answer = await u.call('strict_sum', { numbers: ['one'] });
    expect(answer).toMatchObject({ isError: true, value: { error: { code: 'VALIDATION_FAILED' } } });
    expect(answer.value.error.message).toMatch(/numbers\/0/);
  });

  it('an answer its output schema does not allow is a tool error naming where', async () => {
    await u.add(
      'liar',
      customTool('export default () => ({ total: "many" })', {
        output_schema: { type: 'object', properties: { total: { type: 'number' } } },
      }),
    );
    const answer = await u.call('liar');
    expect(answer).toMatchObject({ isError: true, value: { error: { code: 'UPSTREAM_FAILED' } } });
    expect(answer.value.error.message).toMatch(/output_schema.*\/total must be number/);
  });

  it('what the code throws: UPSTREAM_FAILED with its message and position, console kept', async () => {
    await u.add(
      'thrower',
      customTool('export default () => {\n  console.log("about to fail");\n  throw new Error("no luck");\n}'),
    );
    const answer = await u.call('thrower');
    expect(answer).toMatchObject({ isError: true, value: { error: { code: 'UPSTREAM_FAILED' } } });
    expect(answer.value.error.message).toMatch(/no luck/);
    expect(answer.meta).toEqual({ 'bindery/console': [{ level: 'log', message: 'about to fail' }] });
  });

  it('context operations refuse what they refuse for a context tool, the tool may catch it', async () => {
    await u.add(
      'bad_writes',
      customTool(
        `export default async (args, ctx) => {
          const seen = [];
          for (const [op, a] of [['create', { value: 1, bogus: true }], ['get_all', {}], ['update', { path: '/../x', value: 1 }]]) {
            try { await ctx.context.write(op, a); seen.push('written'); } catch (e) { seen.push(e.code + ': ' + e.message); }
          }
          try { await ctx.context.read('/5'); } catch (e) { seen.push(e.code + ': ' + e.message); }
          return seen;
        }`,
        { context: { table_id: u.tableId, json_path: '/notes', write: true } },
      ),
    );
    const answer = await u.call('bad_writes');
    expect(answer.isError).toBe(false);
    expect(answer.value).toEqual([
      expect.stringMatching(/^VALIDATION_FAILED: invalid arguments for ctx.context.write\("create"\)/),
      expect.stringMatching(/^VALIDATION_FAILED: ctx.context.write: op "get_all" is not a write operation/),
      expect.stringMatching(/^VALIDATION_FAILED: .*cannot climb out/),
      expect.stringMatching(/^NOT_FOUND: `path` "\/5" not found/),
    ]);
    expect((await u.table()).data.notes).toEqual([]);
  });

  it('stopped by its deadline after it began writing: OUTCOME_UNKNOWN, not a plain TIMEOUT', async () => {
    await u.add(
      'write_then_spin',
      customTool(
        `export default async (args, ctx) => {
          await ctx.context.write('create', { value: { from: 'write_then_spin' } });
          while (true) {}
        }`,
        { context: { table_id: u.tableId, json_path: '/notes', write: true } },
      ),
    );
    const answer = await u.call('write_then_spin');
    expect(answer).toMatchObject({
      isError: true,
      value: { error: { code: 'OUTCOME_UNKNOWN', details: { cause: 'TIMEOUT' } } },
    });
    expect(answer.value.error.message).toMatch(/may have been applied/);
  });

  it('more calls of one account than CUSTOM_TOOL_TENANT_CALLS at once: RATE_LIMITED, counted in /metrics', async () => {
    await u.add(
      'busy',
      customTool(
        'export default () => { const end = Date.now() + 300; while (Date.now() < end) {} return "done"; }',
      ),
    );
    const refusedBefore =
      sample(await rawMetrics(), 'controlplane_custom_tool_rejections_total', { reason: 'tenant_limit' }) ??
      0;
    // The default allows 8 calls of one account running or waiting (2 run, 0.3 s each): of 12 sent
    // at once, those arriving while 8 are in are refused at once. A loaded host may also keep one
    // of the 8 waiting past the pool's wait limit (wait_timeout, also RATE_LIMITED): that is the
    // pool's other refusal, not this one, and is left out of the count.
    const answers = await Promise.all(Array.from({ length: 12 }, () => u.call('busy')));
    const refused = answers.filter((a) => a.isError);
    for (const answer of refused) {
      expect(answer.value.error).toMatchObject({ code: 'RATE_LIMITED', details: { retry_after_seconds: 1 } });
    }
    const overShare = refused.filter((a) => a.value.error.details.reason === 'tenant_limit');
    expect(overShare.length).toBeGreaterThan(0);
    expect(refused.length - overShare.length).toBe(
      refused.filter((a) => a.value.error.details.reason === 'wait_timeout').length,
    );
    expect(answers.filter((a) => !a.isError).map((a) => a.value)).toEqual(
      Array(12 - refused.length).fill('done'),
    );
    const text = await rawMetrics();
    expect(sample(text, 'controlplane_custom_tool_rejections_total', { reason: 'tenant_limit' })).toBe(
      refusedBefore + overShare.length,
    );
    // Nothing runs or waits any more: the gauges came back down.
    expect(sample(text, 'controlplane_custom_tool_pool_running')).toBe(0);
    expect(sample(text, 'controlplane_custom_tool_pool_queued')).toBe(0);
  });
});

describe('bounds on the writes of one call', () => {
  it('writes past CUSTOM_TOOL_MAX_WRITES: LIMIT_EXCEEDED naming it, the writes before it stand', async () => {
    const capped = await startTestApp({ customTool: { customToolMaxWrites: 5 } });
    try {
      const v = await customToolUser(capped, { notes: [] });
      await v.add(
        'eight_notes',
        customTool(
          `export default async (args, ctx) => {
            for (let n = 0; n < 8; n++) await ctx.context.write('create', { value: { n } });
            return 'all eight written';
          }`,
          { context: { table_id: v.tableId, json_path: '/notes', write: true } },
        ),
      );
      const answer = await v.call('eight_notes');
      expect(answer).toMatchObject({ isError: true, value: { error: { code: 'LIMIT_EXCEEDED' } } });
      expect(answer.value.error.message).toMatch(
        /^ctx.context.write: this call has made 5 writes, the most one call may make \(CUSTOM_TOOL_MAX_WRITES\); those stand/,
      );
      expect((await v.table()).data.notes).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
    } finally {
      await capped.close();
    }
  });

  it('16 write loops at once are paced to CUSTOM_TOOL_WRITES_PER_SECOND; another user’s query answers meanwhile', async () => {
    const paced = await startTestApp({
      customTool: { customToolWritesPerSecond: 20, customToolTimeoutMs: 5_000 },
    });
    try {
      const writer = await customToolUser(paced, { slots: Array(16).fill(0) });
      const reader = await customToolUser(paced, { customers: [{ id: 'c1' }] }, 'reader');
      await reader.add('customers', { table_id: reader.tableId, json_path: '', operation_type: 'query' });
      // Each loop writes until a second has passed since the tool started.
      await writer.add(
        'sixteen_loops',
        customTool(
          `export default async (args, ctx) => {
            const end = Date.now() + 1000;
            let writes = 0;
            const loop = async (k) => {
              while (Date.now() < end) {
                await ctx.context.write('update', { path: '/' + k, value: writes });
                writes++;
              }
            };
            await Promise.all(Array.from({ length: 16 }, (_, k) => loop(k)));
            return { writes };
          }`,
          { context: { table_id: writer.tableId, json_path: '/slots', write: true } },
        ),
      );
      await writer.add('warm', customTool('export default () => 1'));
      await Promise.all([writer.call('warm'), writer.call('warm')]);
      const before = (await writer.table()).version;

      const started = performance.now();
      const writing = writer.call('sixteen_loops');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const query = await reader.call('customers', { query: 'customers[].id' });
      const queryDone = performance.now() - started;
      const answer = await writing;

      expect(query).toMatchObject({ isError: false, value: ['c1'] });
      // Answered while the loops were still writing (they stop a second after the tool starts).
      expect(queryDone).toBeLessThan(1_000);
      expect(answer.isError).toBe(false);
      const { writes } = answer.value as { writes: number };
      // A full bucket (16) at once, then 20 a second for the loops' second, and the last
      // round let through together after it: far below what the loops would make unpaced.
      expect(writes).toBeGreaterThanOrEqual(16);
      expect(writes).toBeLessThanOrEqual(16 + 20 * 2);
      expect((await writer.table()).version).toBe(before + writes);
    } finally {
      await paced.close();
    }
  });
});

/** The control plane's /metrics text (open without METRICS_TOKEN). */
async function rawMetrics(): Promise<string> {
  return (await fetch(`${t.baseUrl}/metrics`)).text();
}
