/**
 * The one builder of tool failures (DESIGN.md section 8): an MCP `CallToolResult` with
 * `isError: true` whose one text content is `{"error": {code, message, details?}}`, the body
 * every entry (MCP, REST, the progressive catalog) and the executor answer a failed call with.
 */
import type { ToolError } from './internal-api.ts';

/**
 * What a failure says: the `error` of ToolError (its code, a message for the agent), whose details
 * may also be given as undefined, as domain errors carry them.
 */
export type ToolFailure = Omit<ToolError['error'], 'details'> & {
  details?: ToolError['error']['details'] | undefined;
};

/** A tool failure as an MCP result: `isError` and the error body as JSON text (no details when there are none). */
export function toolError(failure: ToolFailure): {
  content: [{ type: 'text'; text: string }];
  isError: true;
} {
  const body: ToolError = {
    error: {
      code: failure.code,
      message: failure.message,
      ...(failure.details && { details: failure.details }),
    },
  };
  return { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true };
}
