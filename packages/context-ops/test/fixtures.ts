// Shared test data and helpers: a small context in the shape Bindery contexts usually have, and a
// way to make it immutable so any accidental in-place write by the engine throws.
import { expect } from 'vitest';
import { OpError, type JsonValue } from '../src/index.ts';

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** A fresh, frozen copy of a CRM-like context: an object holding arrays and nested objects. */
export function crm(): { [k: string]: JsonValue } {
  return deepFreeze({
    customers: [
      { id: 1, name: 'Ada', email: 'ada@example.com', tags: ['vip'] },
      { id: 2, name: 'Grace', email: 'grace@example.com', tags: [] },
      { id: 3, name: 'Linus', email: 'linus@example.com', tags: ['new', 'trial'] },
    ],
    settings: { currency: 'EUR', 'a/b': 1, 'm~n': 2 },
    count: 3,
  });
}

/** Runs `fn`, expects it to throw an OpError, and returns that error for further assertions. */
export function opError(fn: () => unknown): OpError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(OpError);
  return caught as OpError;
}
