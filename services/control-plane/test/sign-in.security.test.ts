// Pins console sign-in with a name and a password (decision 072): a person sets a password with an
// admin token (12 to 1,024 characters; one already set must be given to change it), and signs in
// with their name in any case for an admin token that expires in 12 hours; an unknown name, a wrong
// password and a disabled user are refused alike; failures are limited by name and by address;
// among people who sign in, a name is one person's; the password is stored as a salted scrypt hash,
// and neither it nor the token reaches a log line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword, passwordMatches } from '../src/accounts/passwords.ts';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
const logged: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ logStream: { write: (line) => logged.push(line) } });
});
afterAll(async () => {
  await t?.close();
});

const PASSWORD = 'correct horse battery staple';

function setPassword(token: string, body: { password: string; current_password?: string }) {
  return t.call('PUT', '/api/v2/me/password', { token, body });
}

function signIn(name: string, password: string) {
  return t.call('POST', '/api/v2/sign-in', { token: null, body: { name, password } });
}

describe('a password', () => {
  it('is set with an admin token and signs its person in, by name in any case', async () => {
    const ada = await t.newUser('Ada Lovelace');
    const short = await setPassword(ada.token, { password: 'short' });
    expect(short.status).toBe(400);
    const set = await setPassword(ada.token, { password: PASSWORD });
    expect(set.status).toBe(204);

    const signedIn = await signIn('ada LOVELACE', PASSWORD);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.user).toMatchObject({ id: ada.id, name: 'Ada Lovelace' });
    expect(signedIn.body.token).toMatch(/^bnd_admin_/);
    const lasts = Date.parse(signedIn.body.expires_at) - Date.now();
    expect(lasts).toBeGreaterThan(11.9 * 3_600_000);
    expect(lasts).toBeLessThanOrEqual(12 * 3_600_000);
    const me = await t.call('GET', '/api/v2/me', { token: signedIn.body.token });
    expect(me.body).toMatchObject({ id: ada.id });
    // The token is listed among the person's own, named after the sign-in.
    const tokens = await t.call('GET', '/api/v2/tokens', { token: ada.token });
    expect(tokens.body.items.map((token: { name: string | null }) => token.name)).toContain(
      'console sign-in',
    );

    // Stored as a salted scrypt hash, never as itself.
    const [row] = await t.database.prisma.$queryRaw<{ password_hash: string }[]>`
      SELECT "password_hash" FROM "user" WHERE "id" = ${ada.id}`;
    expect(row!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(row!.password_hash).not.toContain(PASSWORD);
  });

  it('is refused alike for an unknown name, a wrong password and a disabled user', async () => {
    const grace = await t.newUser('Grace');
    await setPassword(grace.token, { password: PASSWORD });
    const answers = [await signIn('nobody at all', PASSWORD), await signIn('Grace', `${PASSWORD}!`)];
    await t.call('PATCH', `/api/v2/users/${grace.id}`, { body: { status: 'disabled' } });
    answers.push(await signIn('Grace', PASSWORD));
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'wrong name or password' });
    }
    await t.call('PATCH', `/api/v2/users/${grace.id}`, { body: { status: 'enabled' } });
  });

  it('must be given to be changed, and the old one and its sign-ins stop working', async () => {
    const alan = await t.newUser('Alan');
    await setPassword(alan.token, { password: PASSWORD });
    const before = (await signIn('Alan', PASSWORD)).body.token as string;
    expect((await t.call('GET', '/api/v2/me', { token: before })).status).toBe(200);
    const without = await setPassword(alan.token, { password: 'another long password' });
    expect(without.status).toBe(403);
    const changed = await setPassword(alan.token, {
      password: 'another long password',
      current_password: PASSWORD,
    });
    expect(changed.status).toBe(204);
    // The sign-in made with the old password ends; the token that changed it does not.
    expect((await t.call('GET', '/api/v2/me', { token: before })).status).toBe(401);
    expect((await t.call('GET', '/api/v2/me', { token: alan.token })).status).toBe(200);
    expect((await signIn('Alan', PASSWORD)).status).toBe(401);
    expect((await signIn('Alan', 'another long password')).status).toBe(200);
  });

  it('makes its name one person’s among those who sign in', async () => {
    const first = await t.newUser('Twin');
    const second = await t.newUser('twin');
    await setPassword(first.token, { password: PASSWORD });
    const clash = await setPassword(second.token, { password: PASSWORD });
    expect(clash.status).toBe(409);
    const other = await t.newUser('Other');
    await setPassword(other.token, { password: PASSWORD });
    const renamed = await t.call('PATCH', `/api/v2/users/${other.id}`, { body: { name: 'TWIN' } });
    expect(renamed.status).toBe(409);
    // Without a password a name may be shared, as before.
    expect((await t.call('PATCH', `/api/v2/users/${second.id}`, { body: { name: 'Twin' } })).status).toBe(
      200,
    );
  });

  it('is refused past 1,024 characters, when set and when signing in', async () => {
    const long = 'x'.repeat(1025);
    const ada = await signIn('Ada Lovelace', PASSWORD);
    const set = await setPassword(ada.body.token, { password: long });
    expect(set.status).toBe(400);
    expect((await signIn('Ada Lovelace', long)).status).toBe(401);
  });

  it('lets a burst of guesses at once through no further than the limit', async () => {
    const target = await t.newUser('Burst');
    await setPassword(target.token, { password: PASSWORD });
    const answers = await Promise.all(Array.from({ length: 30 }, () => signIn('BURST', 'a wrong guess!!')));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
  });

  it('never reaches a log line, and neither does the token', async () => {
    const answer = await signIn('Ada Lovelace', PASSWORD);
    expect(answer.status).toBe(200);
    const text = logged.join('\n');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(answer.body.token);
  });
  it('is not tried past ten failures of a name, or fifty of an address, in a window', async () => {
    const barbara = await t.newUser('Barbara');
    await setPassword(barbara.token, { password: PASSWORD });
    for (let i = 0; i < 10; i += 1) expect((await signIn('Barbara', 'wrong password!')).status).toBe(401);
    // The right password too: the name is spent for the window.
    const limited = await signIn('Barbara', PASSWORD);
    expect(limited.status).toBe(429);
    expect(limited.body.error.details.retry_after_seconds).toBeGreaterThan(0);
    // Another name from the same address still signs in, until the address has failed fifty times.
    expect((await signIn('Ada Lovelace', PASSWORD)).status).toBe(200);
    let failures = 0;
    for (let i = 0; failures < 50 && i < 60; i += 1) {
      const answer = await signIn(`guess ${i}`, 'wrong password!');
      if (answer.status === 401) failures += 1;
      else expect(answer.status).toBe(429);
    }
    expect((await signIn('Ada Lovelace', PASSWORD)).status).toBe(429);
  });
});

describe('hashing', () => {
  it('runs a few hashes at once, lets some wait, and refuses a flood rather than queue it', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => hashPassword(`flood password ${i}`)),
    );
    const refused = outcomes.filter((o) => o.status === 'rejected');
    // 2 running and 64 waiting at most: the other 34 are told to come back.
    expect(refused.length).toBe(34);
    for (const o of refused)
      expect((o as PromiseRejectedResult).reason).toMatchObject({ code: 'RATE_LIMITED' });
    // Once the flood is over, hashing works again.
    const stored = await hashPassword('after the flood, fine');
    expect(await passwordMatches('after the flood, fine', stored)).toBe(true);
    expect(await passwordMatches('after the flood, fine!', stored)).toBe(false);
  });

  it('matches nothing against a stored value it did not make', async () => {
    for (const stored of [
      '',
      'plain text',
      'scrypt$1048576$8$1$AAAA$AAAA',
      'scrypt$3$8$1$AAAA$AAAA',
      'scrypt$1.5e1$8$1$AAAA$AAAA',
      'scrypt$16$-1$1$AAAA$AAAA',
      'scrypt$16$8$0$AAAA$AAAA',
      'bcrypt$2b$10$xyz',
      'scrypt$$$$$',
    ]) {
      expect(await passwordMatches('anything at all', stored)).toBe(false);
    }
  });
});
