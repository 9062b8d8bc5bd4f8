/**
 * Error codes shared by every Bindery surface (REST bodies, MCP `isError` results), DESIGN.md §8.
 */
import { Type, type Static } from 'typebox';

export const ERROR_CODES = [
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'VALIDATION_FAILED',
  'INVALID_QUERY',
  'RESULT_TOO_LARGE',
  'PAYLOAD_TOO_LARGE',
  'PRECONDITION_FAILED',
  'RATE_LIMITED',
  'SESSION_NOT_INITIALIZED',
  'UPSTREAM_FAILED',
  'UPSTREAM_AUTH_REQUIRED',
  'TIMEOUT',
  'LIMIT_EXCEEDED',
  'OUTCOME_UNKNOWN',
  'NOT_CONFIGURED',
  'RULE_VIOLATED',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** HTTP status for each code; exhaustive so a new code cannot ship without one. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  VALIDATION_FAILED: 400,
  INVALID_QUERY: 400,
  RESULT_TOO_LARGE: 422,
  PAYLOAD_TOO_LARGE: 413,
  PRECONDITION_FAILED: 412,
  RATE_LIMITED: 429,
  SESSION_NOT_INITIALIZED: 400,
  UPSTREAM_FAILED: 502,
  // An upstream server requires OAuth and the person whose tools these are has not connected their
  // account to it (or it asks for a scope they have not granted): they must connect it in the
  // console (`details.connect_url`); the caller cannot fix it by retrying.
  UPSTREAM_AUTH_REQUIRED: 403,
  TIMEOUT: 504,
  // A computation on the caller's input (a query, say) passed its time, step or memory budget:
  // retrying the same input fails the same way, so it is not a 5xx.
  LIMIT_EXCEEDED: 422,
  // A write was sent but its answer never came (timeout, connection lost): it may have been
  // applied. Never "try again" without checking, or without the same idempotency key.
  OUTCOME_UNKNOWN: 504,
  // The server lacks a setting the request needs (BINDERY_SECRET_KEY for secrets): the operator can
  // fix it, the caller cannot; the message names the setting.
  NOT_CONFIGURED: 503,
  // A write would break one of its table's rules (protected paths, schema, change cap, person-only
  // paths): nothing was written; `details.rule` names the rule.
  RULE_VIOLATED: 422,
  INTERNAL: 500,
};

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.Enum(ERROR_CODES),
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      request_id: Type.Optional(Type.String()),
    }),
  },
  { description: 'The one error body of every REST answer.' },
);
export type ErrorBody = Static<typeof ErrorBody>;
