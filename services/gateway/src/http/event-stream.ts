/**
 * Server-sent events as MCP's Streamable HTTP transport frames them: one JSON-RPC message an
 * event. Used wherever the gateway writes an event stream itself (direct answers, modern
 * requests, listen streams) rather than through the SDK's transport.
 */

/** The head of an event stream; proxies are told not to buffer it. */
export const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

/** One message event carrying `json` (a serialised JSON-RPC message). */
export function sseEvent(json: string): string {
  return `event: message\ndata: ${json}\n\n`;
}
