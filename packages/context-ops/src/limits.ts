/**
 * The size limits every operation runs under (DESIGN.md §5 "Limits with clear errors").
 */
import { MAX_JSON_DEPTH } from '@bindery/contracts';

export interface Limits {
  /** Longest JMESPath expression `query` accepts, in characters. */
  maxQueryLength: number;
  /** Largest read result, in UTF-8 bytes of its JSON text. */
  maxResultBytes: number;
  /** Deepest nesting of containers a `value` argument may have (the wire limit, MAX_JSON_DEPTH). */
  maxDepth: number;
}

export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxQueryLength: 2_000,
  maxResultBytes: 1_000_000,
  maxDepth: MAX_JSON_DEPTH,
});
