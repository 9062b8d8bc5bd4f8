// Pins the refusals around callers and personal MCP keys: another user's key or AEI is NOT_FOUND
// (and stays untouched); a caller name that is not one is VALIDATION_FAILED naming the pattern, on
// the admin routes and the internal lookup alike; unmapping a caller that is not mapped is
// NOT_FOUND; key bodies are checked; and the internal lookup answers `kind: unknown` for a key
// that is malformed, unknown, deleted, or of a disabled user, needs the internal token and the key
// header, and never echoes the key.
import { CALLER_NAME_PATTERN, PERSONAL_KEY_HEADER } from '@bindery/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CALLERS } from '../src/exposure/callers.ts';
import { MAX_MCP_KEYS } from '../src/accounts/mcp-keys.ts';
import { INTERNAL_TOKEN, startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let alice: { id: string; token: string };
let bob: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.newUser('alice');
  bob = await t.newUser('bob');
});
afterAll(() => t.close());

const as = (token: string) => ({ token });

function lookup(key: string | undefined, query = '', token: string | null = INTERNAL_TOKEN) {
  return t.call('GET', `/internal/callers/config${query}`, {
    token,
    headers: key === undefined ? {} : { [PERSONAL_KEY_HEADER]: key },
  });
}

async function newKey(token: string, name = 'laptop') {
  const res = await t.call('POST', '/api/v2/mcp-keys', { token, body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string; key: string };
}

async function newAei(token: string, name = 'agent') {
  const res = await t.call('POST', '/api/v2/aeis', { token, body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

function expectUnknown(res: { status: number; body: { error: { code: string; details?: unknown } } }) {
  expect(res.status).toBe(404);
  expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'unknown' } });
}

describe('another user’s key', () => {
  it('is NOT_FOUND to rotate or delete, and keeps working', async () => {
    const key = await newKey(alice.token);
    for (const [method, path] of [
      ['POST', `/api/v2/mcp-keys/${key.id}/rotate`],
      ['DELETE', `/api/v2/mcp-keys/${key.id}`],
    ] as const) {
      const res = await t.call(method, path, as(bob.token));
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    const listed = await t.call('GET', '/api/v2/mcp-keys', as(bob.token));
    expect(listed.body.items.map((k: { id: string }) => k.id)).not.toContain(key.id);
    expect((await lookup(key.key)).status).toBe(200);
  });

  it('an unknown key id is NOT_FOUND, and so is deleting a key twice', async () => {
    expect((await t.call('DELETE', '/api/v2/mcp-keys/mck_nope', as(alice.token))).status).toBe(404);
    expect((await t.call('POST', '/api/v2/mcp-keys/mck_nope/rotate', as(alice.token))).status).toBe(404);
    const key = await newKey(alice.token, 'twice');
    expect((await t.call('DELETE', `/api/v2/mcp-keys/${key.id}`, as(alice.token))).status).toBe(204);
    expect((await t.call('DELETE', `/api/v2/mcp-keys/${key.id}`, as(alice.token))).status).toBe(404);
  });
});

describe('key count', () => {
  it('holds at most MAX_MCP_KEYS keys per user, then CONFLICT; deleting one makes room', async () => {
    const dave = await t.newUser('dave');
    const made: { id: string }[] = [];
    for (let i = 0; i < MAX_MCP_KEYS; i += 25) {
      made.push(
        ...(await Promise.all(Array.from({ length: 25 }, (_, j) => newKey(dave.token, `k${i + j}`)))),
      );
    }
    const over = await t.call('POST', '/api/v2/mcp-keys', { token: dave.token, body: { name: 'over' } });
    expect(over.status).toBe(409);
    expect(over.body.error).toMatchObject({ code: 'CONFLICT', details: { limit: MAX_MCP_KEYS } });
    await t.call('DELETE', `/api/v2/mcp-keys/${made[0]!.id}`, { token: dave.token });
    await newKey(dave.token, 'room again');
  });
});

describe('key bodies', () => {
  it('refuses a missing, empty, overlong or extra field', async () => {
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 'ok', key: 'mine' }]) {
      const res = await t.call('POST', '/api/v2/mcp-keys', { ...as(alice.token), body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });
});

describe('the caller map', () => {
  it('refuses another user’s AEI, or an unknown one, as NOT_FOUND, mapping nothing', async () => {
    const theirs = await newAei(alice.token);
    for (const aeiId of [theirs.id, 'aei_nope']) {
      const res = await t.call('PUT', '/api/v2/callers/vscode', {
        ...as(bob.token),
        body: { aei_id: aeiId },
      });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { id: aeiId } });
    }
    const list = await t.call('GET', '/api/v2/callers', as(bob.token));
    expect(list.body.callers).toEqual([]);
    // Bob's default profile is his own, never Alice's AEI.
    expect(list.body.default_profile.aei_id).not.toBe(theirs.id);
  });

  it('refuses to map the reserved name "default", which names the default profile', async () => {
    const mine = await newAei(bob.token);
    const res = await t.call('PUT', '/api/v2/callers/default', {
      ...as(bob.token),
      body: { aei_id: mine.id },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(res.body.error.message).toContain('reserved');
  });

  it('maps at most MAX_CALLERS callers per user (remapping one still works), then CONFLICT', async () => {
    const carol = await t.newUser('carol');
    const aei = await newAei(carol.token);
    // All but the last two mappings straight into the table (500 API calls, each its own
    // transaction, took 15 s on the embedded engine); the last two through the API, at the limit.
    await t.database.prisma.callerProfile.createMany({
      data: Array.from({ length: MAX_CALLERS - 2 }, (_, i) => ({
        userId: carol.id,
        caller: `c${i}`,
        aeiId: aei.id,
      })),
    });
    for (const name of ['almost', 'last']) {
      const res = await t.call('PUT', `/api/v2/callers/${name}`, {
        ...as(carol.token),
        body: { aei_id: aei.id },
      });
      expect(res.status, name).toBe(200);
    }
    const over = await t.call('PUT', '/api/v2/callers/one-more', {
      ...as(carol.token),
      body: { aei_id: aei.id },
    });
    expect(over.status).toBe(409);
    expect(over.body.error).toMatchObject({ code: 'CONFLICT', details: { limit: MAX_CALLERS } });
    expect(await t.database.prisma.callerProfile.count({ where: { userId: carol.id } })).toBe(MAX_CALLERS);
    const again = await t.call('PUT', '/api/v2/callers/c0', { ...as(carol.token), body: { aei_id: aei.id } });
    expect(again.status).toBe(200);
  });

  it('refuses caller names that are not ones, naming the pattern', async () => {
    const aei = await newAei(alice.token);
    for (const name of ['VSCode', '-vscode', '.hidden', 'has%20space', 'x'.repeat(65), 'a%2Fb']) {
      for (const [method, body] of [
        ['PUT', { aei_id: aei.id }],
        ['GET', undefined],
        ['DELETE', undefined],
      ] as const) {
        const res = await t.call(method, `/api/v2/callers/${name}`, { ...as(alice.token), body });
        expect(res.status, `${method} ${name}`).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        if (name.length <= 64) expect(res.body.error.message).toContain(CALLER_NAME_PATTERN);
      }
    }
  });

  it('refuses a PUT body without aei_id or with another field', async () => {
    for (const body of [{}, { aei_id: 'aei_x', extra: 1 }, { aei_id: 7 }]) {
      const res = await t.call('PUT', '/api/v2/callers/vscode', { ...as(alice.token), body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('unmapping a caller that is not mapped is NOT_FOUND, and announces nothing', async () => {
    const before = t.configChanges.length;
    const res = await t.call('DELETE', '/api/v2/callers/never-mapped', as(alice.token));
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { caller: 'never-mapped' } });
    expect(t.configChanges.length).toBe(before);
  });

  it('another user’s mapping is invisible and untouchable', async () => {
    const aei = await newAei(alice.token, 'mapped');
    const put = await t.call('PUT', '/api/v2/callers/claude', {
      ...as(alice.token),
      body: { aei_id: aei.id },
    });
    expect(put.status).toBe(200);
    const theirs = await t.call('GET', '/api/v2/callers/claude', as(bob.token));
    expect(theirs.body).toMatchObject({ via: 'default' });
    expect(theirs.body.aei_id).not.toBe(aei.id);
    expect((await t.call('DELETE', '/api/v2/callers/claude', as(bob.token))).status).toBe(404);
    const mine = await t.call('GET', '/api/v2/callers/claude', as(alice.token));
    expect(mine.body).toMatchObject({ via: 'map', aei_id: aei.id });
  });

  it('every route needs an admin token', async () => {
    for (const [method, path] of [
      ['GET', '/api/v2/mcp-keys'],
      ['POST', '/api/v2/mcp-keys'],
      ['GET', '/api/v2/callers'],
      ['GET', '/api/v2/callers/vscode'],
      ['PUT', '/api/v2/callers/vscode'],
      ['DELETE', '/api/v2/callers/vscode'],
    ] as const) {
      const res = await t.call(method, path, { token: null });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });
});

describe('the internal caller lookup', () => {
  it('answers kind unknown for a malformed, unknown or deleted key, without echoing it', async () => {
    const key = await newKey(alice.token, 'to delete');
    await t.call('DELETE', `/api/v2/mcp-keys/${key.id}`, as(alice.token));
    const unknown = `bnd_pk_${'A'.repeat(32)}`;
    for (const candidate of ['nope', `bnd_key_${'A'.repeat(32)}`, unknown, key.key]) {
      const res = await lookup(candidate, '?caller=vscode');
      expectUnknown(res);
      expect(JSON.stringify(res.body)).not.toContain(candidate);
    }
  });

  it('answers kind unknown for a key of a disabled user, and serves it again once enabled', async () => {
    const carol = await t.newUser('carol');
    const key = await newKey(carol.token);
    expect((await lookup(key.key)).status).toBe(200);
    expect(
      (await t.call('PATCH', `/api/v2/users/${carol.id}`, { body: { status: 'disabled' } })).status,
    ).toBe(200);
    expectUnknown(await lookup(key.key));
    expect((await t.call('PATCH', `/api/v2/users/${carol.id}`, { body: { status: 'enabled' } })).status).toBe(
      200,
    );
    expect((await lookup(key.key)).status).toBe(200);
  });

  it('refuses a caller that is not a caller name, naming the pattern', async () => {
    const key = await newKey(alice.token);
    for (const caller of ['VSCode', '-x', '', 'a b']) {
      const res = await lookup(key.key, `?caller=${encodeURIComponent(caller)}`);
      expect(res.status, caller).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.message).toContain(CALLER_NAME_PATTERN);
    }
    const long = await lookup(key.key, `?caller=${'x'.repeat(65)}`);
    expect(long.status).toBe(400);
    const extra = await lookup(key.key, '?caller=vscode&other=1');
    expect(extra.status).toBe(400);
  });

  it('needs the key header and the internal token; an admin token does not open it', async () => {
    const key = await newKey(alice.token);
    const missing = await lookup(undefined);
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain(PERSONAL_KEY_HEADER);
    for (const token of [null, alice.token, 'wrong']) {
      const res = await lookup(key.key, '', token);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    }
  });

  it('never takes the key in the URL', async () => {
    const key = await newKey(alice.token);
    const res = await lookup(undefined, `?key=${key.key}`);
    expect(res.status).toBe(400);
  });
});
