// Pins who may run a tool: only a gateway holding INTERNAL_TOKEN, only through an enabled binding
// of that enabled AEI and that ADI; refusals are audited; and no argument reaches data outside
// the tool's context.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_TOKEN, ROOT_TOKEN, startTestApp, type TestApp } from './support/app.ts';
import { buildFixture, execute, tableState, toolAnswer, type Fixture } from './support/tools.ts';

let t: TestApp;
let f: Fixture;
let other: Fixture;

beforeAll(async () => {
  t = await startTestApp();
  f = await buildFixture(
    t,
    { public: { items: [1, 2] }, secret: { password: 'hunter2' } },
    {
      read: { json_path: '/public', operation_type: 'get_all' },
      ask: { json_path: '/public', operation_type: 'query' },
      edit: { json_path: '/public', operation_type: 'update' },
      shift: { json_path: '/public', operation_type: 'move' },
    },
  );
  other = await buildFixture(t, { x: 1 }, { read: { json_path: '', operation_type: 'get_all' } });
});
afterAll(() => t.close());

describe('internal token', () => {
  it('refuses no token, a wrong token, an admin token and an api key', async () => {
    for (const token of [null, 'not-the-internal-token', ROOT_TOKEN, f.token, f.apiKey]) {
      const res = await execute(t, f, 'read', {}, { token });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
      const config = await t.call('GET', `/internal/aei/mcp/${f.apiKey}/config`, { token });
      expect(config.status).toBe(401);
    }
  });

  it('accepts the internal token', async () => {
    expect(toolAnswer(await execute(t, f, 'read')).value).toEqual({ items: [1, 2] });
    expect(INTERNAL_TOKEN.length).toBeGreaterThanOrEqual(16);
  });
});

describe('binding checks', () => {
  it('refuses a binding of another AEI', async () => {
    const res = toolAnswer(await execute(t, f, 'read', {}, { aei_id: other.aeiId }));
    expect(res.isError).toBe(true);
    expect(res.value.error.code).toBe('FORBIDDEN');
    const cross = toolAnswer(
      await execute(
        t,
        f,
        'read',
        {},
        { binding_id: other.tools.read!.bindingId, adi_id: other.tools.read!.adiId },
      ),
    );
    expect(cross.value.error.code).toBe('FORBIDDEN');
  });

  it('refuses a binding run against another ADI', async () => {
    const res = toolAnswer(await execute(t, f, 'read', {}, { adi_id: f.tools.ask!.adiId }));
    expect(res.value.error.code).toBe('FORBIDDEN');
  });

  it('refuses an unknown binding', async () => {
    const res = toolAnswer(await execute(t, f, 'read', {}, { binding_id: 'bnd_unknown' }));
    expect(res.value.error.code).toBe('NOT_FOUND');
  });

  it('refuses a disabled binding, and a disabled AEI, until enabled again', async () => {
    const path = `/api/v2/aeis/${f.aeiId}/bindings/${f.tools.read!.bindingId}`;
    await t.call('PATCH', path, { token: f.token, body: { enabled: false } });
    const off = toolAnswer(await execute(t, f, 'read'));
    expect(off.value.error).toMatchObject({ code: 'FORBIDDEN', message: 'tool read is disabled' });
    await t.call('PATCH', path, { token: f.token, body: { enabled: true } });

    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'disabled' } });
    const aeiOff = toolAnswer(await execute(t, f, 'read'));
    expect(aeiOff.value.error.code).toBe('FORBIDDEN');
    expect(aeiOff.value.error.message).toContain('disabled');
    await t.call('PATCH', `/api/v2/aeis/${f.aeiId}`, { token: f.token, body: { status: 'enabled' } });
    expect(toolAnswer(await execute(t, f, 'read')).isError).toBe(false);
  });

  it('audits refusals', async () => {
    const res = await t.call('GET', '/api/v2/audit?status=refused', { token: f.token });
    expect(res.body.items.length).toBeGreaterThanOrEqual(4);
    for (const e of res.body.items) expect(e.error_code).toBe('FORBIDDEN');
    const theirs = await t.call('GET', '/api/v2/audit', { token: other.token });
    for (const e of theirs.body.items) expect(e.aei_id === f.aeiId).toBe(false);
  });
});

describe('context confinement', () => {
  it.each([
    ['update', 'edit', { path: '/../secret', value: 1 }],
    ['update', 'edit', { path: '/__proto__/x', value: 1 }],
    ['move', 'shift', { from: '/items', to: '/../secret/items' }],
    ['move', 'shift', { from: '/~2', to: '/x' }],
  ])('%s with %j is refused and nothing changes', async (_op, tool, args) => {
    const before = await tableState(t, f);
    const res = toolAnswer(await execute(t, f, tool, args));
    expect(res.isError).toBe(true);
    expect(['VALIDATION_FAILED', 'NOT_FOUND']).toContain(res.value.error.code);
    const after = await tableState(t, f);
    expect(after).toEqual(before);
    expect(after.data.secret).toEqual({ password: 'hunter2' });
  });

  it('a query sees only its context', async () => {
    const res = toolAnswer(await execute(t, f, 'ask', { query: 'secret' }));
    expect(res.value).toBeNull();
    const root = toolAnswer(await execute(t, f, 'ask', { query: '@' }));
    expect(JSON.stringify(root.value)).not.toContain('hunter2');
  });
});
