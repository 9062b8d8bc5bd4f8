// Pins the shape of an issued playground key that gateways check before any lookup: `bnd_pg_` and
// 32 base64url characters (as many random bytes as a personal key), nothing else; no api_key or
// personal key has it, and it has neither of theirs.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  PLAYGROUND_KEY_PREFIX,
  PLAYGROUND_KEY_RANDOM_BYTES,
  isWellFormedApiKey,
  isWellFormedPersonalKey,
  isWellFormedPlaygroundKey,
} from '../src/index.ts';

describe('isWellFormedPlaygroundKey', () => {
  it('accepts keys built the way the control plane builds them, which are no other kind of key', () => {
    for (let i = 0; i < 200; i++) {
      const key = `${PLAYGROUND_KEY_PREFIX}${randomBytes(PLAYGROUND_KEY_RANDOM_BYTES).toString('base64url')}`;
      expect(isWellFormedPlaygroundKey(key), key).toBe(true);
      expect(isWellFormedApiKey(key) || isWellFormedPersonalKey(key), key).toBe(false);
    }
  });

  it('refuses anything else', () => {
    const body = 'A'.repeat(32);
    for (const key of [
      '',
      'bnd_pg_',
      `bnd_pg_${'A'.repeat(31)}`,
      `bnd_pg_${'A'.repeat(33)}`,
      `bnd_key_${body}`,
      `bnd_pk_${body}`,
      `BND_PG_${body}`,
      `bnd_pg_${'A'.repeat(31)}=`,
      ` bnd_pg_${body}`,
      `bnd_pg_${body}\n`,
    ]) {
      expect(isWellFormedPlaygroundKey(key), JSON.stringify(key)).toBe(false);
    }
  });
});
