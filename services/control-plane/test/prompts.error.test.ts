// Prompt templates refused at save, each with a clear error naming the field at fault and nothing
// stored: a placeholder naming no argument, an argument declared twice, a name taken in the AEI
// (409), a change that would leave a placeholder without its argument, bad names and shapes
// (400), too many characters of prompts in one AEI (422); another user's AEI or prompt is
// 404. Engine-independent: runs on PostgreSQL only.
import { PROMPT_LIMITS } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;
let stranger: { token: string };

const post = (body: unknown, token = f.token) =>
  t.call('POST', `/api/v2/aeis/${f.aeiId}/prompts`, { token, body });
const stored = () => t.database.prisma.aeiPrompt.count({ where: { aeiId: f.aeiId } });

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(t, { customers: [] }, { ask: { json_path: '/customers', operation_type: 'query' } });
  stranger = await t.newUser('stranger');
});
afterAll(() => t.close());

describe('a template that does not hold together', () => {
  it('a placeholder naming no argument: 400 naming the message and the placeholder', async () => {
    const res = await post({
      name: 'p',
      arguments: [{ name: 'customer' }],
      messages: [
        { role: 'user', text: 'fine {{customer}}' },
        { role: 'user', text: 'typo {{ custmer }}' },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining('messages[1].text uses the placeholder {{custmer}}'),
      details: { field: 'messages[1].text', placeholder: 'custmer' },
    });
    expect(res.body.error.message).toContain('declared: customer');
    const none = await post({ name: 'p', messages: [{ role: 'user', text: 'hi {{who}}' }] });
    expect(none.body.error.message).toContain('the prompt declares none');
    expect(await stored()).toBe(0);
  });

  it('an argument declared twice: 400 naming it', async () => {
    const res = await post({
      name: 'p',
      arguments: [{ name: 'a' }, { name: 'b' }, { name: 'a', required: true }],
      messages: [{ role: 'user', text: '{{a}} {{b}}' }],
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'argument "a" is declared twice',
      details: { field: 'arguments[2].name' },
    });
    expect(await stored()).toBe(0);
  });

  it('bad names and shapes: 400 from the schema', async () => {
    const bodies = [
      { name: 'has space', messages: [{ role: 'user', text: 'x' }] },
      { name: 'p', messages: [] },
      { name: 'p', messages: [{ role: 'system', text: 'x' }] },
      { name: 'p', messages: [{ role: 'user', text: '' }] },
      { name: 'p', arguments: [{ name: '1st' }], messages: [{ role: 'user', text: 'x' }] },
      {
        name: 'p',
        arguments: [{ name: 'a', choices: [] as string[], extra: 1 }],
        messages: [{ role: 'user', text: 'x' }],
      },
      { name: 'p', messages: [{ role: 'user', text: 'x'.repeat(PROMPT_LIMITS.maxMessageChars + 1) }] },
    ];
    for (const body of bodies) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    expect(await stored()).toBe(0);
  });
});

describe('names, changes and limits', () => {
  let id: string;

  it('a name already taken in the AEI: 409, on create and on rename', async () => {
    const first = await post({
      name: 'taken',
      arguments: [{ name: 'a' }],
      messages: [{ role: 'user', text: '{{a}}' }],
    });
    expect(first.status).toBe(201);
    id = first.body.id;
    const again = await post({ name: 'taken', messages: [{ role: 'user', text: 'x' }] });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', details: { name: 'taken', field: 'name' } });
    const other = await post({ name: 'other', messages: [{ role: 'user', text: 'x' }] });
    expect(other.status).toBe(201);
    const rename = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/prompts/${other.body.id}`, {
      token: f.token,
      body: { name: 'taken' },
    });
    expect(rename.status).toBe(409);
  });

  it('a change that drops an argument its messages still use: 400, the prompt unchanged', async () => {
    const res = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, {
      token: f.token,
      body: { arguments: [] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject({ field: 'messages[0].text', placeholder: 'a' });
    const now = await t.call('GET', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, { token: f.token });
    expect(now.body.arguments).toEqual([{ name: 'a' }]);
    const empty = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, {
      token: f.token,
      body: {},
    });
    expect(empty.status).toBe(400);
  });

  it('more characters in all than an AEI may carry: 422 LIMIT_EXCEEDED with the total', async () => {
    // 12 messages of 65,536 characters: about 0.75 MiB a prompt, well within a request body.
    const messages = Array.from({ length: 12 }, () => ({
      role: 'user',
      text: 'y'.repeat(PROMPT_LIMITS.maxMessageChars),
    }));
    const fit = Math.floor(PROMPT_LIMITS.maxTotalChars / (12 * PROMPT_LIMITS.maxMessageChars));
    for (let i = 0; i < fit; i++) {
      const res = await post({ name: `big_${i}`, messages });
      expect(res.status).toBe(201);
    }
    const before = await stored();
    const over = await post({ name: 'one_more', messages });
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { limit: PROMPT_LIMITS.maxTotalChars, total: expect.any(Number) },
    });
    expect(await stored()).toBe(before);
  });
});

describe('other users', () => {
  it('another user’s AEI and its prompts are 404 on every route', async () => {
    const [prompt] = (await t.call('GET', `/api/v2/aeis/${f.aeiId}/prompts`, { token: f.token })).body.items;
    const base = `/api/v2/aeis/${f.aeiId}/prompts`;
    const calls = [
      t.call('POST', base, {
        token: stranger.token,
        body: { name: 'x', messages: [{ role: 'user', text: 'x' }] },
      }),
      t.call('GET', base, { token: stranger.token }),
      t.call('GET', `${base}/${prompt.id}`, { token: stranger.token }),
      t.call('PATCH', `${base}/${prompt.id}`, { token: stranger.token, body: { title: 'mine' } }),
      t.call('DELETE', `${base}/${prompt.id}`, { token: stranger.token }),
    ];
    for (const res of await Promise.all(calls)) expect(res.status).toBe(404);
    const still = await t.call('GET', `${base}/${prompt.id}`, { token: f.token });
    expect(still.body.title).toBeNull();
  });
});
