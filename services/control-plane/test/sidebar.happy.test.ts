// Pins the sidebar's API: a session opened by the person, commands that read at once, writes that
// become proposals showing their RFC 6902 patch, a before/after view and the table's rules'
// verdicts; approval applies exactly the shown change (audited with versions before and after),
// rejection tells the agent the person's note, a proposal made stale by another write is refused
// and re-offered on the data now, undo proposes the inverse, and an agent's command can wait for
// the verdict.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type CallResult, type TestApp } from './support/app.ts';

/** A proposal as the API answers it (each test asserts the fields it needs). */
type Proposal = CallResult['body'];

let t: TestApp;
let token: string;
let tableId: string;

const DATA = {
  customers: [
    { id: 1, name: 'Ann', tier: 'gold' },
    { id: 2, name: 'Bob', tier: 'silver' },
  ],
  settings: { theme: 'light' },
};

beforeAll(async () => {
  t = await startTestApp();
  ({ token } = await t.newUser('sidebar-person'));
  const table = await t.call('POST', '/api/v2/tables', { token, body: { name: 'crm', data: DATA } });
  tableId = table.body.id;
});
afterAll(() => t.close());

async function openSession(): Promise<{ id: string; token: string }> {
  const res = await t.call('POST', '/api/v2/sidebar/sessions', { token, body: {} });
  expect(res.status).toBe(201);
  expect(res.body.token).toMatch(/^bnd_sidebar_/);
  return res.body;
}

async function run(sessionId: string, command: string, as = token, extra: Record<string, unknown> = {}) {
  const res = await t.call('POST', `/api/v2/sidebar/sessions/${sessionId}/commands`, {
    token: as,
    body: { command, ...extra },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { output: string; proposal?: Proposal; error?: { code: string; message: string } };
}

async function data() {
  const res = await t.call('GET', `/api/v2/tables/${tableId}`, { token });
  return res.body as { version: number; data: typeof DATA };
}

describe('reads', () => {
  it('run at once: use, ls, cat, query, schema, pwd', async () => {
    const s = await openSession();
    expect((await run(s.id, 'ls')).error?.message).toMatch(/use TABLE/);
    expect((await run(s.id, 'use crm /customers')).output).toMatch(/^crm \/customers \(version \d+\)$/);
    const ls = (await run(s.id, 'ls')).output;
    expect(ls.split('\n')[0]).toMatch(/^#\s+id\s+name\s+tier$/);
    expect(ls).toContain('Ann');
    expect(JSON.parse((await run(s.id, 'cat 1')).output)).toEqual(DATA.customers[1]);
    expect((await run(s.id, "query 'length(@)'")).output).toBe('2');
    expect((await run(s.id, 'query \'[?tier==`"gold"`].name\'')).output).toBe(
      JSON.stringify(['Ann'], null, 2),
    );
    // One pair of outer quotes is stripped; raw string literals inside stay.
    expect((await run(s.id, "query '[?tier=='silver'].id'")).output).toBe(JSON.stringify([2], null, 2));
    expect((await run(s.id, "query '[?tier=='silver']'")).output).toMatch(/^id\s+name\s+tier\n/);
    expect(JSON.parse((await run(s.id, 'schema 0')).output).type).toBe('object');
    expect((await run(s.id, 'cd ..')).output).toBe('crm /');
    expect((await run(s.id, 'pwd')).output).toMatch(/^crm \/ \(version \d+\)$/);
    expect((await run(s.id, 'cat /nope')).error?.code).toBe('NOT_FOUND');
    expect((await run(s.id, 'frobnicate')).error?.message).toMatch(/unknown command "frobnicate"/);
    expect((await run(s.id, 'help')).output).toContain('query');
  });
});

describe('a write', () => {
  it('becomes a proposal; approving applies exactly its change, audited', async () => {
    const s = await openSession();
    await run(s.id, 'use crm /customers');
    const before = await data();
    const answer = await run(s.id, 'set 0/name "Anna"');
    const p = answer.proposal!;
    expect(p.status).toBe('pending');
    expect(p.base_version).toBe(before.version);
    expect(p.patch).toEqual([{ op: 'replace', path: '/customers/0/name', value: 'Anna' }]);
    expect(p.view).toEqual([{ path: '/customers/0/name', before: 'Ann', after: 'Anna' }]);
    expect(answer.output).toContain('waiting for the person');
    // Nothing changed yet.
    expect((await data()).version).toBe(before.version);

    const approved = await t.call('POST', `/api/v2/sidebar/proposals/${p.id}/approve`, { token, body: {} });
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe('applied');
    expect(approved.body.applied_version).toBe(before.version + 1);
    const after = await data();
    expect(after.data.customers[0]!.name).toBe('Anna');
    expect(after.version).toBe(before.version + 1);

    const again = await t.call('POST', `/api/v2/sidebar/proposals/${p.id}/approve`, { token, body: {} });
    expect(again.status).toBe(409);
    expect((await data()).version).toBe(after.version);

    const audit = await t.call('GET', '/api/v2/audit?limit=20', { token });
    const applied = audit.body.items.find(
      (e: { action: string; details?: { proposal_id?: string } }) =>
        e.action === 'sidebar.apply' && e.details?.proposal_id === p.id,
    );
    expect(applied.details).toMatchObject({
      proposed_by: 'person',
      version_before: before.version,
      version_after: before.version + 1,
    });
  });

  it('rejected: nothing is written and the agent reads the note', async () => {
    const s = await openSession();
    await run(s.id, 'use crm');
    const before = await data();
    const waiting = run(s.id, 'rm /settings/theme', s.token, { wait_ms: 10_000 });
    let pending: Proposal | undefined;
    for (let i = 0; i < 100 && !pending; i++) {
      const list = await t.call('GET', `/api/v2/sidebar/sessions/${s.id}/proposals?status=pending`, {
        token,
      });
      pending = list.body.items[0];
      if (!pending) await new Promise((r) => setTimeout(r, 50));
    }
    expect(pending?.proposed_by).toBe('agent');
    const rejected = await t.call('POST', `/api/v2/sidebar/proposals/${pending!.id}/reject`, {
      token,
      body: { note: 'keep the theme' },
    });
    expect(rejected.body.status).toBe('rejected');
    const answer = await waiting;
    expect(answer.proposal!.status).toBe('rejected');
    expect(answer.output).toContain('rejected: keep the theme');
    expect(await data()).toEqual(before);
  });

  it('made stale by another write is refused and offered again on the data now', async () => {
    const s = await openSession();
    await run(s.id, 'use crm /customers');
    const p = (await run(s.id, 'add / {"id": 3, "name": "Cid", "tier": "bronze"}')).proposal!;
    // A concurrent write by the admin API moves the table on.
    const current = await data();
    const moved = structuredClone(current.data);
    moved.customers.push({ id: 4, name: 'Dee', tier: 'gold' });
    await t.call('PUT', `/api/v2/tables/${tableId}/data`, { token, body: moved });

    const refused = await t.call('POST', `/api/v2/sidebar/proposals/${p.id}/approve`, { token, body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.status).toBe('stale');
    const fresh = refused.body.error.details.proposal;
    expect(fresh.id).toBe(refused.body.error.details.replaced_by);
    expect(fresh.base_version).toBe(current.version + 1);
    expect(fresh.patch).toEqual([
      { op: 'add', path: '/customers/3', value: { id: 3, name: 'Cid', tier: 'bronze' } },
    ]);
    const approved = await t.call('POST', `/api/v2/sidebar/proposals/${fresh.id}/approve`, {
      token,
      body: {},
    });
    expect(approved.status).toBe(200);
    const names = (await data()).data.customers.map((c) => c.name);
    expect(names.slice(-2)).toEqual(['Dee', 'Cid']);
  });

  it('undo proposes the inverse of the last applied change', async () => {
    const s = await openSession();
    await run(s.id, 'use crm /settings');
    const p = (await run(s.id, 'merge / {"theme": "dark", "lang": "en"}')).proposal!;
    await t.call('POST', `/api/v2/sidebar/proposals/${p.id}/approve`, { token, body: {} });
    expect((await data()).data.settings).toEqual({ theme: 'dark', lang: 'en' });
    const undo = (await run(s.id, 'undo')).proposal!;
    expect(undo.command).toBe(`undo ${p.id}`);
    await t.call('POST', `/api/v2/sidebar/proposals/${undo.id}/approve`, { token, body: {} });
    expect((await data()).data.settings).toEqual({ theme: 'light' });
  });

  it('that changes nothing makes no proposal', async () => {
    const s = await openSession();
    await run(s.id, 'use crm /settings');
    const answer = await run(s.id, 'set theme "light"');
    expect(answer.proposal).toBeUndefined();
    expect(answer.output).toMatch(/nothing would change/);
  });
});

describe('rules', () => {
  it('are set and read back, and a proposal breaking one is blocked with the rule named', async () => {
    const rules = {
      protect: [{ path: '/customers', deny: ['delete'] }],
      person_only: ['/settings'],
      max_items_per_change: 5,
      schema: {
        type: 'object',
        properties: { customers: { type: 'array', items: { type: 'object', required: ['id', 'name'] } } },
      },
    };
    const put = await t.call('PUT', `/api/v2/tables/${tableId}/rules`, { token, body: rules });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await t.call('GET', `/api/v2/tables/${tableId}/rules`, { token })).body).toEqual(rules);

    const s = await openSession();
    await run(s.id, 'use crm /customers', s.token);
    const blocked = (await run(s.id, 'rm 0', s.token)).proposal!;
    expect(blocked.status).toBe('blocked');
    expect(blocked.verdicts.find((v: { ok: boolean }) => !v.ok)).toMatchObject({
      rule: 'protect',
      path: '/customers',
    });
    const approve = await t.call('POST', `/api/v2/sidebar/proposals/${blocked.id}/approve`, {
      token,
      body: {},
    });
    expect(approve.status).toBe(422);
    expect(approve.body.error.code).toBe('RULE_VIOLATED');
    expect(approve.body.error.details.rule).toBe('protect');

    const noName = (await run(s.id, 'add / {"id": 9}', s.token)).proposal!;
    expect(noName.status).toBe('blocked');
    expect(noName.verdicts.find((v: { ok: boolean }) => !v.ok).rule).toBe('schema');

    await run(s.id, 'use crm /settings', s.token);
    const byAgent = (await run(s.id, 'set theme "dark"', s.token)).proposal!;
    expect(byAgent.verdicts.find((v: { ok: boolean }) => !v.ok).rule).toBe('person_only');
    const byPerson = (await run(s.id, 'set theme "dark"')).proposal!;
    expect(byPerson.status).toBe('pending');

    const ok =
      (await run(s.id, 'use crm /customers', s.token)) &&
      (await run(s.id, 'set 1/tier "gold"', s.token)).proposal!;
    expect(ok.status).toBe('pending');
    expect(ok.verdicts.every((v: { ok: boolean }) => v.ok)).toBe(true);
    await t.call('PUT', `/api/v2/tables/${tableId}/rules`, { token, body: {} });
  });

  it('refuses a schema the data does not satisfy now, and a pointer that is not one', async () => {
    const bad = await t.call('PUT', `/api/v2/tables/${tableId}/rules`, {
      token,
      body: { schema: { type: 'object', required: ['missing'] } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/does not satisfy the schema now/);
    const pointer = await t.call('PUT', `/api/v2/tables/${tableId}/rules`, {
      token,
      body: { protect: [{ path: 'customers', deny: ['write'] }] },
    });
    expect(pointer.status).toBe(400);
    expect(pointer.body.error.details.field).toBe('protect[0].path');
  });
});

describe("the CLI's grammar on the tools of the person's exposures", () => {
  it('lists them, helps, runs a read at once, proposes a context write, refuses other writes', async () => {
    const adi = async (body: Record<string, unknown>) =>
      (await t.call('POST', '/api/v2/adis', { token, body })).body.id as string;
    const count = await adi({
      name: 'count',
      table_id: tableId,
      json_path: '/customers',
      operation_type: 'query',
    });
    const add = await adi({
      name: 'add',
      table_id: tableId,
      json_path: '/customers',
      operation_type: 'create',
    });
    const notify = await adi({
      kind: 'custom',
      name: 'notify',
      code: 'export default async (args) => "sent " + args.to',
      input_schema: { type: 'object', properties: { to: { type: 'string' } } },
    });
    const stamp = await adi({
      kind: 'custom',
      name: 'stamp',
      code: "export default async (args, ctx) => ctx.context.write('update', { path: '/theme', value: args.theme })",
      input_schema: { type: 'object', properties: { theme: { type: 'string' } } },
      context: { table_id: tableId, json_path: '/settings', write: true },
      // An author's hint is not what the sidebar goes by: the tool writes its context.
      annotations: { readOnlyHint: true },
    });
    const aei = (await t.call('POST', '/api/v2/aeis', { token, body: { name: 'ops' } })).body;
    await t.call('POST', `/api/v2/aeis/${aei.id}/bindings`, {
      token,
      body: [
        { adi_id: count, tool_name: 'count_customers' },
        { adi_id: add, tool_name: 'add_customer' },
        { adi_id: notify, tool_name: 'notify' },
        { adi_id: stamp, tool_name: 'stamp' },
      ],
    });
    const s = await openSession();
    const listed = (await run(s.id, 'tools')).output;
    expect(listed).toMatch(/count_customers\s+ops\s+context\s+at once/);
    expect(listed).toMatch(/add_customer\s+ops\s+context\s+as a proposal/);
    // A custom tool that can neither write nor fetch changes nothing: it runs at once.
    expect(listed).toMatch(/notify\s+ops\s+custom\s+at once/);
    expect(listed).toMatch(/stamp\s+ops\s+custom\s+not here/);
    expect((await run(s.id, 'help add_customer')).output).toMatch(/--value any \(required\)/);

    // As the agent sees it: a query's answer wrapped as structured content.
    expect(JSON.parse((await run(s.id, "call count_customers --query 'length(@)'")).output)).toEqual({
      result: (await data()).data.customers.length,
    });
    const before = await data();
    const proposed = await run(
      s.id,
      `call add_customer --value '{"id": 50, "name": "Eve", "tier": "gold"}'`,
      s.token,
    );
    expect(proposed.proposal).toMatchObject({
      status: 'pending',
      proposed_by: 'agent',
      patch: [{ op: 'add', path: `/customers/${before.data.customers.length}` }],
    });
    expect((await data()).version).toBe(before.version);
    const approved = await t.call('POST', `/api/v2/sidebar/proposals/${proposed.proposal!.id}/approve`, {
      token,
      body: {},
    });
    expect(approved.status).toBe(200);
    expect((await data()).data.customers.at(-1)).toEqual({ id: 50, name: 'Eve', tier: 'gold' });

    expect(JSON.parse((await run(s.id, 'call notify --to ops', s.token)).output)).toBe('sent ops');
    const refused = await run(s.id, 'call stamp --theme dark', s.token);
    expect(refused.error?.code).toBe('FORBIDDEN');
    expect(refused.output).toMatch(/call it through its exposure/);
    expect((await data()).data.settings).toEqual(before.data.settings);
    expect((await run(s.id, 'call add_customer --nope 1')).error?.code).toBe('VALIDATION_FAILED');
    expect((await run(s.id, 'call missing_tool')).error?.code).toBe('NOT_FOUND');
  });
});
