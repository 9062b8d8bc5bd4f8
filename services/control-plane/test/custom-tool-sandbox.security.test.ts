// Pins the custom tool sandbox as a boundary: an endless loop ends with TIMEOUT in under 2 s while
// the control plane's event loop keeps ticking and another call completes; allocation bombs end
// with a memory error and the next call gets its whole budget again; a long native step is stopped
// by terminating its worker, which is replaced; host calls count against the deadline and are told
// when it passes; nothing of the host is reachable (no process, require, fetch, timers, imports;
// eval, Function and constructor chains only reach the sandbox's own global); prototype changes
// reach neither the host nor the next call; secrets do not leave in results, console or errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustomToolSandbox, REDACTED, type ToolHost } from '../src/kinds/custom/sandbox/index.ts';

let sandbox: CustomToolSandbox;

beforeAll(async () => {
  sandbox = new CustomToolSandbox({ threads: 2, queue: 8, perTenant: 8, memoryMb: 32 });
  // Both threads have started: timings below are the calls', not a thread's start. Each warm-up
  // call holds its thread a while, so the second goes to the other thread.
  const hold: ToolHost = { readContext: () => new Promise((resolve) => setTimeout(() => resolve(1), 300)) };
  await Promise.all([1, 2].map(() => run('export default (args, ctx) => ctx.context.read("")', hold)));
});
afterAll(() => sandbox.close());

function run(code: string, host?: ToolHost, tenant = 'mallory') {
  return sandbox.runCustomTool({ code, args: {}, tenant }, host);
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

// ECMAScript's globals as QuickJS has them, and the console the sandbox adds: nothing else.
const STANDARD_GLOBALS = [
  'AggregateError',
  'Array',
  'ArrayBuffer',
  'BigInt',
  'BigInt64Array',
  'BigUint64Array',
  'Boolean',
  'DataView',
  'Date',
  'Error',
  'EvalError',
  'FinalizationRegistry',
  'Float16Array',
  'Float32Array',
  'Float64Array',
  'Function',
  'Infinity',
  'Int16Array',
  'Int32Array',
  'Int8Array',
  'InternalError',
  'Iterator',
  'JSON',
  'Map',
  'Math',
  'NaN',
  'Number',
  'Object',
  'Promise',
  'Proxy',
  'RangeError',
  'ReferenceError',
  'Reflect',
  'RegExp',
  'Set',
  'SharedArrayBuffer',
  'String',
  'Symbol',
  'SyntaxError',
  'TypeError',
  'URIError',
  'Uint16Array',
  'Uint32Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'WeakMap',
  'WeakRef',
  'WeakSet',
  'console',
  'decodeURI',
  'decodeURIComponent',
  'encodeURI',
  'encodeURIComponent',
  'escape',
  'eval',
  'globalThis',
  'isFinite',
  'isNaN',
  'parseFloat',
  'parseInt',
  'undefined',
  'unescape',
];

describe('time', () => {
  it('while(true){} ends with TIMEOUT in under 2 s; the event loop keeps ticking and another call completes', async () => {
    const gaps: number[] = [];
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      gaps.push(now - last);
      last = now;
    }, 10);
    try {
      const loop = timed(run('export default function () { while (true) {} }'));
      // Meanwhile, on the other thread: a cheap call answers long before the loop ends.
      const cheap = await timed(run('export default (args) => "still serving"', undefined, 'alice'));
      const ended = await loop;
      expect(cheap.value).toMatchObject({ ok: true, value: 'still serving' });
      expect(cheap.ms).toBeLessThan(ended.ms);
      expect(ended.value).toMatchObject({
        ok: false,
        code: 'TIMEOUT',
        message: 'The tool ran past its time limit of 1000 ms (host calls included).',
        details: { limit: 'time', timeout_ms: 1_000 },
      });
      expect(ended.ms).toBeGreaterThanOrEqual(990);
      expect(ended.ms).toBeLessThan(2_000);
    } finally {
      clearInterval(ticker);
    }
    // A 10 ms ticker through a 1 s loop: it kept ticking, never held for long (a loaded machine
    // delays timers, hence the margin).
    expect(gaps.length).toBeGreaterThan(30);
    expect(Math.max(...gaps)).toBeLessThan(250);
  });

  it('an endless loop in the module top level, in a promise chain, or of microtasks ends the same way', async () => {
    const topLevel = await timed(run('while (true) {}\nexport default () => 1;'));
    expect(topLevel.value).toMatchObject({ ok: false, code: 'TIMEOUT' });
    expect(topLevel.ms).toBeLessThan(2_000);
    const chained = await timed(
      run('export default async () => { await null; for (;;) { try { while (true) {} } catch {} } }'),
    );
    expect(chained.value).toMatchObject({ ok: false, code: 'TIMEOUT' });
    expect(chained.ms).toBeLessThan(2_000);
    const microtasks = await timed(run('export default async () => { for (;;) await null; }'));
    expect(microtasks.value).toMatchObject({ ok: false, code: 'TIMEOUT' });
    expect(microtasks.ms).toBeLessThan(2_000);
  });

  it('a loop of long native steps is stopped by terminating its worker; the next call runs on a new one', async () => {
    // Each step (filling a million elements) runs in C, where QuickJS checks no deadline.
    const stopped = await timed(run('export default () => { for (;;) new Array(1e6).fill(1); }'));
    expect(stopped.value).toMatchObject({
      ok: false,
      code: 'TIMEOUT',
      message: 'The tool ran past its time limit of 1000 ms and was stopped.',
    });
    expect(stopped.ms).toBeLessThan(2_000);
    expect(await run('export default () => "after"')).toMatchObject({ ok: true, value: 'after' });
  });

  it('host calls count against the deadline; the host is told when it passes', async () => {
    let aborted = false;
    const host: ToolHost = {
      readContext: (_path, signal) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve('too late'), 5_000);
          signal.addEventListener('abort', () => {
            aborted = true;
            clearTimeout(timer);
          });
        }),
    };
    const slow = await timed(run('export default (args, ctx) => ctx.context.read("/x")', host));
    expect(slow.value).toMatchObject({ ok: false, code: 'TIMEOUT' });
    expect(slow.ms).toBeLessThan(2_000);
    expect(aborted).toBe(true);
  });
});

describe('memory', () => {
  // What runs out first must be memory, on any host: a bomb of small objects needs a few hundred
  // ms of CPU, which a loaded host can stretch past the default 1 s of wall time. These calls get
  // a long deadline of their own, so the time limit (pinned above) never decides them.
  let roomy: CustomToolSandbox;
  beforeAll(() => {
    roomy = new CustomToolSandbox({
      threads: 1,
      queue: 8,
      perTenant: 8,
      memoryMb: 32,
      limits: { timeoutMs: 60_000 },
    });
  });
  afterAll(() => roomy.close());
  const run = (code: string) => roomy.runCustomTool({ code, args: {}, tenant: 'mallory' });

  const bombs: [string, string][] = [
    ['arrays of a million', 'let a = []; while (true) a.push(new Array(1e6).fill(1));'],
    ['many small objects', 'const a = []; while (true) a.push({ n: a.length, s: "k" + a.length });'],
    ['string doubling', 'let s = "x"; while (true) s = s + s;'],
    ['string doubling, read each time', 'let s = "x"; while (true) { s = s + s; s.indexOf("y"); }'],
    ['array buffers', 'const a = []; while (true) a.push(new ArrayBuffer(1e6));'],
    ['one huge allocation', 'return new ArrayBuffer(256 * 1024 * 1024).byteLength;'],
  ];
  for (const [name, body] of bombs) {
    it(`${name}: LIMIT_EXCEEDED (memory), and the next call has its whole budget again`, async () => {
      const bomb = await run(`export default () => { ${body} }`);
      expect(bomb).toMatchObject({
        ok: false,
        code: 'LIMIT_EXCEEDED',
        details: { limit: 'memory', memory_mb: 32 },
      });
      expect(bomb.ok || bomb.message).toMatch(/^The tool ran out of memory/);
      // 16 MB of elements: only fits if the bomb's memory was given back.
      const next = await run('export default () => new Array(2e6).fill(0).length');
      expect(next).toMatchObject({ ok: true, value: 2_000_000 });
    });
  }

  it('a bomb kept in the module scope is freed with its runtime too', async () => {
    const bomb = await run(
      'const keep = []; export default () => { while (true) keep.push(new Array(1e5).fill(1)); }',
    );
    expect(bomb).toMatchObject({ ok: false, code: 'LIMIT_EXCEEDED' });
    expect(await run('export default () => new Array(2e6).fill(0).length')).toMatchObject({ ok: true });
  });

  it('deep recursion is a stack limit, not a crash', async () => {
    const deep = await run('export default () => { const f = (n) => f(n + 1) + 1; return f(0); }');
    expect(deep).toMatchObject({ ok: false, code: 'LIMIT_EXCEEDED', details: { limit: 'stack' } });
    const nested = await run('export default () => JSON.parse("[".repeat(100000) + "]".repeat(100000))');
    expect(nested.ok).toBe(false);
    expect(await run('export default () => "fine"')).toMatchObject({ ok: true, value: 'fine' });
  });
});

describe('no ambient authority', () => {
  it('has no process, require, module, fetch, timers or platform objects', async () => {
    const names = [
      'process',
      'require',
      'module',
      'exports',
      '__dirname',
      'Buffer',
      'fetch',
      'XMLHttpRequest',
      'WebSocket',
      'setTimeout',
      'setInterval',
      'setImmediate',
      'queueMicrotask',
      'std',
      'os',
      'WebAssembly',
      'Atomics',
      'Deno',
      'Bun',
      'importScripts',
      'postMessage',
      'navigator',
    ];
    const outcome = await run(
      `export default () => ${JSON.stringify(names)}.filter((n) => typeof globalThis[n] !== 'undefined')`,
    );
    expect(outcome).toMatchObject({ ok: true, value: [] });
  });

  it('its global object holds only standard JavaScript and console', async () => {
    const outcome = await run('export default () => Object.getOwnPropertyNames(globalThis).sort()');
    expect(
      outcome.ok === true && (outcome.value as string[]).filter((n) => !STANDARD_GLOBALS.includes(n)),
    ).toEqual([]);
  });

  it('imports nothing, statically or dynamically', async () => {
    const staticImport = await run('import fs from "fs";\nexport default () => fs;');
    expect(staticImport).toMatchObject({
      ok: false,
      message: expect.stringMatching(/could not load module 'fs'/),
    });
    for (const specifier of ['fs', 'node:child_process', './helpers.js', 'https://example.test/x.js']) {
      const outcome = await run(
        `export default async () => { const m = await import(${JSON.stringify(specifier)}); return Object.keys(m); }`,
      );
      expect(outcome, specifier).toMatchObject({
        ok: false,
        message: expect.stringMatching(/could not load module/),
      });
    }
  });

  it('eval, Function and constructor chains reach only the sandbox global', async () => {
    const outcome = await run(
      `export default (args, ctx) => {
        const candidates = [
          (0, eval)('this'),
          Function('return this')(),
          (() => {}).constructor('return this')(),
          ({}).constructor.constructor('return this')(),
          ctx.constructor.constructor('return this')(),
          ctx.secrets.constructor.constructor('return this')(),
          console.log.constructor('return this')(),
          (async () => {}).constructor('return this'),
        ];
        return {
          same: candidates.slice(0, 7).every((g) => g === globalThis),
          processes: candidates.slice(0, 7).map((g) => typeof g.process + typeof g.require),
        };
      }`,
      { readContext: async () => null },
    );
    expect(outcome).toMatchObject({
      ok: true,
      value: { same: true, processes: Array(7).fill('undefinedundefined') },
    });
  });

  it("ctx functions give away neither their caller nor the sandbox's natives", async () => {
    const outcome = await run(
      `export default (args, ctx) => {
        const tries = [() => ctx.context.read.caller, () => ctx.context.read.arguments,
                       () => console.log.caller, () => ctx.progress.caller, () => ctx.log.arguments,
                       () => ctx.elicit.caller, () => ctx.roots.arguments];
        const errors = tries.map((t) => { try { t(); return 'reachable'; } catch (e) { return e.name; } });
        return { errors, ctxKeys: Reflect.ownKeys(ctx).map(String), frozen: Object.isFrozen(ctx) };
      }`,
      { readContext: async () => null },
    );
    expect(outcome).toMatchObject({
      ok: true,
      value: {
        errors: Array(7).fill('TypeError'),
        ctxKeys: ['context', 'progress', 'log', 'client', 'elicit', 'sample', 'roots', 'secrets'],
        frozen: true,
      },
    });
  });
});

describe('prototype pollution', () => {
  it("changes to prototypes and ctx reach neither the host's objects nor the next call", async () => {
    const received: unknown[] = [];
    const host: ToolHost = {
      writeContext: async (op, args) => {
        received.push(args);
        return { stored: true };
      },
    };
    const first = await run(
      `export default async (args, ctx) => {
        Object.prototype.polluted = 'yes';
        Object.prototype.toJSON = undefined;
        Array.prototype.push = () => 'hijacked';
        ctx.__proto__.viaCtx = 'yes';
        Object.getPrototypeOf(ctx.secrets).viaSecrets = 'yes';
        JSON.parse = () => ({ forged: true });
        const answer = await ctx.context.write('create', { item: { a: 1 } });
        return { answer, sees: ({}).polluted };
      }`,
      host,
    );
    // The host's answer came through intact despite the tool's JSON.parse; the write's arguments
    // are the tool's own data, without inherited keys.
    expect(first).toMatchObject({ ok: true, value: { answer: { stored: true }, sees: 'yes' } });
    expect(received).toEqual([{ item: { a: 1 } }]);
    expect(Object.getPrototypeOf(received[0])).toBe(Object.prototype);
    const hostObject = {} as Record<string, unknown>;
    expect([hostObject.polluted, hostObject.viaCtx, hostObject.viaSecrets]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);

    const next = await run(
      'export default () => { const a = []; a.push(1); return { polluted: ({}).polluted ?? null, push: a.length, parse: JSON.parse("[2]") }; }',
    );
    expect(next).toMatchObject({ ok: true, value: { polluted: null, push: 1, parse: [2] } });
  });

  it('a result with a __proto__ key stays a plain key on the host', async () => {
    const outcome = await run('export default () => JSON.parse(\'{"__proto__": {"admin": true}, "ok": 1}\')');
    expect(outcome.ok).toBe(true);
    const value = (outcome.ok === true ? outcome.value : {}) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect((value as { admin?: unknown }).admin).toBeUndefined();
    expect(({} as { admin?: unknown }).admin).toBeUndefined();
    expect(Object.keys(value)).toEqual(['__proto__', 'ok']);
  });
});

describe('secrets', () => {
  const host: ToolHost = { secrets: { API_TOKEN: 'sk-live-0123456789', OTHER: 'hunter2-hunter2' } };

  it('do not leave in the result, its keys, the console or an error message', async () => {
    const returned = await run(
      `export default (args, ctx) => {
        console.log('token is', ctx.secrets.API_TOKEN);
        console.error({ nested: 'x' + ctx.secrets.OTHER + 'y' });
        return { token: ctx.secrets.API_TOKEN, [ctx.secrets.OTHER]: 1, list: ['a' + ctx.secrets.API_TOKEN] };
      }`,
      host,
    );
    expect(returned).toEqual({
      ok: true,
      value: { token: REDACTED, [REDACTED]: 1, list: [`a${REDACTED}`] },
      console: [
        { level: 'log', message: `token is ${REDACTED}` },
        { level: 'error', message: `{"nested":"x${REDACTED}y"}` },
      ],
    });
    const thrown = await run(
      'export default (args, ctx) => { throw new Error("bad token " + ctx.secrets.API_TOKEN); }',
      host,
    );
    expect(thrown).toMatchObject({ ok: false, message: `The tool threw Error: bad token ${REDACTED}` });
    for (const outcome of [returned, thrown]) {
      expect(JSON.stringify(outcome)).not.toContain('sk-live-0123456789');
      expect(JSON.stringify(outcome)).not.toContain('hunter2-hunter2');
    }
  });

  it('are given per call: the next call without them sees none', async () => {
    await run('export default (args, ctx) => ctx.secrets.API_TOKEN', host);
    const next = await run(
      'export default (args, ctx) => ({ names: Object.keys(ctx.secrets), g: typeof globalThis.API_TOKEN })',
    );
    expect(next).toMatchObject({ ok: true, value: { names: [], g: 'undefined' } });
  });
});
