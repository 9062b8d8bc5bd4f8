/**
 * Default tool names (DESIGN.md §6). The name `{prefix}_{short_hash}` (the operation of a context
 * ADI, the kind otherwise) is stable across renames and moves and reveals nothing about tables or
 * paths; the readable part goes into the description instead.
 */
import { createHash } from 'node:crypto';

const RFC4648 = 'abcdefghijklmnopqrstuvwxyz234567';

/** First 6 characters of lower-case RFC 4648 base32 of sha256(adiId). */
export function shortHash(adiId: string): string {
  const digest = createHash('sha256').update(adiId).digest();
  // 6 base32 characters need 30 bits: the first 4 bytes are enough.
  const bits = digest.readUInt32BE(0);
  let out = '';
  for (let i = 0; i < 6; i++) out += RFC4648[(bits >>> (27 - 5 * i)) & 31];
  return out;
}

/** `{prefix}_{short_hash}`: a context ADI's operation, or another kind's name, as the prefix. */
export function defaultToolName(prefix: string, adiId: string): string {
  return `${prefix}_${shortHash(adiId)}`;
}
