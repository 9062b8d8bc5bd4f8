/**
 * The meter of one JMESPath evaluation: counts steps and estimated bytes against a QueryBudget and
 * looks at the clock every few thousand steps. Whatever passes a limit throws LIMIT_EXCEEDED.
 */
import { OpError } from '../errors.ts';
import type { QueryBudget } from '../limits.ts';

/** Which budget an evaluation ran out of (`details.limit` of LIMIT_EXCEEDED). */
export type QueryLimit = 'time' | 'steps' | 'memory' | 'string_length';

// performance.now() costs tens of nanoseconds and a step a few: looking every 1,024 steps keeps the
// clock out of the profile while overshooting a deadline by well under a millisecond.
const CHECK_INTERVAL = 1_024;

/** Estimated heap bytes, for `Meter.alloc`. */
export const ARRAY_SLOT_BYTES = 8;
export const OBJECT_MEMBER_BYTES = 24;
export const VALUE_HEADER_BYTES = 16;

const ADVICE =
  "Narrow the query: filter early (e.g. `items[?status=='open']`), select only the fields you need, " +
  'and avoid nesting map() or projections over large arrays.';

/** The LIMIT_EXCEEDED error for `limit`, with a message telling the agent what to change. */
export function limitExceeded(limit: QueryLimit, budget: QueryBudget): OpError {
  switch (limit) {
    case 'time':
      return new OpError(
        'LIMIT_EXCEEDED',
        `The query ran past its ${budget.timeMs} ms time limit. ${ADVICE}`,
        {
          limit,
          max_ms: budget.timeMs,
        },
      );
    case 'steps':
      return new OpError(
        'LIMIT_EXCEEDED',
        `The query needed more than ${budget.maxSteps} evaluation steps. ${ADVICE}`,
        { limit, max_steps: budget.maxSteps },
      );
    case 'memory':
      return new OpError(
        'LIMIT_EXCEEDED',
        `The query built more than ${budget.maxBytes} bytes of intermediate values. ${ADVICE}`,
        { limit, max_bytes: budget.maxBytes },
      );
    case 'string_length':
      return new OpError(
        'LIMIT_EXCEEDED',
        `The query built a string longer than ${budget.maxStringLength} characters. Use smaller widths and ` +
          'counts in pad_left/pad_right/replace, and filter before join() or to_string().',
        { limit, max_length: budget.maxStringLength },
      );
  }
}

export class Meter {
  steps = 0;
  bytes = 0;
  readonly budget: QueryBudget;
  readonly #deadline: number;
  #nextCheck: number;

  constructor(budget: QueryBudget) {
    this.budget = budget;
    this.#deadline = performance.now() + budget.timeMs;
    this.#nextCheck = Math.min(CHECK_INTERVAL, budget.maxSteps + 1);
  }

  /** Charges `count` steps; every CHECK_INTERVAL steps also checks the step limit and the deadline. */
  step(count = 1): void {
    this.steps += count;
    if (this.steps >= this.#nextCheck) this.#check();
  }

  /** Charges `bytes` of a value about to be (or just) built, plus the steps building it takes. */
  alloc(bytes: number): void {
    this.bytes += bytes;
    if (this.bytes > this.budget.maxBytes) throw limitExceeded('memory', this.budget);
    this.step(1 + (bytes >>> 6));
  }

  /** Charges an array of `length` slots. */
  array(length: number): void {
    this.alloc(VALUE_HEADER_BYTES + length * ARRAY_SLOT_BYTES);
  }

  /** Charges a string of `length` units, refusing it when it is longer than the budget allows. */
  string(length: number): void {
    if (length > this.budget.maxStringLength) throw limitExceeded('string_length', this.budget);
    this.alloc(VALUE_HEADER_BYTES + length);
  }

  /**
   * Throws when a string of `length` units would not fit the budget, before it is built; charges
   * nothing (the string is charged once it exists).
   */
  reserveString(length: number): void {
    if (length > this.budget.maxStringLength) throw limitExceeded('string_length', this.budget);
    this.reserveBytes(VALUE_HEADER_BYTES + length);
  }

  /** Throws when `bytes` more would not fit the budget, before they are allocated; charges nothing. */
  reserveBytes(bytes: number): void {
    if (this.bytes + bytes > this.budget.maxBytes) throw limitExceeded('memory', this.budget);
  }

  /** Checks the clock now (after a single long operation), whatever the step count. */
  checkTime(): void {
    if (performance.now() > this.#deadline) throw limitExceeded('time', this.budget);
  }

  #check(): void {
    if (this.steps > this.budget.maxSteps) throw limitExceeded('steps', this.budget);
    this.checkTime();
    this.#nextCheck = Math.min(this.steps + CHECK_INTERVAL, this.budget.maxSteps + 1);
  }
}
