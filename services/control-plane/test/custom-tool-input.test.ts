// Pins how a custom tool asks its client for input, in the sandbox itself (ctx.elicit, ctx.sample,
// ctx.roots, ctx.client), and the requestState that carries a call from one round to the next:
// - a request without an answer ends the round once nothing else can go on, with every request
//   the tool made by then (three at once with Promise.all), keyed as the tool named them or
//   numbered per function; a host call in flight is waited for first;
// - an answer given under the key is what the function resolves with (ctx.roots: the roots), and
//   its key is reported as used; an answer of the wrong shape, a bad key and too many requests
//   are tool errors naming the problem; secrets are taken out of what the client is asked;
// - a capability the client did not declare: ctx.client says so, and asking anyway is an error
//   the tool may catch, or, uncaught, PRECONDITION_FAILED naming the capability;
// - requestState: sealed and opened again by any holder of the same internal token; altered,
//   brought back for another call, past its expiry, or from another deployment: refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustomToolSandbox, MAX_INPUT_REQUESTS, type ToolHost } from '../src/kinds/custom/sandbox/index.ts';
import type { ToolInput } from '../src/kinds/custom/sandbox/protocol.ts';
import { RequestStateError, RequestStates, type StateOwner } from '../src/execution/request-state.ts';

let sandbox: CustomToolSandbox;

beforeAll(() => {
  sandbox = new CustomToolSandbox({ threads: 1, queue: 8, perTenant: 8, memoryMb: 32 });
});
afterAll(() => sandbox.close());

const ALL = { elicitation: true, sampling: true, roots: true };
const run = (code: string, input?: ToolInput, host?: ToolHost) =>
  sandbox.runCustomTool(
    { code: `export default async (args, ctx) => { ${code} }`, args: {}, tenant: 't', input },
    host,
  );
const NAME = `{ type: 'object', properties: { name: { type: 'string' } } }`;

describe('asking the client', () => {
  it('ends the round with every request the tool made, keyed', async () => {
    const outcome = await run(
      `const [a, b, c] = await Promise.all([
        ctx.elicit('Name?', ${NAME}, { key: 'user_name' }),
        ctx.sample('Say hi'),
        ctx.roots(),
      ]);
      return 'never';`,
      { capabilities: ALL, responses: {} },
    );
    expect(outcome).toEqual({
      ok: 'input',
      requests: {
        user_name: {
          method: 'elicitation/create',
          params: {
            message: 'Name?',
            requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
          },
        },
        'sample-1': {
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }],
            maxTokens: 1000,
          },
        },
        'roots-1': { method: 'roots/list', params: {} },
      },
      answered: [],
      console: [],
    });
  });

  it('answers from the responses by key, and reports the keys it used', async () => {
    const outcome = await run(
      `const name = await ctx.elicit('Name?', ${NAME});
      const roots = await ctx.roots();
      const again = await ctx.elicit('Colour?', ${NAME});
      return [name.content.name, roots.map((r) => r.uri)];`,
      {
        capabilities: ALL,
        responses: {
          'elicit-1': { action: 'accept', content: { name: 'Ada' } },
          'roots-1': { roots: [{ uri: 'file:///a' }] },
          unused: { action: 'decline' },
        },
      },
    );
    expect(outcome).toMatchObject({
      ok: 'input',
      requests: { 'elicit-2': { method: 'elicitation/create', params: { message: 'Colour?' } } },
    });
    expect(outcome.ok === 'input' && outcome.answered.sort()).toEqual(['elicit-1', 'roots-1']);

    const done = await run(`const name = await ctx.elicit('Name?', ${NAME}); return name.action;`, {
      capabilities: ALL,
      responses: { 'elicit-1': { action: 'decline' } },
    });
    expect(done).toMatchObject({ ok: true, value: 'decline' });
  });

  it('waits for a host call in flight before it ends the round', async () => {
    let answered = false;
    const host: ToolHost = {
      readContext: async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        answered = true;
        return { n: 1 };
      },
    };
    const outcome = await run(
      `const [data, name] = await Promise.all([ctx.context.read(''), ctx.elicit('Name?', ${NAME})]);
      return data;`,
      { capabilities: ALL, responses: {} },
      host,
    );
    expect(answered).toBe(true);
    expect(outcome).toMatchObject({ ok: 'input', requests: { 'elicit-1': {} } });
  });

  it('refuses an answer of the wrong shape, a bad key and too many requests, by name', async () => {
    const wrong = await run(`return await ctx.elicit('Name?', ${NAME}, { key: 'k' });`, {
      capabilities: ALL,
      responses: { k: { action: 'maybe' } },
    });
    expect(wrong).toMatchObject({
      ok: false,
      message: expect.stringMatching(/ctx\.elicit: the client answered "k" with an action other than/),
    });
    const badKey = await run(`return await ctx.elicit('Name?', ${NAME}, { key: 'no spaces' });`, {
      capabilities: ALL,
      responses: {},
    });
    expect(badKey).toMatchObject({ ok: false, message: expect.stringContaining('options.key') });
    const many = await run(
      `await Promise.all(Array.from({ length: ${MAX_INPUT_REQUESTS + 1} }, () => ctx.roots()));`,
      { capabilities: ALL, responses: {} },
    );
    expect(many).toMatchObject({
      ok: false,
      message: expect.stringContaining(`at most ${MAX_INPUT_REQUESTS} things at once`),
    });
  });

  it('takes secrets out of what the client is asked', async () => {
    const outcome = await run(`return await ctx.elicit('Token is ' + ctx.secrets.api, ${NAME});`, undefined, {
      secrets: { api: 'sk-live-0123456789abcdef' },
    });
    // Without input nothing is asked; with it, the request carries no secret.
    expect(outcome).toMatchObject({ ok: false, code: 'PRECONDITION_FAILED' });
    const asked = await run(
      `return await ctx.elicit('Token is ' + ctx.secrets.api, ${NAME});`,
      { capabilities: ALL, responses: {} },
      { secrets: { api: 'sk-live-0123456789abcdef' } },
    );
    expect(JSON.stringify(asked)).not.toContain('sk-live-0123456789abcdef');
    expect(asked).toMatchObject({ ok: 'input' });
  });
});

describe('a client without the capability', () => {
  it('is told by ctx.client, and an uncaught ask is PRECONDITION_FAILED naming it', async () => {
    const flags = await run('return ctx.client;', { capabilities: { sampling: true }, responses: {} });
    expect(flags).toMatchObject({ ok: true, value: { elicitation: false, sampling: true, roots: false } });
    const none = await run('return ctx.client;');
    expect(none).toMatchObject({ ok: true, value: { elicitation: false, sampling: false, roots: false } });

    const refused = await run(`return await ctx.sample('hi');`, {
      capabilities: { elicitation: true },
      responses: {},
    });
    expect(refused).toMatchObject({
      ok: false,
      code: 'PRECONDITION_FAILED',
      message: expect.stringContaining('did not declare the sampling capability'),
      missingCapabilities: ['sampling'],
    });
  });

  it('lets the tool catch the error and go on', async () => {
    const outcome = await run(
      `try { await ctx.elicit('Name?', ${NAME}); } catch (error) { return 'fallback: ' + error.code; }`,
      { capabilities: {}, responses: {} },
    );
    expect(outcome).toMatchObject({ ok: true, value: 'fallback: MISSING_CLIENT_CAPABILITY' });
  });
});

describe('requestState', () => {
  const owner: StateOwner = { aeiId: 'a', bindingId: 'b', caller: null, argsDigest: 'd' };
  const answers = { user_name: { action: 'accept', content: { name: 'Ada' } } };

  it('opens again, on another holder of the same token, as it was sealed', () => {
    const state = new RequestStates('token').seal(owner, answers);
    expect(new RequestStates('token').open(state, owner)).toEqual(answers);
  });

  it('is refused altered, for another call, past its expiry, or from another deployment', () => {
    let now = 1_000_000;
    const states = new RequestStates('token', { ttlMs: 1_000, now: () => now });
    const state = states.seal(owner, answers);
    const [body, signature] = state.split('.') as [string, string];
    const forged = Buffer.from(
      JSON.stringify({
        ...JSON.parse(Buffer.from(body, 'base64url').toString()),
        r: { user_name: { action: 'accept', content: { name: 'Root' } } },
      }),
    ).toString('base64url');
    for (const altered of [`${state}x`, `${forged}.${signature}`, body, '', 'a.b.c']) {
      expect(() => states.open(altered, owner), altered).toThrow(/altered/);
    }
    for (const other of [
      { ...owner, argsDigest: 'e' },
      { ...owner, bindingId: 'c' },
      { ...owner, caller: 'someone' },
    ]) {
      expect(() => states.open(state, other)).toThrow(/another call/);
    }
    expect(() => new RequestStates('another token').open(state, owner)).toThrow(RequestStateError);
    now += 1_001;
    expect(() => states.open(state, owner)).toThrow(/expired/);
  });
});
