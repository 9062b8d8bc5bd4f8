/**
 * The keys the authorization server signs access tokens with: ES256 key pairs in the database, the
 * private half sealed with the secrets' keyring, so every control plane signs with the same key and
 * gateways verify with the published JWKS. Rotation (`loadSigningKeys`) publishes a successor before
 * it signs and keeps a retired key published past the tokens it signed. Control planes read the key
 * set every few minutes; gateways fetch the JWKS again when a token names a key they lack.
 */
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { SecretSealer } from '../domain/context.ts';

/** A retired key is published this long after it stops signing (access tokens live an hour). */
export const RETIRED_PUBLISHED_MS = 24 * 60 * 60 * 1000;
/** The sealed private keys' owner, for the keyring's associated data. */
const OWNER_USER = 'oauth-signing-key';

export interface SigningKeys {
  /** Private JWKs, the signing one first (the library signs with the first of an algorithm). */
  privateKeys: JWK[];
  /** The key ids, in the same order: a change means the provider must be built again. */
  fingerprint: string;
}

async function newKey(db: PrismaClient, keyring: SecretSealer): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = `k${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const sealed = keyring.seal(JSON.stringify(privateJwk), { userId: OWNER_USER, name: kid });
  await db.oAuthSigningKey.create({
    data: {
      kid,
      publicJwk,
      ciphertext: Buffer.from(sealed.ciphertext),
      iv: Buffer.from(sealed.iv),
      authTag: Buffer.from(sealed.authTag),
      secretKeyId: sealed.keyId,
    },
  });
}

/**
 * A new key is published this long before it signs: longer than a control plane may serve a key
 * set without reading it again (5 minutes) plus how long gateways keep a JWKS (10 minutes), with a
 * margin for clocks, so no gateway meets a token signed by a key it cannot find.
 */
export const PUBLISHED_BEFORE_SIGNING_MS = 20 * 60 * 1000;

/**
 * The keys to sign and publish with:
 * - the first key ever made signs at once;
 * - a signing key older than `rotationMs` gets a successor, published at once, which takes over
 *   signing `PUBLISHED_BEFORE_SIGNING_MS` later; the keys before it are then retired;
 * - a retired key is published `RETIRED_PUBLISHED_MS` more, then deleted.
 * Two control planes making a successor at once make two: the newer signs, the other is retired.
 */
export async function loadSigningKeys(
  db: PrismaClient,
  keyring: SecretSealer,
  rotationMs: number,
  now = Date.now(),
): Promise<SigningKeys> {
  await db.oAuthSigningKey.deleteMany({
    where: { retiredAt: { lt: new Date(now - RETIRED_PUBLISHED_MS) } },
  });
  const activeKeys = () =>
    db.oAuthSigningKey.findMany({
      where: { retiredAt: null },
      orderBy: [{ createdAt: 'desc' }, { kid: 'desc' }],
    });
  let active = await activeKeys();
  if (active.length === 0 || active[0]!.createdAt.getTime() < now - rotationMs) {
    await newKey(db, keyring);
    active = await activeKeys();
  }
  // The newest key published long enough signs; else (the first key ever) the oldest active one.
  const signing =
    active.find((key) => key.createdAt.getTime() <= now - PUBLISHED_BEFORE_SIGNING_MS) ?? active.at(-1)!;
  const older = active.filter((key) => key.createdAt < signing.createdAt).map((key) => key.kid);
  if (older.length > 0) {
    await db.oAuthSigningKey.updateMany({
      where: { kid: { in: older } },
      data: { retiredAt: new Date(now) },
    });
  }
  const rows = await db.oAuthSigningKey.findMany({ orderBy: [{ createdAt: 'desc' }, { kid: 'desc' }] });
  // The library signs with the first key of an algorithm: the signing key goes first.
  const ordered = [signing, ...rows.filter((row) => row.kid !== signing.kid)];
  const privateKeys = ordered.map(
    (row) =>
      JSON.parse(
        keyring.open(
          { ciphertext: row.ciphertext, iv: row.iv, authTag: row.authTag, keyId: row.secretKeyId },
          { userId: OWNER_USER, name: row.kid },
        ),
      ) as JWK,
  );
  return { privateKeys, fingerprint: ordered.map((row) => row.kid).join(',') };
}
