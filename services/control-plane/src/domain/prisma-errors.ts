/**
 * Recognising the database errors the domain turns into user-facing ones.
 */

/** True for a unique-constraint violation (Prisma P2002), optionally on a given field. */
export function uniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}
