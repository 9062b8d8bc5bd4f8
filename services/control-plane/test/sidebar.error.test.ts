// Pins how the sidebar answers bad input: a command's own fault (unknown command, bad JSON, an
// unclosed quote, a path with nothing at it, an unknown table, a bad JMESPath) is printed as the
// terminal would, with its code, and writes nothing; an agent cannot flood the person (100
// proposals waiting per session, 429 beyond) nor open sessions without bound (50 open, 429 beyond);
// an expired session's token is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let token: string;
let tableId: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ token } = await t.newUser('sidebar-errors'));
  tableId = (await t.call('POST', '/api/v2/tables', { token, body: { name: 'crm', data: { items: [] } } }))
    .body.id;
});
afterAll(() => t.close());

async function open(as = token) {
  const res = await t.call('POST', '/api/v2/sidebar/sessions', { token: as, body: { table_id: tableId } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; token: string };
}

const run = (id: string, command: string, as = token) =>
  t.call('POST', `/api/v2/sidebar/sessions/${id}/commands`, { token: as, body: { command } });

describe("a command's own fault", () => {
  it('is printed with its code, and nothing is written', async () => {
    const s = await open();
    const version = (await t.call('GET', `/api/v2/tables/${tableId}`, { token })).body.version;
    const cases: [string, string, RegExp][] = [
      ['frob', 'VALIDATION_FAILED', /unknown command "frob"; type help/],
      ['set items {"a": ', 'VALIDATION_FAILED', /the value is not JSON/],
      ['set items', 'VALIDATION_FAILED', /usage: set PATH JSON/],
      ["rm 'items", 'VALIDATION_FAILED', /quote \(.\) is not closed/],
      ['cat nothing/here', 'NOT_FOUND', /nothing/],
      ['use nope', 'NOT_FOUND', /no table "nope" of yours/],
      ["query 'items[?'", 'INVALID_QUERY', /not valid JMESPath/],
      ['add items/x 1', 'VALIDATION_FAILED', /"x" is not an array index/],
      ['mv items', 'VALIDATION_FAILED', /usage: mv FROM TO/],
      ['undo', 'NOT_FOUND', /no applied change to undo/],
      // Unstorable once parsed (the body held only the escape): refused, never a 500.
      ['set items/0 "\\u0000"', 'VALIDATION_FAILED', /NUL|U\+0000/],
      ['set items/0 "\\ud800"', 'VALIDATION_FAILED', /surrogate/],
      ['set items/0 1e999', 'VALIDATION_FAILED', /too large|overflow|Infinity|double/],
    ];
    for (const [command, code, message] of cases) {
      const res = await run(s.id, command);
      expect(res.status, command).toBe(200);
      expect(res.body.error?.code, command).toBe(code);
      expect(res.body.output, command).toMatch(/^error: /);
      expect(res.body.output, command).toMatch(message);
      expect(res.body.proposal, command).toBeUndefined();
    }
    expect((await t.call('GET', `/api/v2/tables/${tableId}`, { token })).body.version).toBe(version);
  });

  it('refuses a body that is not a command', async () => {
    const s = await open();
    for (const body of [
      {},
      { command: '' },
      { command: 'ls', extra: 1 },
      { command: 'ls', wait_ms: 10 ** 9 },
    ]) {
      const res = await t.call('POST', `/api/v2/sidebar/sessions/${s.id}/commands`, { token, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('a rule on an array item', () => {
  it('holds for a context path that spells the index another way ("-1")', async () => {
    const { token: person } = await t.newUser('sidebar-index');
    const table = (
      await t.call('POST', '/api/v2/tables', {
        token: person,
        body: { name: 'crm', data: { items: [{ n: 1 }, { n: 2 }] } },
      })
    ).body;
    await t.call('PUT', `/api/v2/tables/${table.id}/rules`, {
      token: person,
      body: { person_only: ['/items/1'] },
    });
    const s = (await t.call('POST', '/api/v2/sidebar/sessions', { token: person, body: {} })).body;
    expect((await run(s.id, 'use crm /items/-1', s.token)).body.output).toMatch(/^crm \/items\/1 /);
    const proposal = (await run(s.id, 'set n 3', s.token)).body.proposal;
    expect(proposal.status).toBe('blocked');
    expect(proposal.verdicts.find((v: { ok: boolean }) => !v.ok).rule).toBe('person_only');
    const refused = await t.call('PUT', `/api/v2/tables/${table.id}/rules`, {
      token: person,
      body: { person_only: ['/items/-1'] },
    });
    expect(refused.status).toBe(400);
  });
});

describe('bounds', () => {
  it('let at most 100 proposals of a session wait for a verdict', async () => {
    const s = await open();
    for (let i = 0; i < 100; i++) {
      const res = await run(s.id, `add items ${i}`, s.token);
      expect(res.body.proposal?.status, res.body.output).toBe('pending');
    }
    const refused = await run(s.id, 'add items 100', s.token);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMITED');
    // Deciding one makes room again.
    const list = await t.call('GET', `/api/v2/sidebar/sessions/${s.id}/proposals?status=pending`, { token });
    await t.call('POST', `/api/v2/sidebar/proposals/${list.body.items[0].id}/reject`, { token, body: {} });
    expect((await run(s.id, 'add items 100', s.token)).body.proposal.status).toBe('pending');
  });

  it('let a person hold at most 50 open sessions', async () => {
    const { token: other } = await t.newUser('sidebar-many');
    const sessions = [];
    for (let i = 0; i < 50; i++) {
      const res = await t.call('POST', '/api/v2/sidebar/sessions', { token: other, body: {} });
      expect(res.status).toBe(201);
      sessions.push(res.body.id as string);
    }
    const refused = await t.call('POST', '/api/v2/sidebar/sessions', { token: other, body: {} });
    expect(refused.status).toBe(429);
    await t.call('PATCH', `/api/v2/sidebar/sessions/${sessions[0]}`, {
      token: other,
      body: { status: 'ended' },
    });
    expect((await t.call('POST', '/api/v2/sidebar/sessions', { token: other, body: {} })).status).toBe(201);
  });

  it("refuse an expired session's token", async () => {
    const s = await open();
    await t.app.domain.prisma.sidebarSession.update({
      where: { id: s.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const res = await run(s.id, 'ls', s.token);
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/expired/);
  });
});
