/**
 * The keys the authorization server signs access tokens with: ES256 key pairs in the database, the
 * private half sealed with the secrets' keyring, so every control plane signs with the same key and
 * gateways verify with the published JWKS.
 *
 * Rotation: `rotate` makes a new key and retires the others (it signs from then on); a retired key
 * stays published for `RETIRED_PUBLISHED_MS` (longer than an access token lives), so tokens it
 * signed keep verifying until they expire, then it is deleted. A key older than the rotation period
 * is rotated by whichever control plane loads the keys first after that. Control planes reload the
 * key set every few minutes; gateways fetch the JWKS again when a token names a key they lack.
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
 * Makes a new signing key and retires the ones before it. Two control planes rotating at once make
 * two keys: the newer signs, the other is retired by the next load.
 */
export async function rotateSigningKey(db: PrismaClient, keyring: SecretSealer): Promise<void> {
  await newKey(db, keyring);
  await retireAllButNewest(db);
}

async function retireAllButNewest(db: PrismaClient): Promise<void> {
  const active = await db.oAuthSigningKey.findMany({
    where: { retiredAt: null },
    orderBy: [{ createdAt: 'desc' }, { kid: 'desc' }],
    select: { kid: true },
  });
  const older = active.slice(1).map((key) => key.kid);
  if (older.length > 0) {
    await db.oAuthSigningKey.updateMany({ where: { kid: { in: older } }, data: { retiredAt: new Date() } });
  }
}

/**
 * The keys to sign and publish with: makes the first key, rotates one older than `rotationMs`,
 * deletes keys retired long enough ago, and opens the private halves.
 */
export async function loadSigningKeys(
  db: PrismaClient,
  keyring: SecretSealer,
  rotationMs: number,
): Promise<SigningKeys> {
  await db.oAuthSigningKey.deleteMany({
    where: { retiredAt: { lt: new Date(Date.now() - RETIRED_PUBLISHED_MS) } },
  });
  const signing = await db.oAuthSigningKey.findFirst({
    where: { retiredAt: null },
    orderBy: [{ createdAt: 'desc' }, { kid: 'desc' }],
  });
  if (!signing || signing.createdAt.getTime() < Date.now() - rotationMs) {
    await rotateSigningKey(db, keyring);
  } else {
    await retireAllButNewest(db);
  }
  const rows = await db.oAuthSigningKey.findMany({
    orderBy: [{ retiredAt: { sort: 'asc', nulls: 'first' } }, { createdAt: 'desc' }, { kid: 'desc' }],
  });
  const privateKeys = rows.map(
    (row) =>
      JSON.parse(
        keyring.open(
          { ciphertext: row.ciphertext, iv: row.iv, authTag: row.authTag, keyId: row.secretKeyId },
          { userId: OWNER_USER, name: row.kid },
        ),
      ) as JWK,
  );
  return { privateKeys, fingerprint: rows.map((row) => row.kid).join(',') };
}
