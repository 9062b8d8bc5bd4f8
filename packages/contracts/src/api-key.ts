/**
 * The shape of every api_key the control plane issues, AEIs and legacy v1 instances alike:
 * `bnd_key_` and 24 random bytes in base64url (32 characters). Gateways refuse a key of any other
 * shape as unknown without asking the control plane, so the two must agree: the control plane
 * builds its keys from these constants.
 */

export const API_KEY_PREFIX = 'bnd_key_';

/** Random bytes behind the prefix; base64url turns 24 bytes into 32 characters without padding. */
export const API_KEY_RANDOM_BYTES = 24;

const API_KEY_RE = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{${(API_KEY_RANDOM_BYTES / 3) * 4}}$`);

/** True when `key` has the shape of an issued api_key (it may still name no exposure). */
export function isWellFormedApiKey(key: string): boolean {
  return API_KEY_RE.test(key);
}
