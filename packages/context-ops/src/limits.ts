/**
 * The size limits every operation runs under (DESIGN.md §5 "Limits with clear errors"), and the
 * budget one JMESPath evaluation runs under.
 */
// The subpath, not the package's index: a worker thread's bundle (query-worker.ts) then takes no
// typebox (docs/decisions/028-workers-load-one-bundled-module.md).
import { MAX_JSON_DEPTH } from '@bindery/contracts/json-depth';

/**
 * What one JMESPath evaluation may spend. Passing any of these stops the evaluation with
 * LIMIT_EXCEEDED (`details.limit` names which), so no query can hold a thread or its memory.
 */
export interface QueryBudget {
  /** Wall time of the evaluation, in milliseconds. */
  timeMs: number;
  /**
   * Interpreter steps: one per expression node visited, plus one per item (or 64 bytes) a function
   * or operator walks through or builds. Deterministic, unlike time.
   */
  maxSteps: number;
  /**
   * Estimated bytes of every value the evaluation builds, intermediate and discarded ones included
   * (1 per string character, 8 per array slot, 24 per object member).
   */
  maxBytes: number;
  /** Longest string the evaluation may build, in UTF-16 code units. */
  maxStringLength: number;
}

export interface Limits {
  /** Longest JMESPath expression `query` accepts, in characters. */
  maxQueryLength: number;
  /** Largest read result, in UTF-8 bytes of its JSON text. */
  maxResultBytes: number;
  /** Deepest nesting of containers a `value` argument may have (the wire limit, MAX_JSON_DEPTH). */
  maxDepth: number;
  /** The budget of one `query` evaluation. */
  query: QueryBudget;
}

/** One second, and sizes far above any sensible query on a context of a few megabytes. */
export const DEFAULT_QUERY_BUDGET: QueryBudget = Object.freeze({
  timeMs: 1_000,
  maxSteps: 100_000_000,
  maxBytes: 64 * 1024 * 1024,
  maxStringLength: 16 * 1024 * 1024,
});

export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxQueryLength: 2_000,
  maxResultBytes: 1_000_000,
  maxDepth: MAX_JSON_DEPTH,
  query: DEFAULT_QUERY_BUDGET,
});
