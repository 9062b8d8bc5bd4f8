// Pins what a custom tool cannot do, through the kind as an agent would call it: reach the host
// (process, require, globalThis.fetch, eval or constructor chains of the host objects in ctx,
// prototype changes that outlive the call); read or write outside its context, or write a
// read-only one; fetch a host it does not list, follow a redirect to one, or reach a loopback
// server without HTTP_TOOLS_ALLOWED_NETWORKS; use another user's secrets. A secret it holds never
// appears in its result, console, error, the logs or the audit rows, in any of its usual forms,
// nor encoded (base64, hex, percent-encoded) when an API it fetches echoes it so.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { customTool, customToolUser, type CustomToolUser } from './support/custom-tools.ts';
import { embeddedEncodings, redactedInside, standaloneEncodings } from './support/secret-encodings.ts';

// A value whose JSON-escaped and URL-encoded forms differ from it, as secrets often do.
const SECRET = 'sk-live/"7Q9+zX4w=kP"';
const SECRET_PIECES = Array.from({ length: SECRET.length - 5 }, (_, i) => SECRET.slice(i, i + 6));
const ENCODED_PIECES = [encodeURIComponent(SECRET), JSON.stringify(SECRET).slice(1, -1)];

let t: TestApp;
let u: CustomToolUser;
const logLines: string[] = [];
let server: Server;
let port: number;
const hits: { url: string; authorization: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push({ url: req.url ?? '', authorization: req.headers.authorization });
    if (req.url === '/encoded') {
      const key = req.headers.authorization ?? '';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...standaloneEncodings(key), ...embeddedEncodings(key) }));
      return;
    }
    if (req.url === '/redirect') {
      // The same server under another name: a host the tool does not list.
      res.writeHead(302, { location: `http://localhost:${port}/landed` });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`you sent ${req.headers.authorization ?? 'nothing'}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  t = await startTestApp({
    allowedNetworks: ['127.0.0.1/32'],
    logStream: { write: (line) => void logLines.push(line) },
  });
  u = await customToolUser(t, { public: { items: [1, 2] }, private: { pin: '0000' } });
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('no way out of the sandbox', () => {
  it('no process, require, fetch or timers; eval and constructor chains of ctx reach only the sandbox', async () => {
    await u.add(
      'probe',
      customTool(
        `export default async (args, ctx) => {
          const viaCtx = [
            // An async function's constructor is AsyncFunction: its functions answer promises.
            await ctx.context.read.constructor('return typeof process + typeof require')(),
            ctx.constructor.constructor('return typeof globalThis.fetch')(),
            (0, eval)('typeof process'),
            ctx.context.read.constructor.constructor('return this')() === globalThis,
          ];
          let imported;
          try { await import('node:fs'); imported = 'yes'; } catch (e) { imported = 'no'; }
          return {
            globals: ['process', 'require', 'fetch', 'setTimeout', 'Buffer'].map((n) => typeof globalThis[n]),
            viaCtx,
            imported,
          };
        }`,
        { context: { table_id: u.tableId, json_path: '/public' } },
      ),
    );
    const answer = await u.call('probe');
    expect(answer).toMatchObject({
      isError: false,
      value: {
        globals: Array(5).fill('undefined'),
        viaCtx: ['undefinedundefined', 'undefined', 'undefined', true],
        imported: 'no',
      },
    });
  });

  it('prototype changes reach neither the host nor the next call', async () => {
    await u.add(
      'polluter',
      customTool(
        `export default (args) => {
          const before = ({}).polluted ?? null;
          Object.prototype.polluted = 'yes';
          Array.prototype.push = () => 'hijacked';
          JSON.stringify = () => 'hijacked';
          return { before, now: ({}).polluted, list: [1, 2] };
        }`,
      ),
    );
    const first = await u.call('polluter');
    expect(first.value).toEqual({ before: null, now: 'yes', list: [1, 2] });
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    const second = await u.call('polluter');
    expect(second.value.before).toBeNull();
  });
});

describe('the context, and only it', () => {
  it('reads stay inside the context: climbing and object internals are refused', async () => {
    await u.add(
      'reader',
      customTool(
        `export default async (args, ctx) => {
          const out = { whole: await ctx.context.read('') };
          for (const path of ['/..', '/../private', '/items/../../private', '/__proto__', '/constructor']) {
            try { out[path] = await ctx.context.read(path); } catch (e) { out[path] = e.code; }
          }
          out.write = typeof ctx.context.write;
          return out;
        }`,
        { context: { table_id: u.tableId, json_path: '/public' } },
      ),
    );
    const answer = await u.call('reader');
    expect(answer.value).toEqual({
      whole: { items: [1, 2] },
      '/..': 'VALIDATION_FAILED',
      '/../private': 'VALIDATION_FAILED',
      '/items/../../private': 'VALIDATION_FAILED',
      '/__proto__': 'VALIDATION_FAILED',
      '/constructor': 'VALIDATION_FAILED',
      // Read-only context: no write function at all.
      write: 'undefined',
    });
    expect(JSON.stringify(answer)).not.toContain('0000');
  });

  it('a tool without a context or hosts has neither ctx.context nor ctx.fetch', async () => {
    await u.add(
      'bare',
      customTool(
        'export default (args, ctx) => [typeof ctx.context, typeof ctx.fetch, Object.keys(ctx.secrets)]',
      ),
    );
    expect((await u.call('bare')).value).toEqual(['undefined', 'undefined', []]);
  });
});

describe('ctx.fetch', () => {
  const fetcher = (url: string) =>
    customTool(
      `export default async (args, ctx) => {
        try { const res = await ctx.fetch(${JSON.stringify(url)}); return { status: res.status }; }
        catch (e) { return { code: e.code, message: e.message }; }
      }`,
      { allowed_hosts: [`127.0.0.1:${port}`] },
    );

  it('a host not in allowed_hosts is refused before any request', async () => {
    await u.add('other_port', {
      ...customTool(
        `export default async (args, ctx) => {
          try { await ctx.fetch('http://127.0.0.1:${port + 1}/x'); return 'sent'; }
          catch (e) { return { code: e.code, message: e.message }; }
        }`,
      ),
      allowed_hosts: [`127.0.0.1:${port}`],
    });
    const before = hits.length;
    const answer = await u.call('other_port');
    expect(answer.value).toEqual({
      code: 'FORBIDDEN',
      message: `ctx.fetch: host 127.0.0.1:${port + 1} is not in this tool's allowed_hosts (127.0.0.1:${port})`,
    });
    expect(hits.length).toBe(before);
  });

  it('a redirect to a host not in allowed_hosts is not followed', async () => {
    await u.add('redirected', fetcher(`http://127.0.0.1:${port}/redirect`));
    const before = hits.length;
    const answer = await u.call('redirected');
    expect(answer.value).toMatchObject({ code: 'FORBIDDEN' });
    expect(answer.value.message).toMatch(
      `the redirect to localhost:${port} is not in this tool's allowed_hosts`,
    );
    expect(hits.slice(before).map((h) => h.url)).toEqual(['/redirect']);
  });

  it('a listed loopback host is still refused without HTTP_TOOLS_ALLOWED_NETWORKS', async () => {
    const strict = await startTestApp();
    try {
      const author = await customToolUser(strict, {}, 'strict');
      await author.add('loopback', fetcher(`http://127.0.0.1:${port}/hello`));
      const before = hits.length;
      const answer = await author.call('loopback');
      expect(answer.value).toMatchObject({ code: 'FORBIDDEN' });
      expect(answer.value.message).toMatch(/HTTP_TOOLS_ALLOWED_NETWORKS/);
      expect(hits.length).toBe(before);
    } finally {
      await strict.close();
    }
  });
});

describe('secrets', () => {
  it('another user’s secret cannot be named', async () => {
    const owner = await t.newUser('secret-owner');
    expect(
      (
        await t.call('POST', '/api/v2/secrets', {
          token: owner.token,
          body: { name: 'THEIRS', value: 'x'.repeat(12) },
        })
      ).status,
    ).toBe(201);
    const res = await u.save(customTool('export default () => 1', { secrets: ['THEIRS'] }));
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject({ field: 'secrets', missing: ['THEIRS'] });
  });

  it('a secret reaches its API but never the result, console, errors, logs or audit rows', async () => {
    const created = await t.call('POST', '/api/v2/secrets', {
      token: u.token,
      body: { name: 'API_TOKEN', value: SECRET },
    });
    expect(created.status).toBe(201);
    const withSecret = { secrets: ['API_TOKEN'], allowed_hosts: [`127.0.0.1:${port}`] };
    await u.add(
      'leaky',
      customTool(
        `export default async (args, ctx) => {
          const token = ctx.secrets.API_TOKEN;
          console.log('using', token, encodeURIComponent(token));
          const res = await ctx.fetch('http://127.0.0.1:${port}/api', { headers: { authorization: token } });
          return { token, quoted: JSON.stringify({ token }), encoded: encodeURIComponent(token), echoed: await res.text(), [token]: 1 };
        }`,
        withSecret,
      ),
    );
    await u.add(
      'thrower',
      customTool(
        'export default (args, ctx) => { throw new Error("bad token " + ctx.secrets.API_TOKEN); }',
        withSecret,
      ),
    );

    const before = hits.length;
    const leaky = await u.call('leaky');
    const thrown = await u.call('thrower');
    // The API got the real value.
    expect(hits.slice(before)).toEqual([{ url: '/api', authorization: SECRET }]);
    expect(leaky.isError).toBe(false);
    expect(leaky.value.token).toMatch(/^\[secret/);
    expect(leaky.meta['bindery/console'][0].message).toMatch(/^using \[secret/);
    expect(thrown).toMatchObject({ isError: true, value: { error: { code: 'UPSTREAM_FAILED' } } });
    expect(thrown.value.error.message).toMatch(/bad token \[secret/);

    const audit = await t.database.prisma.auditEvent.findMany({ where: { userId: u.userId } });
    expect(audit.length).toBeGreaterThan(0);
    const everything = [
      JSON.stringify(leaky),
      JSON.stringify(thrown),
      JSON.stringify(audit),
      logLines.join('\n'),
    ];
    for (const text of everything) {
      for (const piece of [...SECRET_PIECES, ...ENCODED_PIECES]) expect(text).not.toContain(piece);
    }
  });

  it('an API that echoes it encoded (base64, hex, percent-encoded) gives the tool back only markers', async () => {
    const value = 'enc/"K3y+w=9&Zq~!';
    const created = await t.call('POST', '/api/v2/secrets', {
      token: u.token,
      body: { name: 'ENC_TOKEN', value },
    });
    expect(created.status).toBe(201);
    await u.add(
      'echoed',
      customTool(
        `export default async (args, ctx) => {
          const res = await ctx.fetch('http://127.0.0.1:${port}/encoded', {
            headers: { authorization: ctx.secrets.ENC_TOKEN },
          });
          const echoed = JSON.parse(await res.text());
          console.log('base64 ' + echoed.base64);
          return echoed;
        }`,
        { secrets: ['ENC_TOKEN'], allowed_hosts: [`127.0.0.1:${port}`] },
      ),
    );
    const before = hits.length;
    const answer = await u.call('echoed');
    expect(hits.slice(before)).toEqual([{ url: '/encoded', authorization: value }]);
    expect(answer.isError).toBe(false);
    for (const name of Object.keys(standaloneEncodings(value))) {
      expect(answer.value[name], name).toBe('[secret ENC_TOKEN]');
    }
    for (const name of Object.keys(embeddedEncodings(value))) {
      expect(answer.value[name], name).toMatch(redactedInside('[secret ENC_TOKEN]'));
    }
    expect(answer.meta['bindery/console'][0].message).toBe('base64 [secret ENC_TOKEN]');
    const everything = JSON.stringify(answer) + logLines.join('\n');
    for (const encoded of Object.values({ ...standaloneEncodings(value), ...embeddedEncodings(value) })) {
      expect(everything).not.toContain(encoded);
    }
  });
});
