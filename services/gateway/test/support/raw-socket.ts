/**
 * A request written byte for byte on a TCP socket to a loopback port, for what no HTTP client
 * sends: two Host headers, none, an absolute URL or `*` as the request target, CONNECT. The answer
 * is read until it is whole (or the connection closes); a chunked body is decoded. `undefined`
 * status: the server closed without answering.
 */
import { connect } from 'node:net';

export interface SocketAnswer {
  /** Undefined when the connection closed without an answer. */
  status: number | undefined;
  /** Header names in lower case; a repeated one keeps its last value. */
  headers: Record<string, string>;
  text: string;
  /** The answer is an event stream that had not ended when `streamForMs` was up. */
  streamed?: boolean;
}

export interface SocketRequestOptions {
  timeoutMs?: number;
  /**
   * An answer that is an event stream (which may never end: an MCP session's GET stream) is read
   * this long, then the connection is closed, `streamed` set. Without it, such an answer times out.
   */
  streamForMs?: number;
}

function dechunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol === -1) return out;
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/**
 * The answer in `raw` once it is whole (by its Content-Length or its last chunk; an answer to HEAD
 * at the end of its headers), else undefined.
 */
function parse(raw: string, closed: boolean, head: boolean): SocketAnswer | undefined {
  const split = raw.indexOf('\r\n\r\n');
  if (split === -1) return closed ? { status: undefined, headers: {}, text: raw } : undefined;
  const [statusLine = '', ...lines] = raw.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = raw.slice(split + 4);
  const chunked = headers['transfer-encoding'] === 'chunked';
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  const whole =
    head ||
    (chunked ? body.endsWith('0\r\n\r\n') : length !== undefined && Buffer.byteLength(body) >= length);
  if (!whole && !closed) return undefined;
  return {
    status: Number(/^HTTP\/1\.\d (\d{3})/.exec(statusLine)?.[1]) || undefined,
    headers,
    text: chunked ? dechunk(body) : body,
  };
}

/**
 * Writes `request` (a whole HTTP request, `\r\n` line ends) to `baseUrl`'s port and reads the
 * answer: until it is whole, or the server closes the connection.
 */
export function socketRequest(
  baseUrl: string,
  request: string,
  options: SocketRequestOptions = {},
): Promise<SocketAnswer> {
  const { timeoutMs = 10_000, streamForMs } = options;
  const head = request.startsWith('HEAD ');
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname.replace(/^\[|\]$/g, ''), () => socket.write(request));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no whole answer within ${timeoutMs} ms`));
    }, timeoutMs);
    let streamTimer: NodeJS.Timeout | undefined;
    const done = (answer: SocketAnswer) => {
      clearTimeout(timer);
      clearTimeout(streamTimer);
      socket.destroy();
      resolve(answer);
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const raw = Buffer.concat(chunks).toString('utf8');
      const answer = parse(raw, false, head);
      if (answer) return done(answer);
      if (streamForMs === undefined || streamTimer !== undefined) return;
      const headers = raw.slice(0, raw.indexOf('\r\n\r\n') + 1).toLowerCase();
      if (headers !== '' && /\r\ncontent-type: *text\/event-stream/.test(headers)) {
        streamTimer = setTimeout(() => {
          const partial = parse(Buffer.concat(chunks).toString('utf8'), true, head)!;
          done({ ...partial, streamed: true });
        }, streamForMs);
      }
    });
    // A reset after the answer (the server closing first) still leaves the answer read.
    socket.on('error', () => undefined);
    // After `done`, a second resolve changes nothing.
    socket.on('close', () => done(parse(Buffer.concat(chunks).toString('utf8'), true, head)!));
  });
}

/** An HTTP/1.1 request's text: `head` lines as given (no Host unless listed), then the body. */
export function requestText(requestLine: string, head: readonly string[], body = ''): string {
  const lines = [requestLine, ...head, 'Connection: close'];
  if (body !== '') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}
