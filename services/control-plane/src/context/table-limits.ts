/**
 * How large a table's data may be (TABLE_MAX_BYTES) and how much one tool write may store
 * (TABLE_WRITE_MAX_BYTES), and the errors past them. Sizes are UTF-8 bytes of compact JSON; a
 * table's size is kept in its row by every write (`table.bytes`), so no write reads or serialises
 * the whole table to check it. Writes that do not grow a table always pass, so a table over a
 * lowered cap can still be shrunk.
 */
import { CONTROL_PLANE_SETTINGS } from '@bindery/service-kit/settings';
import { DomainError } from '../domain/errors.ts';
import type { TableLimits } from '../domain/context.ts';

export type { TableLimits };

/** The settings' defaults (apps and tests that set nothing get these). */
export const DEFAULT_TABLE_LIMITS: Readonly<TableLimits> = {
  maxBytes: CONTROL_PLANE_SETTINGS.settings.TABLE_MAX_BYTES.fallback({}),
  maxWriteBytes: CONTROL_PLANE_SETTINGS.settings.TABLE_WRITE_MAX_BYTES.fallback({}),
};

/**
 * PAYLOAD_TOO_LARGE when data of `bytes` would make a table (new, replaced, or grown by a write)
 * larger than the cap; `grows` is false for a write that does not add to its size.
 */
export function checkTableBytes(
  limits: TableLimits,
  bytes: number,
  where: { tableId?: string; grows?: boolean } = {},
): void {
  if (bytes <= limits.maxBytes || where.grows === false) return;
  const table = where.tableId === undefined ? 'the table' : `table ${where.tableId}`;
  throw new DomainError(
    'PAYLOAD_TOO_LARGE',
    `${table} would hold ${bytes} bytes of JSON, more than the ${limits.maxBytes} a table may hold (TABLE_MAX_BYTES); remove some of its data first`,
    {
      limit: 'table_bytes',
      limit_bytes: limits.maxBytes,
      bytes,
      ...(where.tableId !== undefined && { table_id: where.tableId }),
    },
  );
}

/** PAYLOAD_TOO_LARGE when one tool write would store `bytes` of changes, more than the cap. */
export function checkWriteBytes(limits: TableLimits, bytes: number, tableId: string): void {
  if (bytes <= limits.maxWriteBytes) return;
  throw new DomainError(
    'PAYLOAD_TOO_LARGE',
    `this write would store ${bytes} bytes of changes in table ${tableId}, more than the ${limits.maxWriteBytes} one write may (TABLE_WRITE_MAX_BYTES); split it into smaller writes`,
    { limit: 'write_bytes', limit_bytes: limits.maxWriteBytes, bytes, table_id: tableId },
  );
}
