/**
 * Default tool names and descriptions (DESIGN.md §6). The name `{op}_{short_hash}` is stable across
 * renames and moves and reveals nothing about tables or paths; the readable part goes into the
 * description instead.
 */
import { createHash } from 'node:crypto';
import type { OperationType } from '@bindery/contracts';
import { OPERATIONS } from '@bindery/context-ops';

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

export function defaultToolName(op: OperationType, adiId: string): string {
  return `${op}_${shortHash(adiId)}`;
}

/** The description an agent sees when neither binding nor ADI sets one. */
export function defaultToolDescription(op: OperationType, tableName: string, jsonPath: string): string {
  const where = jsonPath === '' ? 'the whole table' : `"${jsonPath}"`;
  return `${OPERATIONS[op].summary} Context: ${where} of table "${tableName}" (operation: ${op}).`;
}
