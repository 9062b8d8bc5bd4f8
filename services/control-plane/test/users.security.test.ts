// Pins who may manage users and tokens: only the root user lists, reads, changes or deletes users
// (403 for everyone else, changing nothing); each user sees and revokes only their own tokens
// (another user's token id is a 404, as for any resource); token lists and refusals never carry a
// token or its hash; and a refusal tells the holder about their own token only.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let alice: { id: string; token: string };
let bob: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.newUser('alice');
  bob = await t.newUser('bob');
});
afterAll(() => t.close());

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('managing users is for the root user only', () => {
  it('refuses every user route to another user with 403, and changes nothing', async () => {
    const attempts = [
      ['GET', '/api/v2/users', undefined],
      ['GET', `/api/v2/users/${bob.id}`, undefined],
      ['PATCH', `/api/v2/users/${bob.id}`, { status: 'disabled' }],
      ['PATCH', `/api/v2/users/${alice.id}`, { name: 'root-ish' }],
      ['DELETE', `/api/v2/users/${bob.id}?cascade=true`, undefined],
      ['POST', '/api/v2/users', { name: 'mallory' }],
    ] as const;
    for (const [method, path, body] of attempts) {
      const res = await t.call(method, path, { token: alice.token, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect((await t.call('GET', '/api/v2/me', { token: bob.token })).body).toMatchObject({
      name: 'bob',
      status: 'enabled',
    });
    expect((await t.call('GET', '/api/v2/me', { token: alice.token })).body.name).toBe('alice');
  });
});

describe('tokens are their owner’s alone', () => {
  let bobToken: { id: string; token: string };

  beforeAll(async () => {
    const res = await t.call('POST', '/api/v2/tokens', { token: bob.token, body: { name: 'bob-ci' } });
    bobToken = { id: res.body.id, token: res.body.token };
  });

  it("a user never sees another user's tokens", async () => {
    const list = await t.call('GET', '/api/v2/tokens', { token: alice.token });
    expect(list.status).toBe(200);
    const ids = list.body.items.map((x: { id: string }) => x.id);
    expect(ids).not.toContain(bobToken.id);
    expect(list.body.items).toHaveLength(1);
    // Root sees its own tokens only, too.
    const root = await t.call('GET', '/api/v2/tokens');
    expect(root.body.items.map((x: { id: string }) => x.id)).not.toContain(bobToken.id);
  });

  it("revoking another user's token is a 404 and the token keeps working", async () => {
    for (const token of [alice.token, undefined]) {
      const res = await t.call('DELETE', `/api/v2/tokens/${bobToken.id}`, { token });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({
        code: 'NOT_FOUND',
        message: `admin token ${bobToken.id} not found`,
      });
    }
    expect((await t.call('GET', '/api/v2/me', { token: bobToken.token })).status).toBe(200);
  });

  it('lists and stores a token only as its prefix and hash', async () => {
    const made = await t.call('POST', '/api/v2/tokens', { token: alice.token, body: { name: 'secretive' } });
    const secret: string = made.body.token;
    const list = await t.call('GET', '/api/v2/tokens', { token: alice.token });
    const dump = JSON.stringify(list.body);
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(sha256(secret));
    const rows = await t.database.prisma.$queryRawUnsafe<Record<string, unknown>[]>(
      'SELECT * FROM admin_token WHERE id = $1',
      made.body.id,
    );
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(rows[0]?.token_hash).toBe(sha256(secret));
  });

  it('a refusal names the holder’s own token and carries neither it nor its hash', async () => {
    const made = await t.call('POST', '/api/v2/tokens', { token: bob.token, body: { name: 'short-lived' } });
    await t.call('DELETE', `/api/v2/tokens/${made.body.id}`, { token: bob.token });
    const res = await t.call('GET', '/api/v2/tokens', { token: made.body.token });
    expect(res.status).toBe(401);
    expect(res.body.error.message).toContain('admin token "short-lived" was revoked');
    const dump = JSON.stringify(res.body);
    expect(dump).not.toContain(made.body.token);
    expect(dump).not.toContain(sha256(made.body.token));
    expect(dump).not.toContain(bob.id);
    // A token nobody holds learns nothing: the same answer whatever exists.
    const unknown = await t.call('GET', '/api/v2/tokens', { token: `${made.body.token}x` });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.message).toBe('unknown admin token');
    expect(unknown.body.error.details).toBeUndefined();
  });
});
