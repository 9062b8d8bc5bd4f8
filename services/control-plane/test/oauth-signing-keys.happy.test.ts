// The authorization server's signing keys (oauth/signing-keys.ts) on a real database: the first key
// signs at once; a key past the rotation period gets a successor that is published at once and
// signs only after PUBLISHED_BEFORE_SIGNING_MS (so every gateway can find it), retiring the old one,
// which stays published RETIRED_PUBLISHED_MS more and then goes; the JWKS served follows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretKeyring } from '../src/secrets/secret-keyring.ts';
import {
  PUBLISHED_BEFORE_SIGNING_MS,
  RETIRED_PUBLISHED_MS,
  loadSigningKeys,
} from '../src/oauth/signing-keys.ts';
import { TEST_SECRET_KEY, startTestApp, type TestApp } from './support/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const DAY = 86_400_000;
const kids = (keys: { privateKeys: { kid?: string }[] }) => keys.privateKeys.map((key) => key.kid);

describe('signing keys', () => {
  it('rotate with a successor published before it signs, and a retired key published after', async () => {
    const db = t.app.domain.prisma;
    const keyring = new SecretKeyring(TEST_SECRET_KEY);
    await db.oAuthSigningKey.deleteMany({});
    const start = Date.now();
    const first = await loadSigningKeys(db, keyring, 30 * DAY, start);
    expect(first.privateKeys).toHaveLength(1);
    const firstKid = first.privateKeys[0]!.kid;
    // Private halves are sealed at rest: no "d" in the stored public JWK, none in plain text.
    const stored = await db.oAuthSigningKey.findFirstOrThrow({ where: { kid: firstKid! } });
    expect(JSON.stringify(stored.publicJwk)).not.toContain('"d"');
    expect(Buffer.from(stored.ciphertext).toString('utf8')).not.toContain(first.privateKeys[0]!.d);
    // Read again within the period: the same key, nothing new.
    expect(kids(await loadSigningKeys(db, keyring, 30 * DAY, start + DAY))).toEqual([firstKid]);
    // Past the period (a period of 1 ms here): a successor, published second, the first still signs.
    const rotated = await loadSigningKeys(db, keyring, 1, start + 1000);
    expect(rotated.privateKeys).toHaveLength(2);
    expect(rotated.privateKeys[0]!.kid).toBe(firstKid);
    const successor = rotated.privateKeys[1]!.kid;
    // Once published long enough, the successor signs and the first key is retired, still published.
    const later = Date.now() + PUBLISHED_BEFORE_SIGNING_MS + 1000;
    const taken = await loadSigningKeys(db, keyring, 30 * DAY, later);
    expect(kids(taken)).toEqual([successor, firstKid]);
    expect(taken.fingerprint).not.toBe(rotated.fingerprint);
    expect(
      (await db.oAuthSigningKey.findUniqueOrThrow({ where: { kid: firstKid! } })).retiredAt,
    ).not.toBeNull();
    // A day after its retirement it is gone.
    const gone = await loadSigningKeys(db, keyring, 30 * DAY, later + RETIRED_PUBLISHED_MS + 1000);
    expect(kids(gone)).toEqual([successor]);
  });
});
