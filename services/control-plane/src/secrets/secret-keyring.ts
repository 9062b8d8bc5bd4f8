/**
 * The keys users' secrets are encrypted with: AES-256-GCM under the current key, each ciphertext
 * marked with the id of its key (a short hash of it), so a key can rotate: move it to
 * BINDERY_SECRET_OLD_KEYS, set the new one, and every secret stays readable. Each secret's owner
 * and name are bound into its authentication tag, so a ciphertext copied onto another row (another
 * user's, another name) fails to decrypt instead of revealing its value there.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { DomainError } from '../domain/errors.ts';
import type { SealedValue, SecretOwner, SecretSealer } from '../domain/context.ts';

const ALGORITHM = 'aes-256-gcm';
/** 96-bit nonces, GCM's native size; random per encryption. */
const IV_BYTES = 12;

export type { SealedValue, SecretOwner };

/** The id a key's ciphertexts are marked with: 16 hex digits of a hash of it, never the key. */
export function keyIdOf(key: Uint8Array): string {
  return createHash('sha256').update('bindery secret key id\n').update(key).digest('hex').slice(0, 16);
}

function additionalData(owner: SecretOwner): Buffer {
  return Buffer.from(`${owner.userId}\n${owner.name}`, 'utf8');
}

export class SecretKeyring implements SecretSealer {
  readonly currentKeyId: string;
  private readonly keys: ReadonlyMap<string, Uint8Array>;

  /** `current` writes and reads; `old` keys only read (a key listed twice counts once). */
  constructor(current: Uint8Array, old: readonly Uint8Array[] = []) {
    this.currentKeyId = keyIdOf(current);
    const keys = new Map<string, Uint8Array>();
    for (const key of old) keys.set(keyIdOf(key), key);
    keys.set(this.currentKeyId, current);
    this.keys = keys;
  }

  /** The ids of every key that can read, the current one included. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  /** Encrypts a value for its owner under the current key. */
  seal(value: string, owner: SecretOwner): SealedValue {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.keys.get(this.currentKeyId)!, iv);
    cipher.setAAD(additionalData(owner));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return { ciphertext, iv, authTag: cipher.getAuthTag(), keyId: this.currentKeyId };
  }

  /**
   * Decrypts a stored value. A key no longer configured is NOT_CONFIGURED naming the setting; a
   * ciphertext that does not verify (altered, or moved to another row) is INTERNAL. Messages name
   * the secret, never its content.
   */
  open(sealed: SealedValue, owner: SecretOwner): string {
    const key = this.keys.get(sealed.keyId);
    if (!key) {
      throw new DomainError(
        'NOT_CONFIGURED',
        `secret ${owner.name} was encrypted with a key this control plane does not have (key id ${sealed.keyId}): list that key in BINDERY_SECRET_OLD_KEYS, or set the secret again`,
        { secret: owner.name, key_id: sealed.keyId, setting: 'BINDERY_SECRET_OLD_KEYS' },
      );
    }
    try {
      const decipher = createDecipheriv(ALGORITHM, key, sealed.iv);
      decipher.setAAD(additionalData(owner));
      decipher.setAuthTag(sealed.authTag);
      return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // The key is the right one (its id matched), so the stored bytes were altered or moved.
      throw new DomainError(
        'INTERNAL',
        `secret ${owner.name} does not decrypt with its key (key id ${sealed.keyId}): its stored form was altered; set the secret again`,
        { secret: owner.name, key_id: sealed.keyId },
      );
    }
  }
}

/** The setting that gives secrets their key. */
export const SECRET_KEY_SETTING = 'BINDERY_SECRET_KEY';

/**
 * The keyring, or NOT_CONFIGURED (503) telling the operator what to set: secrets cannot be written
 * or used without a key, which only PostgreSQL installations can lack (the embedded database
 * generates one).
 */
export function requireKeyring(ctx: { keyring?: SecretSealer | undefined }): SecretSealer {
  if (ctx.keyring) return ctx.keyring;
  throw new DomainError(
    'NOT_CONFIGURED',
    `secrets are unavailable: this control plane has no encryption key. Its operator must set ${SECRET_KEY_SETTING} (32 random bytes as base64 or hex, e.g. \`openssl rand -base64 32\`) and restart it`,
    { setting: SECRET_KEY_SETTING },
  );
}
