/**
 * The size limits every operation runs under (DESIGN.md §5 "Limits with clear errors").
 */

export interface Limits {
  /** Longest JMESPath expression `query` accepts, in characters. */
  maxQueryLength: number;
  /** Largest read result, in UTF-8 bytes of its JSON text. */
  maxResultBytes: number;
  /** Deepest nesting of containers a `value` argument may have. */
  maxDepth: number;
}

export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxQueryLength: 2_000,
  maxResultBytes: 1_000_000,
  maxDepth: 64,
});
