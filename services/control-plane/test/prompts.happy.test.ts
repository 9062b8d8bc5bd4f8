// Prompt templates of an AEI through the admin API: created, listed, read, changed and deleted;
// every change reaches config v2 (sorted by name, with a new config_version and a config-change
// event, so gateways drop the cached config); a disabled AEI's config carries none; deleting the
// AEI deletes its prompts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;

const config = async () => {
  const res = await t.call('GET', `/internal/keys/${f.apiKey}/config`, { token: INTERNAL_TOKEN });
  expect(res.status).toBe(200);
  return res.body.config;
};

const REVIEW = {
  name: 'review_customer',
  title: 'Review a customer',
  description: 'Asks for a review of one customer in a tone',
  arguments: [
    { name: 'customer', description: 'the customer id', required: true },
    { name: 'tone', choices: ['friendly', 'formal', 'blunt'] },
  ],
  messages: [
    { role: 'user', text: 'Review customer {{customer}} in a {{ tone }} tone.' },
    { role: 'assistant', text: 'Reading {{customer}} first.' },
  ],
};

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { customers: [{ id: 1 }] },
    { ask: { json_path: '/customers', operation_type: 'query' } },
  );
});
afterAll(() => t.close());

describe('prompt templates', () => {
  let id: string;

  it('are created with their arguments and messages, and reach config v2 with a new config_version', async () => {
    const before = (await config()).aei.config_version;
    const changes = t.configChanges.length;
    const res = await t.call('POST', `/api/v2/aeis/${f.aeiId}/prompts`, { token: f.token, body: REVIEW });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ...REVIEW, aei_id: f.aeiId, id: expect.stringMatching(/^pmt_/) });
    id = res.body.id;
    const after = await config();
    expect(after.aei.config_version).toBe(before + 1);
    expect(after.prompts).toEqual([REVIEW]);
    expect(t.configChanges.slice(changes)).toEqual([[f.aeiId]]);
  });

  it('are listed (by id, paged like every list) and read one by one', async () => {
    const other = await t.call('POST', `/api/v2/aeis/${f.aeiId}/prompts`, {
      token: f.token,
      body: { name: 'a_greeting', messages: [{ role: 'user', text: 'Hello!' }] },
    });
    expect(other.status).toBe(201);
    expect(other.body).toMatchObject({ arguments: [], title: null, description: null });
    const page = await t.call('GET', `/api/v2/aeis/${f.aeiId}/prompts?limit=1`, { token: f.token });
    expect(page.status).toBe(200);
    expect(page.body.items.map((p: { name: string }) => p.name)).toEqual(['review_customer']);
    const rest = await t.call('GET', `/api/v2/aeis/${f.aeiId}/prompts?cursor=${page.body.next_cursor}`, {
      token: f.token,
    });
    expect(rest.body.items.map((p: { name: string }) => p.name)).toEqual(['a_greeting']);
    expect(rest.body.next_cursor).toBeNull();
    const one = await t.call('GET', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, { token: f.token });
    expect(one.body).toMatchObject(REVIEW);
    // Config v2 carries them by name: the order prompts/list pages them in.
    expect((await config()).prompts.map((p: { name: string }) => p.name)).toEqual([
      'a_greeting',
      'review_customer',
    ]);
  });

  it('are changed in part (null clears the title) and the config follows', async () => {
    const res = await t.call('PATCH', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, {
      token: f.token,
      body: { title: null, messages: [{ role: 'user', text: 'Just {{customer}}.' }] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ title: null, arguments: REVIEW.arguments, name: REVIEW.name });
    const inConfig = (await config()).prompts.find((p: { name: string }) => p.name === REVIEW.name);
    expect(inConfig).toEqual({
      name: REVIEW.name,
      description: REVIEW.description,
      arguments: REVIEW.arguments,
      messages: [{ role: 'user', text: 'Just {{customer}}.' }],
    });
  });

  it('are left out of a disabled AEI’s config', async () => {
    expect(
      (await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'disabled' } }))
        .status,
    ).toBe(200);
    expect((await config()).prompts).toEqual([]);
    expect(
      (await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'enabled' } }))
        .status,
    ).toBe(200);
    expect((await config()).prompts).toHaveLength(2);
  });

  it('are deleted one by one, and with their AEI', async () => {
    expect((await t.call('DELETE', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, { token: f.token })).status).toBe(
      204,
    );
    expect((await t.call('GET', `/api/v2/aeis/${f.aeiId}/prompts/${id}`, { token: f.token })).status).toBe(
      404,
    );
    expect((await config()).prompts.map((p: { name: string }) => p.name)).toEqual(['a_greeting']);
    expect((await t.call('DELETE', `/api/v2/aeis/${f.aeiId}`, { token: f.token })).status).toBe(204);
    const count = await t.database.prisma.aeiPrompt.count({ where: { aeiId: f.aeiId } });
    expect(count).toBe(0);
  });
});
