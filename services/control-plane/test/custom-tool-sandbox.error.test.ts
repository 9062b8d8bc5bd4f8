// Pins the tool errors of custom JavaScript tools, each with a code and a message a tool author can
// act on: a source that does not compile (with line and column) or exports no function; what the
// tool throws (an Error, a string, any value, an error with a code it chose); host call failures,
// which the tool can catch; results that are too large or not JSON; console output past its bounds
// (cut, with a marker); host answers and concurrent host calls past their bounds; a promise nothing
// can settle; and a tenant past its share of the pool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpError } from '@bindery/context-ops';
import { CustomToolSandbox, MAX_SOURCE_BYTES, type ToolHost } from '../src/kinds/custom/sandbox/index.ts';

let sandbox: CustomToolSandbox;
const warnings: { details: object; message: string }[] = [];

beforeAll(() => {
  sandbox = new CustomToolSandbox({
    threads: 2,
    queue: 8,
    perTenant: 8,
    memoryMb: 32,
    limits: { maxResultBytes: 10_000, maxConsoleEntries: 5, maxConsoleBytes: 200, maxHostAnswerBytes: 1_000 },
    log: { warn: (details, message) => warnings.push({ details, message }) },
  });
});
afterAll(() => sandbox.close());

const run = (code: string, host?: ToolHost, args: Record<string, unknown> = {}) =>
  sandbox.runCustomTool({ code, args: args as never, tenant: 'bob' }, host);

describe('checking a source', () => {
  it('reports a syntax error with its line and column', async () => {
    const check = await sandbox.checkCustomToolSource(
      'export default async function (args) {\n  const total = ;\n  return total;\n}',
      'bob',
    );
    expect(check).toEqual({
      ok: false,
      message: "The source has a syntax error (line 2, column 17): unexpected token in expression: ';'",
      details: { field: 'code', line: 2, column: 17 },
    });
  });

  it('requires a default export that is a function', async () => {
    for (const code of ['export const run = () => 1;', 'export default 42;', 'function f() {}']) {
      const check = await sandbox.checkCustomToolSource(code, 'bob');
      expect(check, code).toMatchObject({ ok: false, details: { field: 'code' } });
      expect(check.ok || check.message).toMatch(/default export/);
    }
  });

  it('reports a module whose top level throws, with its position', async () => {
    const check = await sandbox.checkCustomToolSource(
      'const x = 1;\nnotDefined();\nexport default () => x;',
      'bob',
    );
    expect(check).toMatchObject({
      ok: false,
      message: expect.stringMatching(
        /failed while loading \(line 2, column \d+\): ReferenceError: .*notDefined/,
      ),
      details: { field: 'code', line: 2 },
    });
  });

  it('refuses a source larger than the bound, without running it', async () => {
    const code = `export default () => 1; // ${'x'.repeat(MAX_SOURCE_BYTES)}`;
    const check = await sandbox.checkCustomToolSource(code, 'bob');
    expect(check).toMatchObject({ ok: false, message: expect.stringMatching(/more than the 262144/) });
    expect(await run(code)).toMatchObject({ ok: false, code: 'UPSTREAM_FAILED' });
  });
});

describe('what the tool throws', () => {
  it('an Error: UPSTREAM_FAILED with its name, message and position', async () => {
    const outcome = await run(
      'export default function (args) {\n  console.log("before");\n  throw new RangeError("amount must be positive");\n}',
    );
    expect(outcome).toEqual({
      ok: false,
      code: 'UPSTREAM_FAILED',
      message: 'The tool threw RangeError: amount must be positive',
      details: { thrown: 'RangeError', line: 3, column: 23 },
      console: [{ level: 'log', message: 'before' }],
    });
  });

  it('a rejected promise is the same as a throw', async () => {
    const outcome = await run('export default async () => { await null; throw new Error("later"); }');
    expect(outcome).toMatchObject({
      ok: false,
      code: 'UPSTREAM_FAILED',
      message: 'The tool threw Error: later',
    });
  });

  it('a value that is not an Error: its text', async () => {
    const cases: [string, string, string][] = [
      ['"out of stock"', 'The tool threw out of stock', 'string'],
      ['{ reason: "nope", n: 1 }', 'The tool threw {"reason":"nope","n":1}', 'object'],
      ['42', 'The tool threw 42', 'number'],
      ['undefined', 'The tool threw undefined', 'undefined'],
      ['null', 'The tool threw null', 'null'],
    ];
    for (const [value, message, thrown] of cases) {
      const outcome = await run(`export default () => { throw ${value}; }`);
      expect(outcome, value).toMatchObject({
        ok: false,
        code: 'UPSTREAM_FAILED',
        message,
        details: { thrown },
      });
    }
  });

  it('an error with a code of its choosing keeps that code; an unknown or reserved one does not', async () => {
    const chosen = await run(
      'export default () => { const e = new Error("no such order"); e.code = "NOT_FOUND"; throw e; }',
    );
    expect(chosen).toMatchObject({ ok: false, code: 'NOT_FOUND', message: 'no such order' });
    for (const code of ['TEAPOT', 'UNAUTHORIZED', 'INTERNAL']) {
      const outcome = await run(
        `export default () => { const e = new Error("x"); e.code = "${code}"; throw e; }`,
      );
      expect(outcome, code).toMatchObject({ ok: false, code: 'UPSTREAM_FAILED' });
    }
  });
});

describe('host call failures', () => {
  const host: ToolHost = {
    readContext: async (path) => {
      if (path === '/missing') throw new OpError('NOT_FOUND', 'Nothing at /missing.');
      if (path === '/broken') throw new Error('connection to db-7.internal:5432 refused');
      if (path === '/big') return 'x'.repeat(2_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
      return path;
    },
  };

  it('reach the tool as errors with a code it can catch', async () => {
    const outcome = await run(
      `export default async (args, ctx) => {
        try { await ctx.context.read('/missing'); } catch (e) { return { caught: e.message, code: e.code, isError: e instanceof Error }; }
      }`,
      host,
    );
    expect(outcome).toMatchObject({
      ok: true,
      value: { caught: 'Nothing at /missing.', code: 'NOT_FOUND', isError: true },
    });
  });

  it('not caught, end the call with their code', async () => {
    const outcome = await run('export default (args, ctx) => ctx.context.read("/missing")', host);
    expect(outcome).toMatchObject({ ok: false, code: 'NOT_FOUND', message: 'Nothing at /missing.' });
  });

  it('without a code, reach the tool as INTERNAL without their message, and are logged', async () => {
    warnings.length = 0;
    const outcome = await run('export default (args, ctx) => ctx.context.read("/broken")', host);
    expect(outcome).toMatchObject({ ok: false, code: 'UPSTREAM_FAILED' });
    expect(JSON.stringify(outcome)).not.toContain('db-7');
    expect(JSON.stringify(outcome)).toContain('ctx.context.read failed');
    expect(warnings.map((w) => w.message)).toContain('a custom tool host function failed');
  });

  it("are logged without the call's secrets", async () => {
    warnings.length = 0;
    const outcome = await run(
      'export default (args, ctx) => ctx.fetch("https://api.example.test/?key=" + ctx.secrets.KEY)',
      {
        secrets: { KEY: 'k-7f3a9c2e' },
        fetch: async (request) => {
          throw new Error(`could not reach ${request.url}`);
        },
      },
    );
    expect(outcome).toMatchObject({ ok: false, code: 'UPSTREAM_FAILED' });
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings)).toContain('could not reach https://api.example.test/?key=[secret]');
    expect(JSON.stringify([warnings, outcome])).not.toContain('k-7f3a9c2e');
  });

  it('an answer past the bound is refused as RESULT_TOO_LARGE', async () => {
    const outcome = await run('export default (args, ctx) => ctx.context.read("/big")', host);
    expect(outcome).toMatchObject({
      ok: false,
      code: 'RESULT_TOO_LARGE',
      message: expect.stringMatching(
        /ctx\.context\.read: the answer takes 2002 bytes of JSON, more than the 1000/,
      ),
    });
  });

  it('arguments past the bound are refused before they leave the sandbox', async () => {
    let calls = 0;
    const outcome = await run(
      'export default (args, ctx) => ctx.context.write("create", { item: "y".repeat(2 * 1024 * 1024) })',
      {
        writeContext: async () => {
          calls += 1;
          return null;
        },
      },
    );
    expect(outcome).toMatchObject({ ok: false, code: 'PAYLOAD_TOO_LARGE' });
    expect(calls).toBe(0);
  });

  it('more host calls at once than allowed: the extra ones fail, the others complete', async () => {
    const outcome = await run(
      `export default async (args, ctx) => {
        const calls = Array.from({ length: 20 }, (_, i) => ctx.context.read('/p' + i).then(() => 'ok', (e) => e.code));
        const results = await Promise.all(calls);
        return { ok: results.filter((r) => r === 'ok').length, refused: results.filter((r) => r === 'LIMIT_EXCEEDED').length };
      }`,
      host,
    );
    expect(outcome).toMatchObject({ ok: true, value: { ok: 16, refused: 4 } });
  });

  it('bad arguments to a host function are a TypeError inside the sandbox', async () => {
    const outcome = await run(
      `export default async (args, ctx) => {
        const errors = [];
        for (const bad of [() => ctx.context.read(5), () => ctx.fetch('https://x.test', { body: { a: 1 } }),
                           () => ctx.fetch('https://x.test', { headers: { n: 1 } })]) {
          try { await bad(); } catch (e) { errors.push(e.name + ': ' + e.message); }
        }
        return errors;
      }`,
      { ...host, fetch: async () => ({ status: 200, headers: {}, body: '' }) },
    );
    expect(outcome).toMatchObject({
      ok: true,
      value: [
        expect.stringMatching(/^TypeError: ctx\.context\.read\(path\): path is a JSON pointer/),
        expect.stringMatching(/^TypeError: .*init\.body is a string/),
        expect.stringMatching(/^TypeError: .*header n is not a string/),
      ],
    });
  });
});

describe('results', () => {
  it('larger than the bound: RESULT_TOO_LARGE with the size', async () => {
    const outcome = await run('export default () => ({ text: "z".repeat(20000) })');
    expect(outcome).toMatchObject({
      ok: false,
      code: 'RESULT_TOO_LARGE',
      message: "The tool's result takes 20011 bytes of JSON, more than the 10000 allowed.",
      details: { limit_bytes: 10_000 },
    });
  });

  it('counted in UTF-8 bytes, not characters', async () => {
    // 4,000 characters of three bytes each: 12,000 bytes.
    const outcome = await run('export default () => "€".repeat(4000)');
    expect(outcome).toMatchObject({ ok: false, code: 'RESULT_TOO_LARGE' });
  });

  it('not JSON: UPSTREAM_FAILED saying why', async () => {
    const bigint = await run('export default () => ({ n: 10n })');
    expect(bigint).toMatchObject({
      ok: false,
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/not JSON.*BigInt/),
    });
    const cyclic = await run('export default () => { const a = {}; a.self = a; return a; }');
    expect(cyclic).toMatchObject({
      ok: false,
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/not JSON/),
    });
    const fn = await run('export default () => () => 1');
    expect(fn).toMatchObject({
      ok: false,
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/a function is not JSON/),
    });
  });
});

describe('console output', () => {
  it('past its entry bound: later lines are dropped and a marker says how many', async () => {
    const outcome = await run(
      'export default () => { for (let i = 0; i < 50; i++) console.log("line " + i); return "done"; }',
    );
    expect(outcome.ok === true && outcome.value).toBe('done');
    expect(outcome.console).toHaveLength(6);
    expect(outcome.console.slice(0, 5).map((e) => e.message)).toEqual([
      'line 0',
      'line 1',
      'line 2',
      'line 3',
      'line 4',
    ]);
    expect(outcome.console[5]).toEqual({
      level: 'truncated',
      message:
        'Console output truncated: 45 more entries were dropped (a call keeps 5 entries and 200 bytes).',
    });
  });

  it('past its byte bound: the crossing line is cut, the rest dropped; a failing call keeps its lines too', async () => {
    const outcome = await run(
      'export default () => { console.log("a".repeat(150)); console.log("b".repeat(150)); console.log("c"); throw new Error("x"); }',
    );
    expect(outcome.ok).toBe(false);
    const [first, second, marker] = outcome.console;
    expect(first).toEqual({ level: 'log', message: 'a'.repeat(150) });
    expect(second?.message).toMatch(/^b{47}…$/);
    expect(marker?.level).toBe('truncated');
    expect(Buffer.byteLength(first!.message + second!.message)).toBeLessThanOrEqual(200);
  });
});

describe('a promise nothing can settle', () => {
  it('ends at once with a tool error naming the cause, not at the deadline', async () => {
    const started = performance.now();
    const outcome = await run('export default () => new Promise(() => {})');
    expect(outcome).toMatchObject({
      ok: false,
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/can never settle/),
    });
    expect(performance.now() - started).toBeLessThan(900);
  });
});

describe("a tenant's share of the pool", () => {
  it('is enforced: past it, RATE_LIMITED with a retry hint', async () => {
    const small = new CustomToolSandbox({
      threads: 1,
      queue: 4,
      perTenant: 1,
      memoryMb: 32,
      limits: { timeoutMs: 1_000 },
    });
    try {
      // The thread has started (a queued call would otherwise also wait for that).
      expect(
        await small.runCustomTool({ code: 'export default () => 0', args: {}, tenant: 'erin' }),
      ).toMatchObject({ ok: true });
      const slow = small.runCustomTool(
        { code: 'export default (a, ctx) => ctx.context.read("")', args: {}, tenant: 'carol' },
        { readContext: () => new Promise((resolve) => setTimeout(() => resolve(1), 300)) },
      );
      const refused = await small.runCustomTool({
        code: 'export default () => 1',
        args: {},
        tenant: 'carol',
      });
      expect(refused).toMatchObject({
        ok: false,
        code: 'RATE_LIMITED',
        details: { retry_after_seconds: 1, reason: 'tenant_limit' },
        message: expect.stringMatching(/already has 1 custom tool calls in progress/),
      });
      // Another tenant waits its turn instead.
      const other = small.runCustomTool({ code: 'export default () => 2', args: {}, tenant: 'dave' });
      expect(await slow).toMatchObject({ ok: true, value: 1 });
      expect(await other).toMatchObject({ ok: true, value: 2 });
    } finally {
      await small.close();
    }
  });
});
