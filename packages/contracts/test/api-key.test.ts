// Pins the shape of an issued api_key that gateways check before any lookup: `bnd_key_` and 32
// base64url characters, nothing else (no other prefix, length, character or surrounding text).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_KEY_PREFIX, API_KEY_RANDOM_BYTES, isWellFormedApiKey } from '../src/index.ts';

describe('isWellFormedApiKey', () => {
  it('accepts keys built the way the control plane builds them', () => {
    for (let i = 0; i < 200; i++) {
      const key = `${API_KEY_PREFIX}${randomBytes(API_KEY_RANDOM_BYTES).toString('base64url')}`;
      expect(isWellFormedApiKey(key), key).toBe(true);
    }
    expect(isWellFormedApiKey(`bnd_key_${'-_'.repeat(16)}`)).toBe(true);
  });

  it('refuses anything else', () => {
    const body = 'A'.repeat(32);
    for (const key of [
      '',
      'bnd_key_',
      `bnd_key_${'A'.repeat(31)}`,
      `bnd_key_${'A'.repeat(33)}`,
      `bnd_admin_${body}`,
      `BND_KEY_${body}`,
      `bnd_key_${'A'.repeat(31)}=`,
      `bnd_key_${'A'.repeat(31)}+`,
      `bnd_key_${'A'.repeat(31)}\u0000`,
      ` bnd_key_${body}`,
      `bnd_key_${body}\n`,
      `bnd_key_${'a'.repeat(24)}`,
    ]) {
      expect(isWellFormedApiKey(key), JSON.stringify(key)).toBe(false);
    }
  });
});
