/** The DomainError a promise rejects with (the test fails if it resolves or rejects otherwise). */
import { expect } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';

export async function failure(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}
