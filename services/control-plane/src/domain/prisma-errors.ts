/**
 * Recognising the database errors the domain turns into user-facing ones, or acts on.
 */

/** True for a unique-constraint violation (Prisma P2002), optionally on a given field. */
export function uniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}

/**
 * Whether the database refused a statement for the data of its rows (SQLSTATE class 22, data
 * exception, or 23, integrity constraint violation) rather than failing to run it at all. Prisma
 * puts the SQLSTATE in `meta.code` for raw statements, or in the driver adapter's error it wraps.
 */
export function refusedForData(error: unknown): boolean {
  const meta = (
    error as { meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown } } } }
  )?.meta;
  const state = meta?.code ?? meta?.driverAdapterError?.cause?.originalCode;
  return typeof state === 'string' && /^2[23]/.test(state);
}
