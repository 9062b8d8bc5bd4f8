// Pins the clear errors around secret keys: without a key (PostgreSQL without BINDERY_SECRET_KEY)
// writing and resolving secrets answer 503 NOT_CONFIGURED naming the setting while listing and
// deleting still work; a secret written under a key no longer configured is NOT_CONFIGURED naming
// BINDERY_SECRET_OLD_KEYS; bad key settings stop the start with the settings' usual message
// (lengths only, never the value); a data directory whose key file holds no key refuses to start
// rather than replace it; bad secret names and oversized values are refused naming the field.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { SECRET_KEY_FILE, openSecretKeyring } from '../src/secrets/secret-key-file.ts';
import { resolveSecrets } from '../src/secrets/secret-references.ts';
import { SecretKeyring, keyIdOf } from '../src/secrets/secret-keyring.ts';
import { engine, startTestApp, type TestApp } from './support/app.ts';
import { runUntilExit } from './support/server-process.ts';

describe('no key configured', () => {
  let t: TestApp;
  let user: { id: string; token: string };
  beforeAll(async () => {
    t = await startTestApp({ secretKeys: null });
    user = await t.newUser('keyless');
  });
  afterAll(() => t.close());

  it('answers 503 NOT_CONFIGURED naming BINDERY_SECRET_KEY to writes and resolution', async () => {
    const created = await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'A', value: 'v' },
    });
    expect(created.status).toBe(503);
    expect(created.body.error).toMatchObject({
      code: 'NOT_CONFIGURED',
      message: expect.stringContaining('operator must set BINDERY_SECRET_KEY'),
      details: { setting: 'BINDERY_SECRET_KEY' },
    });
    const replaced = await t.call('PUT', '/api/v2/secrets/A', { token: user.token, body: { value: 'v' } });
    expect(replaced.status).toBe(503);
    await expect(resolveSecrets(t.app.domain, user.id, ['A'])).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
    });
  });

  it('still lists and deletes (nothing is decrypted)', async () => {
    // A secret left from when a key was configured.
    const keyring = new SecretKeyring(new Uint8Array(32).fill(3));
    await t.database.prisma.secret.create({
      data: {
        id: 'sec_left',
        userId: user.id,
        name: 'LEFT',
        ...keyring.seal('old', { userId: user.id, name: 'LEFT' }),
      },
    });
    const listed = await t.call('GET', '/api/v2/secrets', { token: user.token });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((s: { name: string }) => s.name)).toEqual(['LEFT']);
    const deleted = await t.call('DELETE', '/api/v2/secrets/LEFT', { token: user.token });
    expect(deleted.status).toBe(204);
  });
});

describe('a key no longer configured', () => {
  it('is NOT_CONFIGURED naming the key id and BINDERY_SECRET_OLD_KEYS, never the value', async () => {
    const keyA = new Uint8Array(32).fill(0x0a);
    const t = await startTestApp({ secretKeys: { key: keyA } });
    try {
      const user = await t.newUser('forgetful');
      await t.call('POST', '/api/v2/secrets', {
        token: user.token,
        body: { name: 'A', value: 'value-under-a' },
      });
      const other = { prisma: t.database.prisma, keyring: new SecretKeyring(new Uint8Array(32).fill(0x0b)) };
      const error = await resolveSecrets(other, user.id, ['A']).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'NOT_CONFIGURED',
        details: { secret: 'A', key_id: keyIdOf(keyA), setting: 'BINDERY_SECRET_OLD_KEYS' },
      });
      expect((error as Error).message).toContain('list that key in BINDERY_SECRET_OLD_KEYS');
      expect((error as Error).message).not.toContain('value-under-a');
    } finally {
      await t.close();
    }
  });
});

describe('key settings', () => {
  const hex = 'ab'.repeat(32);
  const base64 = Buffer.from(new Uint8Array(32).fill(0xab)).toString('base64');

  it('accept 32 bytes as hex, base64 or base64url', () => {
    const fromHex = loadConfig({ BINDERY_SECRET_KEY: hex }).secretKey!;
    expect(Buffer.from(fromHex)).toEqual(Buffer.alloc(32, 0xab));
    expect(loadConfig({ BINDERY_SECRET_KEY: base64 }).secretKey).toEqual(fromHex);
    expect(
      loadConfig({ BINDERY_SECRET_KEY: base64.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_') })
        .secretKey,
    ).toEqual(fromHex);
    const config = loadConfig({
      BINDERY_SECRET_KEY: hex,
      BINDERY_SECRET_OLD_KEYS: ` ${base64} , ${'cd'.repeat(32)}`,
    });
    expect(config.secretOldKeys.map((k) => Buffer.from(k).toString('hex'))).toEqual([
      'ab'.repeat(32),
      'cd'.repeat(32),
    ]);
  });

  it.each([
    [
      { BINDERY_SECRET_KEY: 'short' },
      /^BINDERY_SECRET_KEY must be 32 bytes written as base64 or as 64 hex digits .*, got \(secret, 5 characters\)$/,
    ],
    [
      { BINDERY_SECRET_KEY: 'ab'.repeat(31) },
      /^BINDERY_SECRET_KEY must be 32 bytes .*got \(secret, 62 characters\)$/,
    ],
    [{ BINDERY_SECRET_KEY: Buffer.alloc(24).toString('base64') }, /^BINDERY_SECRET_KEY must be 32 bytes/],
    [
      { BINDERY_SECRET_KEY: hex, BINDERY_SECRET_OLD_KEYS: `${base64},nope` },
      /^BINDERY_SECRET_OLD_KEYS has an item that is not 32 bytes .*got \(secret, 4 characters\)$/,
    ],
    [{ BINDERY_SECRET_OLD_KEYS: base64 }, /^BINDERY_SECRET_OLD_KEYS needs BINDERY_SECRET_KEY/],
    [
      { HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.1/32, 10.0.0.0/40' },
      /^HTTP_TOOLS_ALLOWED_NETWORKS must be a comma-separated list of CIDR networks .*, got "10\.0\.0\.0\/40"$/,
    ],
  ])('refuse %j with a message naming the setting', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never show a key in a message', () => {
    const almost = 'Zm9v'.repeat(10); // valid base64, wrong length
    const error = (() => {
      try {
        loadConfig({ BINDERY_SECRET_KEY: almost, BINDERY_SECRET_OLD_KEYS: almost });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).not.toContain(almost);
  });

  // One engine suffices: the refusal comes before any database is opened.
  it.runIf(engine === 'postgres')(
    'stop a process at start with the settings message, exit code 1',
    async () => {
      const run = await runUntilExit({
        BINDERY_SECRET_KEY: 'not-a-key-at-all',
        DATABASE_URL: 'postgresql://127.0.0.1:1/none',
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^bindery control plane: BINDERY_SECRET_KEY must be 32 bytes/);
      expect(run.stderr + run.stdout).not.toContain('not-a-key-at-all');
    },
    60_000,
  );

  it('read networks in canonical form', () => {
    expect(
      loadConfig({ HTTP_TOOLS_ALLOWED_NETWORKS: '127.0.0.1, 10.1.2.3/16,fd00::/8' }).httpToolsAllowedNetworks,
    ).toEqual(['127.0.0.1/32', '10.1.0.0/16', 'fd00::/8']);
  });
});

describe('a key file that holds no key', () => {
  it('refuses the start instead of replacing it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'bindery-bad-key-'));
    try {
      await writeFile(join(dataDir, SECRET_KEY_FILE), 'damaged\n');
      await expect(openSecretKeyring({ secretKey: undefined, secretOldKeys: [], dataDir })).rejects.toThrow(
        /secret\.key does not hold a secret key .*restore it from a backup, or set BINDERY_SECRET_KEY/,
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('secret names and values', () => {
  let t: TestApp;
  let user: { id: string; token: string };
  beforeAll(async () => {
    t = await startTestApp();
    user = await t.newUser('namer');
  });
  afterAll(() => t.close());

  it.each(['1ST', 'has-dash', 'with space', 'ünï', 'A'.repeat(65), ''])(
    'refuses the name %j, naming the field',
    async (name) => {
      const res = await t.call('POST', '/api/v2/secrets', { token: user.token, body: { name, value: 'v' } });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^body\/name /);
    },
  );

  it('accepts names up to 64 characters, underscores first', async () => {
    for (const name of ['_x', 'A'.repeat(64), 'snake_Case_9']) {
      const res = await t.call('POST', '/api/v2/secrets', {
        token: user.token,
        body: { name, value: 'value-of-it' },
      });
      expect(res.status, name).toBe(201);
    }
  });

  it('refuses an empty value, and one over 64 KiB of UTF-8 even when under 64 Ki characters', async () => {
    const empty = await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'E', value: '' },
    });
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toMatch(/^body\/value /);
    const wide = await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'W', value: '€'.repeat(30_000) },
    });
    expect(wide.status).toBe(400);
    expect(wide.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'body/value is 90000 bytes of UTF-8; a secret holds at most 65536',
    });
    const exact = await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'X', value: 'x'.repeat(65_536) },
    });
    expect(exact.status).toBe(201);
  });

  it('refuses a value under 8 characters at create and replace, naming the rule and why', async () => {
    for (const value of ['Q', 'sEvEn77', '🔑🔑🔑🔑🔑🔑🔑']) {
      const created = await t.call('POST', '/api/v2/secrets', {
        token: user.token,
        body: { name: 'S', value },
      });
      expect(created.status, value).toBe(400);
      expect(created.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: expect.stringMatching(/^body\/value is \d characters?; a secret holds at least 8, since/),
        details: { pointer: '/value', rule: 'min_length', min_length: 8 },
      });
      expect(JSON.stringify(created.body)).not.toContain(value);
    }
    const stored = await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'EIGHT', value: '🔑'.repeat(8) },
    });
    expect(stored.status).toBe(201);
    const replaced = await t.call('PUT', '/api/v2/secrets/EIGHT', {
      token: user.token,
      body: { value: 'short' },
    });
    expect(replaced.status).toBe(400);
    expect(replaced.body.error.details).toMatchObject({ rule: 'min_length', min_length: 8 });
    const listed = await t.call('GET', '/api/v2/secrets', { token: user.token });
    expect(listed.body.items.map((s: { name: string }) => s.name)).not.toContain('S');
  });

  it('refuses a name used twice with CONFLICT, and unknown names with NOT_FOUND', async () => {
    await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'TWICE', value: 'first-value' },
    });
    const again = await t.call('POST', '/api/v2/secrets', {
      token: user.token,
      body: { name: 'TWICE', value: 'second-value' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toContain('PUT /api/v2/secrets/TWICE');
    for (const method of ['PUT', 'DELETE']) {
      const res = await t.call(method, '/api/v2/secrets/NOBODY', {
        token: user.token,
        ...(method === 'PUT' && { body: { value: 'some-value' } }),
      });
      expect(res.status).toBe(404);
      expect(res.body.error.message).toBe('you have no secret named NOBODY');
    }
  });
});
