// Pins key rotation and the embedded database's own key: secrets written under key A still resolve
// once the app is rebuilt with BINDERY_SECRET_KEY=B and BINDERY_SECRET_OLD_KEYS=A, and a value
// replaced then is written under B; on the embedded database without BINDERY_SECRET_KEY a key is
// generated once into the data directory (mode 0600) and reused by the next start, so the secrets
// a control plane process stored resolve after it stopped; an operator's key set later keeps the
// generated one readable. Key material in these tests is fixed bytes, never a real key.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { openDatabase } from '../src/db/database.ts';
import { SECRET_KEY_FILE, openSecretKeyring } from '../src/secrets/secret-key-file.ts';
import type { Principal } from '../src/domain/context.ts';
import { resolveSecrets } from '../src/secrets/secret-references.ts';
import { SecretKeyring, keyIdOf } from '../src/secrets/secret-keyring.ts';
import { createSecret } from '../src/secrets/secrets.ts';
import type { AdminApp } from '../src/http/admin-app.ts';
import { INTERNAL_TOKEN, engine, startTestApp, type TestApp } from './support/app.ts';
import { PROCESS_TEST, adminCall, processDatabase, reapAll, startServer } from './support/server-process.ts';

const KEY_A = new Uint8Array(32).fill(0xa1);
const KEY_B = new Uint8Array(32).fill(0xb2);

describe('rotation', () => {
  let t: TestApp;
  let user: { id: string; token: string };
  const rebuilt: AdminApp[] = [];

  /** A second app on the same database, as after a restart with other key settings. */
  async function rebuild(keyring: SecretKeyring): Promise<AdminApp> {
    const app = await buildApp({
      config: {
        bodyLimitBytes: 1024 * 1024,
        logLevel: 'silent',
        internalToken: INTERNAL_TOKEN,
        maxResultBytes: 1_000_000,
      },
      domain: { prisma: t.database.prisma, listener: { configChanged: () => {} }, keyring },
      logger: false,
    });
    rebuilt.push(app);
    return app;
  }

  beforeAll(async () => {
    t = await startTestApp({ secretKeys: { key: KEY_A } });
    user = await t.newUser('rotator');
  });
  afterAll(async () => {
    for (const app of rebuilt) await app.close();
    await t.close();
  });

  it('keeps every secret readable under a new key with the old one listed', async () => {
    const values = { ONE: 'first-value', TWO: 'second-value', THREE: 'third-value' };
    for (const [name, value] of Object.entries(values)) {
      const res = await t.call('POST', '/api/v2/secrets', { token: user.token, body: { name, value } });
      expect(res.status).toBe(201);
    }
    const app = await rebuild(new SecretKeyring(KEY_B, [KEY_A]));
    const resolved = await resolveSecrets(app.domain, user.id, Object.keys(values));
    for (const [name, value] of Object.entries(values)) expect(resolved.value(name)).toBe(value);

    // A value replaced now is written under the new key; the others stay as they were.
    const replaced = await app.inject({
      method: 'PUT',
      url: '/api/v2/secrets/TWO',
      headers: { authorization: `Bearer ${user.token}` },
      payload: { value: 'second-value-rotated' },
    });
    expect(replaced.statusCode).toBe(200);
    const rows = await t.database.prisma.secret.findMany({
      where: { userId: user.id },
      orderBy: { name: 'asc' },
    });
    expect(Object.fromEntries(rows.map((r) => [r.name, r.keyId]))).toEqual({
      ONE: keyIdOf(KEY_A),
      THREE: keyIdOf(KEY_A),
      TWO: keyIdOf(KEY_B),
    });
    const again = await resolveSecrets(app.domain, user.id, ['ONE', 'TWO']);
    expect(again.value('TWO')).toBe('second-value-rotated');
    expect(again.value('ONE')).toBe('first-value');
  });
});

// The generated key exists on the embedded database only.
describe.runIf(engine === 'pglite')('the embedded database’s generated key', () => {
  const dirs: string[] = [];
  const tempDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bindery-secret-key-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('is generated once, readable by its owner only, and reused', async () => {
    const dataDir = await tempDir();
    const first = await openSecretKeyring({ secretKey: undefined, secretOldKeys: [], dataDir });
    expect(first.generated).toBe(true);
    const file = join(dataDir, SECRET_KEY_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const second = await openSecretKeyring({ secretKey: undefined, secretOldKeys: [], dataDir });
    expect(second.generated).toBe(false);
    expect(second.keyring!.currentKeyId).toBe(first.keyring!.currentKeyId);
    expect(await readFile(file, 'utf8')).toMatch(/^[A-Za-z0-9+/]{43}=\n$/);

    // An operator's key takes over writing; the generated one still reads.
    const operator = await openSecretKeyring({ secretKey: KEY_B, secretOldKeys: [], dataDir });
    expect(operator.keyring!.currentKeyId).toBe(keyIdOf(KEY_B));
    expect(operator.keyring!.keyIds).toContain(first.keyring!.currentKeyId);
  });

  it('resolves the secrets of a previous open of the same data directory', async () => {
    const dataDir = await tempDir();
    const caller: Principal = { userId: 'usr_restart', isRoot: false };
    const first = await openDatabase({ kind: 'pglite', dataDir });
    const keys = await openSecretKeyring({ secretKey: undefined, secretOldKeys: [], dataDir });
    await first.prisma.user.create({ data: { id: caller.userId, name: 'restart' } });
    await createSecret({ prisma: first.prisma, keyring: keys.keyring }, caller, {
      name: 'KEPT',
      value: 'kept-value',
    });
    await first.close();

    const second = await openDatabase({ kind: 'pglite', dataDir });
    try {
      const again = await openSecretKeyring({ secretKey: undefined, secretOldKeys: [], dataDir });
      expect(again.generated).toBe(false);
      const resolved = await resolveSecrets(
        { prisma: second.prisma, keyring: again.keyring },
        caller.userId,
        ['KEPT'],
      );
      expect(resolved.value('KEPT')).toBe('kept-value');
    } finally {
      await second.close();
    }
  });
});

describe('a control plane process', PROCESS_TEST, () => {
  const ADMIN = 'bnd_admin_secret-key-process-test';
  afterAll(() => reapAll());

  it.runIf(engine === 'pglite')(
    'on the embedded database generates its key at first start and keeps using it',
    async () => {
      const db = await processDatabase();
      try {
        const env: Record<string, string> = {
          ...db.env,
          BINDERY_ADMIN_TOKEN: ADMIN,
          BINDERY_SEED_DEMO: 'false',
        };
        const first = await startServer(env);
        expect(first.output()).toContain('secret key generated');
        const created = await adminCall(first.url, ADMIN, 'POST', '/api/v2/secrets', {
          name: 'S',
          value: 'value-v1',
        });
        expect(created.status).toBe(201);
        expect(await first.stop()).toBe(0);
        const dataDir = env.BINDERY_DATA_DIR!;
        expect((await stat(join(dataDir, SECRET_KEY_FILE))).mode & 0o777).toBe(0o600);

        const second = await startServer(env);
        expect(second.output()).not.toContain('secret key generated');
        const more = await adminCall(second.url, ADMIN, 'POST', '/api/v2/secrets', {
          name: 'T',
          value: 'value-v2',
        });
        expect(more.status).toBe(201);
        expect(await second.stop()).toBe(0);

        // Both starts wrote with the one generated key.
        const database = await openDatabase({ kind: 'pglite', dataDir });
        try {
          const keys = await openSecretKeyring({ secretKey: undefined, secretOldKeys: [], dataDir });
          const root = await database.prisma.user.findFirstOrThrow({ where: { isRoot: true } });
          const resolved = await resolveSecrets({ prisma: database.prisma, keyring: keys.keyring }, root.id, [
            'S',
            'T',
          ]);
          expect([resolved.value('S'), resolved.value('T')]).toEqual(['value-v1', 'value-v2']);
        } finally {
          await database.close();
        }
      } finally {
        await db.drop();
      }
    },
  );

  it.runIf(engine === 'postgres')('on PostgreSQL uses BINDERY_SECRET_KEY', async () => {
    const db = await processDatabase();
    try {
      const key = Buffer.from(KEY_A).toString('base64');
      const server = await startServer({ ...db.env, BINDERY_ADMIN_TOKEN: ADMIN, BINDERY_SECRET_KEY: key });
      const created = await adminCall(server.url, ADMIN, 'POST', '/api/v2/secrets', {
        name: 'S',
        value: 'value-v1',
      });
      expect(created.status).toBe(201);
      expect(await server.stop()).toBe(0);
      expect(server.output()).not.toContain(key);
      const database = await openDatabase({ kind: 'postgres', url: db.env.DATABASE_URL! });
      try {
        const row = await database.prisma.secret.findFirstOrThrow({ where: { name: 'S' } });
        expect(row.keyId).toBe(keyIdOf(KEY_A));
      } finally {
        await database.close();
      }
    } finally {
      await db.drop();
    }
  });
});
