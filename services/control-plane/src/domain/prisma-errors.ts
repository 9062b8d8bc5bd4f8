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
 * puts the SQLSTATE in `meta.code` for raw statements, or in the driver adapter's error it wraps;
 * a statement run without Prisma (pg, PGlite) fails with it in `code`.
 */
export function refusedForData(error: unknown): boolean {
  const failed = error as {
    code?: unknown;
    meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown } } };
  } | null;
  const meta = failed?.meta;
  const state = meta?.code ?? meta?.driverAdapterError?.cause?.originalCode ?? failed?.code;
  return typeof state === 'string' && /^2[23]/.test(state);
}
