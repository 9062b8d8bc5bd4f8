// Pins how the root token is installed at start: generated once when none exists, replaced by
// BINDERY_ADMIN_TOKEN when that is set (revoking the generated one), never stored in clear.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, ensureRootToken } from '../src/domain/users.ts';
import { ROOT_TOKEN, startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('root token', () => {
  it('keeps the configured token and generates nothing while one exists', async () => {
    expect(await ensureRootToken(t.database.prisma, undefined)).toBeUndefined();
    expect(await authenticate(t.database.prisma, ROOT_TOKEN)).toMatchObject({ isRoot: true });
  });

  it('a newly configured token replaces the old root token', async () => {
    const next = 'bnd_admin_the-next-root-token';
    expect(await ensureRootToken(t.database.prisma, next)).toBeUndefined();
    expect(await authenticate(t.database.prisma, next)).toMatchObject({ isRoot: true });
    expect(await authenticate(t.database.prisma, ROOT_TOKEN)).toBeUndefined();
    await ensureRootToken(t.database.prisma, ROOT_TOKEN);
  });

  it('refuses a configured token that belongs to another user', async () => {
    const user = await t.newUser('carol');
    await expect(ensureRootToken(t.database.prisma, user.token)).rejects.toThrow(/non-root user/);
  });

  it('generates a token when the root user has none', async () => {
    await t.database.prisma.adminToken.deleteMany({ where: { user: { isRoot: true } } });
    const generated = await ensureRootToken(t.database.prisma, undefined);
    expect(generated).toMatch(/^bnd_admin_/);
    expect(await authenticate(t.database.prisma, generated!)).toMatchObject({ isRoot: true });
    expect(await ensureRootToken(t.database.prisma, undefined)).toBeUndefined();
  });
});
