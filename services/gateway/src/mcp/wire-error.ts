/**
 * A JSON-RPC error a handler answers with, its message written once. The SDK's `McpError`
 * prefixes its message with `MCP error <code>: ` and both the SDK server and the direct answer
 * send `error.message` as the wire message; the client's `McpError` then prefixes it again
 * (`MCP error -32602: MCP error -32602: unknown tool`). The wire carries the bare message here, so
 * a client shows the prefix at most once, as it adds it itself.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';

export class WireError extends McpError {
  constructor(code: number, message: string, data?: unknown) {
    super(code, message, data);
    this.message = message;
  }
}
