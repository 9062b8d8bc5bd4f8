// Pins named admin tokens as their user sees them: created with an optional expiry and answered
// once, listed with prefix, name, dates and status (never the token), revoked at once; an expired
// or revoked token gets 401 saying so; tokens from before this feature (and the migration that
// added it) keep working unnamed and without expiry.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, migrate, type SqlSession } from '../src/db/migrate.ts';
import { openDatabase, type DatabaseTarget } from '../src/db/database.ts';
import { authenticate } from '../src/accounts/admin-tokens.ts';
import { hashSecret } from '../src/domain/ids.ts';
import { engine, startTestApp, type TestApp } from './support/app.ts';
import { emptyPGlite } from './support/pglite.ts';
import { createDatabase } from './support/postgres.ts';

let t: TestApp;
let alice: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.newUser('alice');
});
afterAll(() => t.close());

const as = (token = alice.token) => ({ token });
const DAY_MS = 86_400_000;

describe('admin tokens', () => {
  it('creates a named token with an expiry in days; the token is in that answer and works', async () => {
    const before = Date.now();
    const res = await t.call('POST', '/api/v2/tokens', {
      ...as(),
      body: { name: 'ci', expires_in_days: 30 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'ci',
      status: 'active',
      current: false,
      last_used_at: null,
      revoked_at: null,
    });
    expect(res.body.token).toMatch(/^bnd_admin_/);
    expect(res.body.prefix).toBe(res.body.token.slice(0, 12));
    const expires = Date.parse(res.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 30 * DAY_MS);
    expect(expires).toBeLessThanOrEqual(Date.now() + 30 * DAY_MS);
    const me = await t.call('GET', '/api/v2/me', as(res.body.token));
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(alice.id);
  });

  it('takes an explicit expires_at and refuses a past one, a malformed one, or both forms', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const ok = await t.call('POST', '/api/v2/tokens', { ...as(), body: { name: 'hour', expires_at: at } });
    expect(ok.status).toBe(201);
    expect(ok.body.expires_at).toBe(at);
    const refusals = [
      { name: 'past', expires_at: '2020-01-01T00:00:00Z' },
      { name: 'bad', expires_at: 'next tuesday' },
      { name: 'both', expires_at: at, expires_in_days: 1 },
      { name: 'zero', expires_in_days: 0 },
      { name: '' },
    ];
    for (const body of refusals) {
      const res = await t.call('POST', '/api/v2/tokens', { ...as(), body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    const past = await t.call('POST', '/api/v2/tokens', { ...as(), body: refusals[0] });
    expect(past.body.error.message).toContain('must be in the future');
    const both = await t.call('POST', '/api/v2/tokens', { ...as(), body: refusals[2] });
    expect(both.body.error.message).toContain('not both');
  });

  it('lists the caller’s tokens with exactly the documented fields, marking the one in use', async () => {
    const res = await t.call('GET', '/api/v2/tokens', as());
    expect(res.status).toBe(200);
    const names = res.body.items.map((x: { name: string | null }) => x.name);
    expect(names).toEqual([null, 'ci', 'hour']);
    for (const item of res.body.items) {
      expect(Object.keys(item).sort()).toEqual(
        [
          'created_at',
          'current',
          'expires_at',
          'id',
          'last_used_at',
          'name',
          'prefix',
          'revoked_at',
          'status',
        ].sort(),
      );
    }
    // The first token (made with the user) is the one this request came with.
    expect(res.body.items[0]).toMatchObject({ current: true, expires_at: null, status: 'active' });
    expect(res.body.items[0].prefix).toBe(alice.token.slice(0, 12));
    expect(res.body.items[0].last_used_at).not.toBeNull();
    expect(res.body.items[1].last_used_at).not.toBeNull(); // "ci" was used above
    expect(res.body.items[2].last_used_at).toBeNull(); // "hour" never was
  });

  it('pages like every list', async () => {
    const first = await t.call('GET', '/api/v2/tokens?limit=2', as());
    expect(first.body.items).toHaveLength(2);
    expect(first.body.next_cursor).toBe(first.body.items[1].id);
    const second = await t.call('GET', `/api/v2/tokens?limit=2&cursor=${first.body.next_cursor}`, as());
    expect(second.body.items.map((x: { name: string }) => x.name)).toEqual(['hour']);
    expect(second.body.next_cursor).toBeNull();
  });

  it('a revoked token gets 401 saying it was revoked; revoking again changes nothing', async () => {
    const made = await t.call('POST', '/api/v2/tokens', { ...as(), body: { name: 'laptop' } });
    expect((await t.call('GET', '/api/v2/me', as(made.body.token))).status).toBe(200);
    const revoked = await t.call('DELETE', `/api/v2/tokens/${made.body.id}`, as());
    expect(revoked.status).toBe(204);
    const refused = await t.call('GET', '/api/v2/me', as(made.body.token));
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    expect(refused.body.error.message).toMatch(/^admin token "laptop" was revoked at \d{4}-/);
    const listed = (await t.call('GET', '/api/v2/tokens', as())).body.items.find(
      (x: { id: string }) => x.id === made.body.id,
    );
    expect(listed.status).toBe('revoked');
    expect(listed.revoked_at).not.toBeNull();
    expect((await t.call('DELETE', `/api/v2/tokens/${made.body.id}`, as())).status).toBe(204);
    const again = (await t.call('GET', '/api/v2/tokens', as())).body.items.find(
      (x: { id: string }) => x.id === made.body.id,
    );
    expect(again.revoked_at).toBe(listed.revoked_at);
  });

  it('an expired token gets 401 saying it expired', async () => {
    const made = await t.call('POST', '/api/v2/tokens', {
      ...as(),
      body: { name: 'brief', expires_at: new Date(Date.now() + 3_000).toISOString() },
    });
    expect(made.status).toBe(201);
    expect((await t.call('GET', '/api/v2/me', as(made.body.token))).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Date.parse(made.body.expires_at) - Date.now() + 50));
    const refused = await t.call('GET', '/api/v2/me', as(made.body.token));
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toBe(
      `admin token "brief" expired at ${made.body.expires_at}; use another token or ask for a new one`,
    );
    const listed = (await t.call('GET', '/api/v2/tokens', as())).body.items.find(
      (x: { id: string }) => x.id === made.body.id,
    );
    expect(listed.status).toBe('expired');
  });

  it('a user can revoke the token they are using (sign out)', async () => {
    const made = await t.call('POST', '/api/v2/tokens', { ...as(), body: { name: 'session' } });
    const res = await t.call('DELETE', `/api/v2/tokens/${made.body.id}`, as(made.body.token));
    expect(res.status).toBe(204);
    expect((await t.call('GET', '/api/v2/me', as(made.body.token))).status).toBe(401);
    expect((await t.call('GET', '/api/v2/me', as())).status).toBe(200);
  });
});

describe('tokens from before named tokens', () => {
  const earlier = 'bnd_admin_a-token-from-before-the-migration';
  let target: DatabaseTarget;
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    while (cleanups.length > 0) await cleanups.pop()?.();
  });

  /** A database migrated up to (not including) the users-and-tokens migration, holding one token. */
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bindery-migrations-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await cp(MIGRATIONS_DIR, dir, {
      recursive: true,
      filter: (source) => !source.includes('users_tokens'),
    });
    let session: SqlSession;
    let done: () => Promise<void>;
    if (engine === 'pglite') {
      const dataDir = await mkdtemp(join(tmpdir(), 'bindery-pglite-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const lite = await emptyPGlite(dataDir);
      session = {
        exec: async (sql) => void (await lite.exec(sql)),
        query: async <T>(sql: string, params?: unknown[]) => (await lite.query<T>(sql, params)).rows,
      };
      done = () => lite.close();
      target = { kind: 'pglite', dataDir };
    } else {
      const db = await createDatabase();
      cleanups.push(() => db.drop());
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      session = {
        exec: async (sql) => void (await client.query(sql)),
        query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
      };
      done = () => client.end();
      target = { kind: 'postgres', url: db.url };
    }
    const applied = await migrate(session, dir);
    expect(applied.some((name) => name.includes('users_tokens'))).toBe(false);
    await session.query(`INSERT INTO "user" (id, name) VALUES ('usr_old', 'old-timer')`);
    await session.query(
      `INSERT INTO admin_token (id, user_id, token_hash, prefix) VALUES ('tok_old', 'usr_old', $1, $2)`,
      [hashSecret(earlier), earlier.slice(0, 12)],
    );
    await done();
  });

  it('still authenticate after the migration, unnamed and without expiry', async () => {
    const database = await openDatabase(target);
    try {
      expect(database.migrated.some((name) => name.includes('users_tokens'))).toBe(true);
      expect(await authenticate(database.prisma, earlier)).toMatchObject({
        userId: 'usr_old',
        isRoot: false,
      });
      const row = await database.prisma.adminToken.findUniqueOrThrow({ where: { id: 'tok_old' } });
      expect(row).toMatchObject({ name: null, expiresAt: null, revokedAt: null });
      const user = await database.prisma.user.findUniqueOrThrow({ where: { id: 'usr_old' } });
      expect(user.disabledAt).toBeNull();
    } finally {
      await database.close();
    }
  });
});
