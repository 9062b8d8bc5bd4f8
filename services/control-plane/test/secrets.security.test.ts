// Pins that a secret's value goes in and never comes out: no answer of any secrets route (nor the
// export, nor the errors of bad requests that carry the value) holds it in its raw text, the app's
// log at level trace never holds it, the database holds only ciphertext; a user never sees,
// replaces or deletes another user's secret (the root user included), and a ciphertext moved onto
// another user's row does not decrypt there.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSecrets } from '../src/secrets/secret-references.ts';
import { keyIdOf } from '../src/secrets/secret-keyring.ts';
import { ROOT_TOKEN, TEST_SECRET_KEY, startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let owner: { id: string; token: string };
let stranger: { id: string; token: string };
const logLines: string[] = [];
// Letters only: a 6-character piece of digits turned up by chance in a trace log's numbers.
const value = `sv-${randomBytes(12)
  .toString('hex')
  .replace(/[0-9]/g, (digit) => 'ghijklmnop'.charAt(Number(digit)))}`;
const answers: { what: string; status: number; text: string }[] = [];

/**
 * The first 6-character piece of the value found in `text` (a part of it leaks as surely as all of
 * it: a parser's message quotes a few characters); the value's random part makes a chance match
 * practically impossible.
 */
function leakIn(text: string): string | undefined {
  for (let i = 0; i + 6 <= value.length; i++) {
    if (text.includes(value.slice(i, i + 6))) return value.slice(i, i + 6);
  }
  return undefined;
}

/** A request whose raw answer text is kept, to be searched for the value. */
async function raw(what: string, method: string, path: string, token: string, body?: string) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    body,
  });
  const text = await res.text();
  answers.push({ what, status: res.status, text });
  return { status: res.status, text };
}

beforeAll(async () => {
  t = await startTestApp({ logStream: { write: (line) => void logLines.push(line) } });
  owner = await t.newUser('owner');
  stranger = await t.newUser('stranger');
});
afterAll(() => t.close());

describe('a secret’s value', () => {
  it('is in no answer of the secrets routes, the export, or errors of requests that carry it', async () => {
    const json = (v: unknown) => JSON.stringify(v);
    const expect201 = await raw(
      'create',
      'POST',
      '/api/v2/secrets',
      owner.token,
      json({ name: 'API_KEY', value }),
    );
    expect(expect201.status).toBe(201);
    const cases: [string, string, string, string | undefined, number][] = [
      ['duplicate', 'POST', '/api/v2/secrets', json({ name: 'API_KEY', value }), 409],
      ['replace', 'PUT', '/api/v2/secrets/API_KEY', json({ value }), 200],
      ['replace unknown', 'PUT', '/api/v2/secrets/NOPE', json({ value }), 404],
      ['bad name', 'POST', '/api/v2/secrets', json({ name: '1-bad', value }), 400],
      ['extra field', 'POST', '/api/v2/secrets', json({ name: 'X', value, note: value }), 400],
      ['value not a string', 'POST', '/api/v2/secrets', json({ name: 'X', value: [value] }), 400],
      [
        'too many bytes',
        'POST',
        '/api/v2/secrets',
        json({ name: 'BIG', value: `${value}${'é'.repeat(40_000)}` }),
        400,
      ],
      ['broken JSON', 'POST', '/api/v2/secrets', `{"name": "X", "value": "${value}" oops}`, 400],
      ['truncated JSON', 'POST', '/api/v2/secrets', `{"name": "X", "value": "${value}`, 400],
      // The parser's own message would quote the text around an unquoted value.
      ['unquoted value', 'POST', '/api/v2/secrets', `{"name": "X", "value": ${value}}`, 400],
      ['list', 'GET', '/api/v2/secrets', undefined, 200],
      ['export', 'GET', '/api/v2/export', undefined, 200],
      ['openapi', 'GET', '/openapi.json', undefined, 200],
    ];
    for (const [what, method, path, body, status] of cases) {
      const res = await raw(what, method, path, owner.token, body);
      expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBe(status);
    }
    const broken = answers.find((a) => a.what === 'unquoted value')!;
    expect(JSON.parse(broken.text).error.message).toMatch(/^request body is not valid JSON/);
    for (const answer of answers) expect(leakIn(answer.text), answer.what).toBeUndefined();
  });

  it('is never logged, even at level trace', async () => {
    await resolveSecrets(t.app.domain, owner.id, ['API_KEY']);
    await raw('delete', 'DELETE', '/api/v2/secrets/API_KEY', owner.token);
    const log = logLines.join('');
    expect(log).toContain('/api/v2/secrets');
    expect(leakIn(log)).toBeUndefined();
  });

  it('is stored only encrypted, marked with the id of its key', async () => {
    await raw(
      'create again',
      'POST',
      '/api/v2/secrets',
      owner.token,
      JSON.stringify({ name: 'STORED', value }),
    );
    const row = await t.database.prisma.secret.findFirstOrThrow({
      where: { userId: owner.id, name: 'STORED' },
    });
    expect(row.keyId).toBe(keyIdOf(TEST_SECRET_KEY));
    expect(Buffer.from(row.ciphertext).includes(Buffer.from(value))).toBe(false);
    expect(Buffer.from(row.ciphertext).toString('latin1')).not.toContain(value);
    expect(row.iv.length).toBe(12);
    expect(row.authTag.length).toBe(16);
  });
});

describe('ownership', () => {
  it('a user never sees, replaces or deletes another’s secret, root included', async () => {
    await t.call('POST', '/api/v2/secrets', {
      token: owner.token,
      body: { name: 'MINE', value: 'owner-value' },
    });
    for (const token of [stranger.token, ROOT_TOKEN]) {
      const listed = await t.call('GET', '/api/v2/secrets', { token });
      expect(listed.body.items.map((s: { name: string }) => s.name)).not.toContain('MINE');
      const replaced = await t.call('PUT', '/api/v2/secrets/MINE', { token, body: { value: 'hijacked' } });
      expect(replaced.status).toBe(404);
      const deleted = await t.call('DELETE', '/api/v2/secrets/MINE', { token });
      expect(deleted.status).toBe(404);
    }
    // The same name is free for each user.
    const same = await t.call('POST', '/api/v2/secrets', {
      token: stranger.token,
      body: { name: 'MINE', value: 'stranger-value' },
    });
    expect(same.status).toBe(201);
    const mine = await resolveSecrets(t.app.domain, owner.id, ['MINE']);
    expect(mine.value('MINE')).toBe('owner-value');
    await expect(resolveSecrets(t.app.domain, stranger.id, ['STORED'])).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('needs an admin token', async () => {
    for (const [method, path] of [
      ['GET', '/api/v2/secrets'],
      ['POST', '/api/v2/secrets'],
      ['PUT', '/api/v2/secrets/MINE'],
      ['DELETE', '/api/v2/secrets/MINE'],
    ] as const) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : { name: 'X', value: 'y' };
      const res = await t.call(method, path, { token: null, body });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it('a ciphertext copied onto another user’s row does not decrypt there', async () => {
    const source = await t.database.prisma.secret.findFirstOrThrow({
      where: { userId: owner.id, name: 'MINE' },
    });
    await t.database.prisma.secret.update({
      where: { userId_name: { userId: stranger.id, name: 'MINE' } },
      data: { ciphertext: source.ciphertext, iv: source.iv, authTag: source.authTag, keyId: source.keyId },
    });
    const error = await resolveSecrets(t.app.domain, stranger.id, ['MINE']).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'INTERNAL',
      message: expect.stringContaining('secret MINE does not decrypt'),
    });
    expect((error as Error).message).not.toContain('owner-value');
  });
});
