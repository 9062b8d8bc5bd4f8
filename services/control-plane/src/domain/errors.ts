/**
 * The one domain error: a DESIGN.md §8 code, a message for the user and optional details. Domain
 * services throw it; the HTTP error handler turns it into the REST error body with the right status.
 */
import type { ErrorCode } from '@bindery/contracts';
import { OpError } from '@bindery/context-ops';

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const notFound = (what: string, id: string) =>
  new DomainError('NOT_FOUND', `${what} ${id} not found`, { id });

/** Runs `fn`, turning the operation engine's OpError into a DomainError with the same code. */
export function fromOpError<T>(fn: () => T, field?: string): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof OpError) {
      const details = { ...(error.details ?? {}), ...(field ? { field } : {}) };
      throw new DomainError(error.code, field ? `${field}: ${error.message}` : error.message, details);
    }
    throw error;
  }
}
