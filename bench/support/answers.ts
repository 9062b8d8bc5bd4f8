/**
 * Checks of what a measured call answered, so a benchmark never times refusals: a tool the
 * gateway does not know yet answers a JSON-RPC error with HTTP 200 just as fast as a real call,
 * and a tool error (`isError`) is an answer too. Every measured path checks its answer with these.
 */

/** One JSON-RPC answer from a body that is plain JSON or an event stream (`data:` lines). */
function jsonRpcAnswer(text: string): Record<string, unknown> {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Record<string, unknown>;
  // An event stream: notifications (log lines) first, the answer (with an `id`) last.
  for (const line of text.split('\n').reverse()) {
    if (!line.startsWith('data:')) continue;
    const message = JSON.parse(line.slice(5)) as Record<string, unknown>;
    if ('id' in message) return message;
  }
  throw new Error(`no JSON-RPC answer in: ${text.slice(0, 300)}`);
}

/**
 * The result of a `tools/call` answered over MCP (the gateway or a plain MCP server); throws,
 * quoting the answer, unless it is a result that is not a tool error.
 */
export function toolCallResult(text: string, label: string): Record<string, unknown> {
  const answer = jsonRpcAnswer(text);
  const result = answer.result as Record<string, unknown> | undefined;
  if (result === undefined || result.isError === true) {
    throw new Error(`${label}: not a tool result: ${text.slice(0, 300)}`);
  }
  return result;
}

/** The same for the executor's own answer (a tool result, no JSON-RPC envelope). */
export function executorResult(text: string, label: string): Record<string, unknown> {
  const result = JSON.parse(text) as Record<string, unknown>;
  if (result.isError === true || !Array.isArray(result.content)) {
    throw new Error(`${label}: not a tool result: ${text.slice(0, 300)}`);
  }
  return result;
}
