// Pins what a custom JavaScript tool can do in its sandbox: its default export gets a JSON copy of
// the arguments and answers a result; it awaits the host functions its caller supplies
// (ctx.context.read/write, ctx.fetch), several at once; it reads the secrets it was given; its
// console lines come back with the result; a saved source that compiles and exports a function
// passes the check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CustomToolSandbox,
  type ToolFetchRequest,
  type ToolHost,
} from '../src/kinds/custom/sandbox/index.ts';

let sandbox: CustomToolSandbox;

beforeAll(() => {
  sandbox = new CustomToolSandbox({ threads: 2, queue: 8, perTenant: 8, memoryMb: 32 });
});
afterAll(() => sandbox.close());

const run = (code: string, args: Record<string, never> | Record<string, unknown> = {}, host?: ToolHost) =>
  sandbox.runCustomTool({ code, args: args as never, tenant: 'alice' }, host);

describe('a call', () => {
  it('sums an array argument', async () => {
    const outcome = await run(
      'export default async function (args) { return { sum: args.numbers.reduce((a, b) => a + b, 0) }; }',
      { numbers: [1, 2, 3, 4.5] },
    );
    expect(outcome).toEqual({ ok: true, value: { sum: 10.5 }, console: [] });
  });

  it('gets a copy of the arguments: changing them changes nothing outside', async () => {
    const args = { list: [1, 2] };
    const outcome = await run('export default (args) => { args.list.push(3); return args.list; }', args);
    expect(outcome).toMatchObject({ ok: true, value: [1, 2, 3] });
    expect(args.list).toEqual([1, 2]);
  });

  it('may export a plain function, and answers null for undefined', async () => {
    expect(await run('export default function () { return "plain"; }')).toMatchObject({ value: 'plain' });
    expect(await run('export default () => {}')).toMatchObject({ ok: true, value: null });
  });

  it('returns its console lines with the result, by level', async () => {
    const outcome = await run(
      `export default (args) => {
        console.log('count', args.n, { a: 1 });
        console.info('info');
        console.warn('careful');
        console.error(new TypeError('shown'));
        console.debug([1, 2]);
        return true;
      }`,
      { n: 2 },
    );
    expect(outcome).toEqual({
      ok: true,
      value: true,
      console: [
        { level: 'log', message: 'count 2 {"a":1}' },
        { level: 'info', message: 'info' },
        { level: 'warn', message: 'careful' },
        { level: 'error', message: 'TypeError: shown' },
        { level: 'debug', message: '[1,2]' },
      ],
    });
  });

  it('uses standard JavaScript: classes, generators, Map, JSON, RegExp, Date, Math', async () => {
    const outcome = await run(`
      class Counter { #n = 0; inc() { return ++this.#n; } }
      function* take(n) { for (let i = 0; i < n; i++) yield i; }
      export default async function () {
        const c = new Counter(); c.inc();
        const m = new Map([[1, 'a']]);
        return { n: c.inc(), gen: [...take(3)], map: m.get(1), re: /b+/.exec('abbbc')[0],
                 year: new Date(Date.UTC(2024, 0, 1)).getUTCFullYear(), max: Math.max(3, 9) };
      }`);
    expect(outcome).toMatchObject({
      ok: true,
      value: { n: 2, gen: [0, 1, 2], map: 'a', re: 'bbb', year: 2024, max: 9 },
    });
  });
});

describe('host functions', () => {
  it('awaits context reads and writes, several at once, each answered on the event loop', async () => {
    const reads: string[] = [];
    const writes: unknown[] = [];
    const context: Record<string, unknown> = { '/price': 12, '/qty': 3 };
    const host: ToolHost = {
      readContext: async (path) => {
        reads.push(path);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return context[path] as number;
      },
      writeContext: async (op, args) => {
        writes.push({ op, args });
        return { created: args.item };
      },
    };
    const started = performance.now();
    const outcome = await run(
      `export default async function (args, ctx) {
        const [price, qty] = await Promise.all([ctx.context.read('/price'), ctx.context.read('/qty')]);
        const saved = await ctx.context.write('create', { item: { total: price * qty, note: args.note } });
        return { total: price * qty, saved };
      }`,
      { note: 'n1' },
      host,
    );
    expect(outcome).toEqual({
      ok: true,
      value: { total: 36, saved: { created: { total: 36, note: 'n1' } } },
      console: [],
    });
    expect(reads.sort()).toEqual(['/price', '/qty']);
    expect(writes).toEqual([{ op: 'create', args: { item: { total: 36, note: 'n1' } } }]);
    // The two reads overlapped (20 ms each): well under two waits plus the rest.
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('fetches through the host and reads the answer like a Response', async () => {
    const requests: ToolFetchRequest[] = [];
    const host: ToolHost = {
      fetch: async (request) => {
        requests.push(request);
        return {
          status: 201,
          statusText: 'Created',
          headers: { 'Content-Type': 'application/json', 'X-Trace': 't1' },
          body: JSON.stringify({ id: 7 }),
          url: request.url,
        };
      },
    };
    const outcome = await run(
      `export default async function (args, ctx) {
        const res = await ctx.fetch('https://api.example.test/items', {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: args.name }),
        });
        return { ok: res.ok, status: res.status, type: res.headers.get('Content-Type'), trace: res.headers['x-trace'],
                 body: await res.json(), text: await res.text() };
      }`,
      { name: 'pen' },
      host,
    );
    expect(outcome).toMatchObject({
      ok: true,
      value: {
        ok: true,
        status: 201,
        type: 'application/json',
        trace: 't1',
        body: { id: 7 },
        text: '{"id":7}',
      },
    });
    expect(requests).toEqual([
      {
        url: 'https://api.example.test/items',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"pen"}',
      },
    ]);
  });

  it('sees only the host functions given, and the secrets given by name', async () => {
    const code = `export default (args, ctx) => ({
      keys: Object.keys(ctx), context: ctx.context && Object.keys(ctx.context), fetch: typeof ctx.fetch,
      token: ctx.secrets.API_TOKEN, names: Object.keys(ctx.secrets) })`;
    expect(await run(code)).toMatchObject({
      value: {
        keys: ['progress', 'log', 'client', 'elicit', 'sample', 'roots', 'secrets'],
        fetch: 'undefined',
        names: [],
      },
    });
    const readOnly = await run(code, {}, { readContext: async () => null, secrets: { API_TOKEN: 'tok' } });
    // A secret returned as is does not leave the sandbox (see the security suite); its name does.
    expect(readOnly).toMatchObject({
      value: {
        keys: ['context', 'progress', 'log', 'client', 'elicit', 'sample', 'roots', 'secrets'],
        context: ['read'],
        fetch: 'undefined',
        names: ['API_TOKEN'],
      },
    });
  });

  it('uses a secret in a host call: the host receives the plain value', async () => {
    let authorization: string | undefined;
    const host: ToolHost = {
      secrets: { API_TOKEN: 'tok-123456' },
      fetch: async (request) => {
        authorization = request.headers.authorization;
        return { status: 200, headers: {}, body: 'fine' };
      },
    };
    const outcome = await run(
      `export default async (args, ctx) => (await ctx.fetch('https://x.test', { headers: { authorization: 'Bearer ' + ctx.secrets.API_TOKEN } })).text()`,
      {},
      host,
    );
    expect(outcome).toMatchObject({ ok: true, value: 'fine' });
    expect(authorization).toBe('Bearer tok-123456');
  });
});

describe('checking a source when it is saved', () => {
  it('accepts a module whose default export is a function, with helpers and top-level code', async () => {
    expect(
      await sandbox.checkCustomToolSource(
        'const rate = 2;\nfunction double(x) { return x * rate; }\nexport default async function (args) { return double(args.n); }',
        'alice',
      ),
    ).toEqual({ ok: true });
  });
});

describe('notices', () => {
  it('hands ctx.progress and ctx.log to the host before the outcome, secrets out; a failing host fails nothing', async () => {
    const reports: unknown[] = [];
    const lines: unknown[] = [];
    const host: ToolHost = {
      secrets: { API_TOKEN: 'tok-123456' },
      progress: (report) => void reports.push(report),
      log: {
        level: 'info',
        send: (line) => {
          lines.push(line);
          throw new Error('the caller went away');
        },
      },
    };
    const outcome = await run(
      `export default (args, ctx) => {
        ctx.progress(1, 2, 'half of ' + ctx.secrets.API_TOKEN);
        ctx.log('debug', 'below the level');
        ctx.log('info', { token: ctx.secrets.API_TOKEN });
        ctx.log('error', 'second');
        ctx.progress(2, 2);
        return 'ok';
      }`,
      {},
      host,
    );
    expect(outcome).toMatchObject({ ok: true, value: 'ok' });
    expect(reports).toEqual([
      { progress: 1, total: 2, message: 'half of [secret]' },
      { progress: 2, total: 2 },
    ]);
    expect(lines).toEqual([
      { level: 'info', data: { token: '[secret]' } },
      { level: 'error', data: 'second' },
    ]);
  });

  it('takes a secret out of a log line cut for its size, also where JSON escapes it', async () => {
    const lines: { level: string; data: unknown }[] = [];
    const secret = 'pa"ss\\word-42';
    const host: ToolHost = {
      secrets: { PASSWORD: secret },
      log: { level: 'info', send: (line) => void lines.push(line) },
    };
    const outcome = await run(
      `export default (args, ctx) => {
        ctx.log('info', { password: ctx.secrets.PASSWORD, padding: 'x'.repeat(20000) });
        return 'ok';
      }`,
      {},
      host,
    );
    expect(outcome).toMatchObject({ ok: true, value: 'ok' });
    expect(lines).toHaveLength(1);
    const text = JSON.stringify(lines[0]!.data);
    expect(text).toContain('[secret]');
    expect(text).not.toContain('word-42');
    expect(text.length).toBeLessThan(20000);
  });

  it('sends nothing, and needs no host, when nobody listens', async () => {
    const outcome = await run(
      `export default (args, ctx) => { ctx.progress(1); ctx.log('emergency', 'x'); return 1; }`,
    );
    expect(outcome).toEqual({ ok: true, value: 1, console: [] });
  });
});
