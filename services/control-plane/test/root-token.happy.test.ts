// Pins how the root token is installed at start: generated once when no usable one exists,
// replaced by BINDERY_ADMIN_TOKEN when that is set (removing the unnamed one it replaces, keeping
// tokens the root user named through the API), usable again even after it was revoked, never
// stored in clear.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../src/accounts/admin-tokens.ts';
import { ensureRootToken } from '../src/accounts/users.ts';
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

  it('a newly configured token replaces the old root token, not the ones root named', async () => {
    const named = await t.call('POST', '/api/v2/tokens', { body: { name: 'ci' } });
    expect(named.status).toBe(201);
    const next = 'bnd_admin_the-next-root-token';
    expect(await ensureRootToken(t.database.prisma, next)).toBeUndefined();
    expect(await authenticate(t.database.prisma, next)).toMatchObject({ isRoot: true });
    await expect(authenticate(t.database.prisma, ROOT_TOKEN)).rejects.toThrow('unknown admin token');
    expect(await authenticate(t.database.prisma, named.body.token)).toMatchObject({ isRoot: true });
    await ensureRootToken(t.database.prisma, ROOT_TOKEN);
  });

  it('the configured token works again after it was revoked', async () => {
    const mine = await t.call('GET', '/api/v2/tokens');
    const current = mine.body.items.find((x: { current: boolean }) => x.current);
    expect((await t.call('DELETE', `/api/v2/tokens/${current.id}`)).status).toBe(204);
    expect((await t.call('GET', '/api/v2/me')).status).toBe(401);
    await ensureRootToken(t.database.prisma, ROOT_TOKEN);
    expect((await t.call('GET', '/api/v2/me')).status).toBe(200);
  });

  it('refuses a configured token that belongs to another user', async () => {
    const user = await t.newUser('carol');
    await expect(ensureRootToken(t.database.prisma, user.token)).rejects.toThrow(/non-root user/);
  });

  it('generates a token when the root user has no usable one', async () => {
    await t.database.prisma.adminToken.updateMany({
      where: { user: { isRoot: true } },
      data: { revokedAt: new Date() },
    });
    const afterRevoke = await ensureRootToken(t.database.prisma, undefined);
    expect(afterRevoke).toMatch(/^bnd_admin_/);
    await t.database.prisma.adminToken.deleteMany({ where: { user: { isRoot: true } } });
    const generated = await ensureRootToken(t.database.prisma, undefined);
    expect(generated).toMatch(/^bnd_admin_/);
    expect(await authenticate(t.database.prisma, generated!)).toMatchObject({ isRoot: true });
    expect(await ensureRootToken(t.database.prisma, undefined)).toBeUndefined();
  });
});
