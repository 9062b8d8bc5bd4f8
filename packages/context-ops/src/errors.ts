/**
 * The one error the engine throws. It carries a DESIGN.md §8 code so the control plane can map it to
 * an HTTP status or an MCP `isError` result without parsing messages.
 */
import type { ErrorCode } from '@bindery/contracts';

/** A failed operation: `code` from DESIGN.md §8, a message an agent can act on, JSON-safe `details`. */
export class OpError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'OpError';
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}
