/**
 * Which header names a tool may set on an outgoing request (an HTTP tool's headers, a custom
 * tool's fetch), and which values it may send. Framing and connection
 * headers belong to the HTTP client: a tool setting them could desynchronise the connection or
 * address another virtual host than its URL names.
 */

// RFC 9110 §5.6.2 `token`.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const RESERVED = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
]);

/** Why `name` cannot be a header an HTTP tool sets, or undefined when it can. */
export function headerNameProblem(name: string): string | undefined {
  if (!TOKEN.test(name)) return `"${name}" is not a valid header name`;
  if (RESERVED.has(name.toLowerCase()))
    return `the header "${name}" is set by the HTTP client, not by a tool`;
  return undefined;
}

/** True when `value` can be sent as a header value (no line breaks or NUL, which would split it). */
export function isSendableHeaderValue(value: string): boolean {
  return !/[\r\n\0]/.test(value);
}
