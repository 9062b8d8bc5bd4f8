/**
 * Cursors of paginated MCP lists: base64url of the offset of the page's first item, in canonical
 * form. Decoding is strict: only what `encodeCursor` produces is accepted, so a cursor the client
 * made up, mangled or kept from a list that has since shrunk is -32602, never a silent first page.
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from './wire-error.ts';

/** The cursor of the page starting at `offset`. */
export function encodeCursor(offset: number): string {
  return Buffer.from(String(offset)).toString('base64url');
}

const SHAPE = /^[A-Za-z0-9_-]{1,24}$/;
const CANONICAL_INTEGER = /^(?:0|[1-9][0-9]{0,14})$/;

/**
 * The offset a cursor names (0 without one), or McpError -32602 when it is not a cursor this
 * gateway produced for a list of `length` items.
 */
export function decodeCursor(cursor: string | undefined, length: number): number {
  if (cursor === undefined) return 0;
  const text = SHAPE.test(cursor) ? Buffer.from(cursor, 'base64url').toString('latin1') : '';
  if (!CANONICAL_INTEGER.test(text) || encodeCursor(Number(text)) !== cursor) {
    throw new WireError(
      ErrorCode.InvalidParams,
      `invalid cursor ${JSON.stringify(cursor.slice(0, 64))}: pass the nextCursor of an earlier page unchanged`,
    );
  }
  const offset = Number(text);
  if (offset > 0 && offset >= length) {
    throw new WireError(
      ErrorCode.InvalidParams,
      'the cursor points past the end of the list (it changed since that page): list again without a cursor',
    );
  }
  return offset;
}
