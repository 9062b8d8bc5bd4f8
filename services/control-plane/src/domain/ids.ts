/**
 * Ids, credentials and hashes. Credentials (admin tokens, api keys, personal MCP keys) are random,
 * shown once, and stored only as a SHA-256 hash plus a short display prefix.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  API_KEY_PREFIX,
  API_KEY_RANDOM_BYTES,
  DISPLAY_PREFIX_LENGTH,
  PERSONAL_KEY_PREFIX,
  PERSONAL_KEY_RANDOM_BYTES,
  PLAYGROUND_KEY_PREFIX,
  PLAYGROUND_KEY_RANDOM_BYTES,
} from '@bindery/contracts';
import { SIDEBAR_TOKEN_PREFIX } from '@bindery/contracts/entries';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += CROCKFORD[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * A new id `prefix_` + 10 time characters + 16 random ones: sortable by creation time (to the
 * millisecond), so lists can page by id.
 */
export function newId(prefix: string): string {
  return `${prefix}_${timeStamp(Date.now())}${base32(randomBytes(10))}`;
}

/** The 10 time characters of an id made at `time` (ms since the epoch). */
function timeStamp(time: number): string {
  let stamp = '';
  for (let i = 0; i < 10; i++) {
    stamp = CROCKFORD[time % 32] + stamp;
    time = Math.floor(time / 32);
  }
  return stamp;
}

/**
 * `count` new ids in ascending order: rows created in one go keep their given order in lists (ids
 * made in the same millisecond otherwise sort by their random part). One clock reading and one
 * draw of random bytes for all (the audit trail makes a batch per flush).
 */
export function newIds(prefix: string, count: number): string[] {
  const stamp = timeStamp(Date.now());
  const random = randomBytes(10 * count);
  return Array.from(
    { length: count },
    (_, i) => `${prefix}_${stamp}${base32(random.subarray(10 * i, 10 * i + 10))}`,
  ).sort();
}

export type CredentialKind = 'admin' | 'key' | 'personal' | 'playground' | 'sidebar';

/** Each kind's prefix and random bytes (api keys' and personal keys' as contracts state them). */
const CREDENTIAL_SHAPES: Record<CredentialKind, { prefix: string; randomBytes: number }> = {
  admin: { prefix: 'bnd_admin_', randomBytes: 24 },
  key: { prefix: API_KEY_PREFIX, randomBytes: API_KEY_RANDOM_BYTES },
  personal: { prefix: PERSONAL_KEY_PREFIX, randomBytes: PERSONAL_KEY_RANDOM_BYTES },
  playground: { prefix: PLAYGROUND_KEY_PREFIX, randomBytes: PLAYGROUND_KEY_RANDOM_BYTES },
  // A sidebar session's token: for its own session's routes only (sidebar/sessions.ts).
  sidebar: { prefix: SIDEBAR_TOKEN_PREFIX, randomBytes: 24 },
};

export interface Credential {
  /** The full secret: give it to the user once, never store it. */
  secret: string;
  hash: string;
  prefix: string;
}

/** SHA-256 (hex) of a credential: what the database stores and looks up by. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** The short, harmless start of a credential shown in lists so a user can tell keys apart. */
export function displayPrefix(secret: string): string {
  return secret.slice(0, DISPLAY_PREFIX_LENGTH);
}

/**
 * A new random credential: `bnd_admin_…` for admin tokens, `bnd_key_…` for exposure api keys,
 * `bnd_pk_…` for personal MCP keys and `bnd_pg_…` for playground keys (the last three in the
 * shapes gateways check before any lookup: `isWellFormedApiKey`, `isWellFormedPersonalKey` and
 * `isWellFormedPlaygroundKey` in contracts).
 */
export function newCredential(kind: CredentialKind): Credential {
  const shape = CREDENTIAL_SHAPES[kind];
  const secret = `${shape.prefix}${randomBytes(shape.randomBytes).toString('base64url')}`;
  return { secret, hash: hashSecret(secret), prefix: displayPrefix(secret) };
}

/** Describes an existing secret (such as a configured root token) the way newCredential does. */
export function credentialOf(secret: string): Credential {
  return { secret, hash: hashSecret(secret), prefix: displayPrefix(secret) };
}
