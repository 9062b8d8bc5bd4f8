/**
 * How the OAuth broker keeps what must stay secret (tokens, registered clients, a flow's PKCE
 * verifier): JSON sealed with the secrets' keyring, the person and what it is bound into the tag,
 * so a sealed value copied onto another row does not open there. One column holds nonce, tag and
 * ciphertext (the rows have nothing else secret to keep apart).
 */
import { createHash } from 'node:crypto';
import type { SecretOwner, SecretSealer } from '../../../domain/context.ts';

/** AES-GCM's 96-bit nonce and 128-bit tag, ahead of the ciphertext. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SealedColumns {
  sealed: Uint8Array;
  secretKeyId: string;
}

export function sealJson(keyring: SecretSealer, owner: SecretOwner, value: unknown) {
  const sealed = keyring.seal(JSON.stringify(value), owner);
  return {
    sealed: Buffer.concat([sealed.iv, sealed.authTag, sealed.ciphertext]),
    secretKeyId: sealed.keyId,
  };
}

export function openJson<T>(keyring: SecretSealer, owner: SecretOwner, row: SealedColumns): T {
  const bytes = Buffer.from(row.sealed);
  const text = keyring.open(
    {
      iv: new Uint8Array(bytes.subarray(0, IV_BYTES)),
      authTag: new Uint8Array(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES)),
      ciphertext: new Uint8Array(bytes.subarray(IV_BYTES + TAG_BYTES)),
      keyId: row.secretKeyId,
    },
    owner,
  );
  return JSON.parse(text) as T;
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What each sealed value is bound to. */
export const owners = {
  tokens: (serverId: string, userId: string): SecretOwner => ({ userId, name: `upstream-oauth:${serverId}` }),
  client: (serverId: string, userId: string, issuer: string): SecretOwner => ({
    userId,
    name: `upstream-oauth-client:${serverId}:${issuer}`,
  }),
  flow: (userId: string, stateHash: string): SecretOwner => ({
    userId,
    name: `upstream-oauth-flow:${stateHash}`,
  }),
};
