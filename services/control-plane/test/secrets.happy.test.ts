// Pins the secret store as its users see it: create, list, replace and delete by name, answers
// with names and timestamps only; a tool's references ({{secret.NAME}}) are found in its strings,
// checked at save, resolved at call (decrypted, filled in, last_used_at marked) and redacted out of
// any text again; an export lists secret names and an import reports which ones to create.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkSecretReferenceSyntax,
  checkSecretsExist,
  resolveSecrets,
  secretReferences,
  secretReferencesIn,
} from '../src/secrets/secret-references.ts';
import { startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
let user: { id: string; token: string };

beforeAll(async () => {
  t = await startTestApp();
  user = await t.newUser('secret keeper');
});
afterAll(() => t.close());

const as = (token: string) => ({ token });

describe('the secrets API', () => {
  it('creates, lists, replaces and deletes a secret by name', async () => {
    const created = await t.call('POST', '/api/v2/secrets', {
      ...as(user.token),
      body: { name: 'GITHUB_TOKEN', value: 'ghp_first-value' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      name: 'GITHUB_TOKEN',
      created_at: expect.any(String),
      updated_at: created.body.created_at,
      last_used_at: null,
    });

    const listed = await t.call('GET', '/api/v2/secrets', as(user.token));
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ items: [created.body], next_cursor: null });

    await new Promise((resolve) => setTimeout(resolve, 5));
    const replaced = await t.call('PUT', '/api/v2/secrets/GITHUB_TOKEN', {
      ...as(user.token),
      body: { value: 'ghp_second-value' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name).toBe('GITHUB_TOKEN');
    expect(replaced.body.created_at).toBe(created.body.created_at);
    expect(Date.parse(replaced.body.updated_at)).toBeGreaterThan(Date.parse(created.body.updated_at));
    const resolved = await resolveSecrets(t.app.domain, user.id, ['GITHUB_TOKEN']);
    expect(resolved.value('GITHUB_TOKEN')).toBe('ghp_second-value');

    const deleted = await t.call('DELETE', '/api/v2/secrets/GITHUB_TOKEN', as(user.token));
    expect(deleted.status).toBe(204);
    const after = await t.call('GET', '/api/v2/secrets', as(user.token));
    expect(after.body.items).toEqual([]);
  });

  it('pages a long list by cursor, oldest first', async () => {
    const other = await t.newUser('many secrets');
    for (const name of ['A', 'B', 'C']) {
      const res = await t.call('POST', '/api/v2/secrets', {
        ...as(other.token),
        body: { name, value: `value-of-${name}` },
      });
      expect(res.status).toBe(201);
    }
    const first = await t.call('GET', '/api/v2/secrets?limit=2', as(other.token));
    expect(first.body.items.map((s: { name: string }) => s.name)).toEqual(['A', 'B']);
    const second = await t.call(
      'GET',
      `/api/v2/secrets?limit=2&cursor=${first.body.next_cursor}`,
      as(other.token),
    );
    expect(second.body).toMatchObject({ items: [{ name: 'C' }], next_cursor: null });
  });

  it('keeps values of any text, up to 64 KiB, exactly', async () => {
    const value = `ünïcødé 🔑 "quotes" \\ back\nnew line ${'x'.repeat(60_000)}`;
    const res = await t.call('POST', '/api/v2/secrets', { ...as(user.token), body: { name: 'LONG', value } });
    expect(res.status).toBe(201);
    const resolved = await resolveSecrets(t.app.domain, user.id, ['LONG']);
    expect(resolved.value('LONG')).toBe(value);
  });
});

describe('references in tools', () => {
  it('finds {{secret.NAME}} references in text and in JSON values, each once', () => {
    expect(
      secretReferences('Bearer {{secret.API_TOKEN}} and {{ secret.other_1 }} and {{secret.API_TOKEN}}'),
    ).toEqual(['API_TOKEN', 'other_1']);
    expect(secretReferences('no {{secrets.X}}, {{secret.1BAD}}, {secret.X}')).toEqual([]);
    expect(
      secretReferencesIn({
        headers: { authorization: 'Bearer {{secret.A}}', '{{secret.B}}': 'x' },
        list: ['{{secret.C}}', 3],
      }),
    ).toEqual(['A', 'B', 'C']);
  });

  it('refuses a malformed reference at save, naming the field', () => {
    expect(() =>
      checkSecretReferenceSyntax('Bearer {{secret.API_TOKEN}}', 'headers/authorization'),
    ).not.toThrow();
    for (const bad of ['{{secret.has-dash}}', '{{secret.OPEN', '{{ secret. }}']) {
      expect(() => checkSecretReferenceSyntax(`x ${bad}`, 'headers/authorization'), bad).toThrow(
        /^headers\/authorization: .* is not a secret reference/,
      );
    }
  });

  it('checks at save that every referenced secret exists, naming the missing one', async () => {
    await t.call('POST', '/api/v2/secrets', {
      ...as(user.token),
      body: { name: 'PRESENT', value: 'present-value' },
    });
    await expect(checkSecretsExist(t.app.domain.prisma, user.id, ['PRESENT'])).resolves.toBeUndefined();
    await expect(
      checkSecretsExist(t.app.domain.prisma, user.id, ['PRESENT', 'ABSENT'], 'url'),
    ).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(/^url: no secret named ABSENT; create it with POST \/api\/v2\/secrets/),
      details: { missing: ['ABSENT'], field: 'url' },
    });
  });

  it('resolves at call: fills references in, redacts every form of the values out', async () => {
    await t.call('POST', '/api/v2/secrets', {
      ...as(user.token),
      body: { name: 'WEIRD', value: 'a "quoted" & spaced/value' },
    });
    const resolved = await resolveSecrets(t.app.domain, user.id, ['PRESENT', 'WEIRD']);
    expect(resolved.fill('k={{secret.PRESENT}}; w={{ secret.WEIRD }}')).toBe(
      'k=present-value; w=a "quoted" & spaced/value',
    );
    const leaked = [
      'raw a "quoted" & spaced/value',
      `json ${JSON.stringify({ v: 'a "quoted" & spaced/value' })}`,
      `url ?q=${encodeURIComponent('a "quoted" & spaced/value')}`,
    ].join(' | ');
    const redacted = resolved.redact(leaked);
    expect(redacted).toBe('raw [secret WEIRD] | json {"v":"[secret WEIRD]"} | url ?q=[secret WEIRD]');
    expect(resolved.redactJson({ error: 'token a "quoted" & spaced/value refused', n: 1 })).toEqual({
      error: 'token [secret WEIRD] refused',
      n: 1,
    });
  });

  it('redacts a value inside a longer base64 text at every alignment, in both alphabets', async () => {
    const resolved = await resolveSecrets(t.app.domain, user.id, ['WEIRD']);
    for (let before = 0; before < 6; before += 1) {
      for (let after = 0; after < 4; after += 1) {
        const text = `${'<'.repeat(before)}a "quoted" & spaced/value${'>'.repeat(after)}`;
        for (const encoding of ['base64', 'base64url'] as const) {
          const encoded = Buffer.from(text).toString(encoding);
          const redacted = resolved.redact(`Authorization: Basic ${encoded}`);
          expect(redacted, `${encoding} ${before}+${after}`).toMatch(
            /^Authorization: Basic [\w+/=-]{0,9}\[secret WEIRD\][\w+/=-]{0,9}$/,
          );
        }
      }
    }
  });

  it('a secret deleted after the tool was saved is NOT_FOUND at call, naming it', async () => {
    await expect(resolveSecrets(t.app.domain, user.id, ['GONE'])).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('secret GONE'),
    });
  });

  it('marks a secret used when a call resolves it', async () => {
    const other = await t.newUser('user of secrets');
    await t.call('POST', '/api/v2/secrets', {
      ...as(other.token),
      body: { name: 'USED', value: 'used-value' },
    });
    await resolveSecrets(t.app.domain, other.id, ['USED']);
    let lastUsed: string | null = null;
    for (let i = 0; i < 50 && lastUsed === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      lastUsed = (await t.call('GET', '/api/v2/secrets', as(other.token))).body.items[0].last_used_at;
    }
    expect(lastUsed).not.toBeNull();
    // The mark is not a change of the value.
    const listed = (await t.call('GET', '/api/v2/secrets', as(other.token))).body.items[0];
    expect(listed.updated_at).toBe(listed.created_at);
  });
});

describe('export and import', () => {
  it('exports secret names without values; an import reports the ones to create', async () => {
    const owner = await t.newUser('exporter');
    for (const name of ['ONE', 'TWO']) {
      await t.call('POST', '/api/v2/secrets', {
        ...as(owner.token),
        body: { name, value: `value-of-${name}` },
      });
    }
    const exported = await t.call('GET', '/api/v2/export', as(owner.token));
    expect(exported.status).toBe(200);
    expect(exported.body.secrets).toEqual([{ name: 'ONE' }, { name: 'TWO' }]);
    expect(JSON.stringify(exported.body)).not.toContain('value-of-');

    const importer = await t.newUser('importer');
    await t.call('POST', '/api/v2/secrets', {
      ...as(importer.token),
      body: { name: 'TWO', value: 'my-own-value' },
    });
    for (const dryRun of [true, false]) {
      const imported = await t.call('POST', `/api/v2/import${dryRun ? '?dry_run=true' : ''}`, {
        ...as(importer.token),
        body: exported.body,
      });
      expect(imported.status, JSON.stringify(imported.body)).toBe(dryRun ? 200 : 201);
      expect(imported.body.secrets_to_create).toEqual(['ONE']);
    }
  });
});
