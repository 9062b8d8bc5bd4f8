/**
 * Requests whose framing leaves it open which host and path they are for, refused by both services
 * before any route runs: RFC 9112 §3.2 has a server answer 400 to an HTTP/1.1 request without a
 * Host header or with more than one (Node keeps the first of two and drops the other, so a proxy
 * that reads the last one and the service would disagree about the host), and a request target
 * that is not a path. An absolute-form target (`POST http://other.example/api/... HTTP/1.1`) is
 * what clients send to a proxy, never to an origin; Node and the router accept it and route it by
 * its path, while the Host header, which the gateway's DNS-rebinding check reads, may name another
 * host. Asterisk-form (`OPTIONS *`) and authority-form (CONNECT) name no route at all.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorBody } from '@bindery/contracts';

/** Why a request's framing is refused (answered 400 `VALIDATION_FAILED`), or undefined. */
export function requestFramingProblem(req: IncomingMessage): string | undefined {
  const url = req.url ?? '';
  if (url.charCodeAt(0) !== 0x2f /* '/' */) {
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(url)
      ? 'the request target is an absolute URL: send the path only (origin-form), with the host in the Host header'
      : 'the request target is not a path: send one starting with "/"';
  }
  // rawHeaders alternates names and values; only a second Host costs more than this loop.
  const raw = req.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts += 1;
  }
  if (hosts > 1) return 'the request has more than one Host header: send exactly one';
  // HTTP/1.0 predates Host: such a request may come without one.
  if (hosts === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
    return 'the request has no Host header: HTTP/1.1 requires one';
  }
  return undefined;
}

/**
 * The path a request target names, for deciding which shape a refusal takes (an absolute-form
 * target's path is the one the router would have served).
 */
export function requestTargetPath(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  return scheme ? url.slice(scheme[0].length) || '/' : url;
}

/**
 * Answers CONNECT (an authority-form target, for tunnels through a proxy), which Node hands to a
 * `connect` listener instead of the request handler and, with none, closes without a word: 400
 * in the REST error body, then the connection is closed.
 */
export function refuseConnect(server: Server): void {
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    // Node takes its own error listener off a socket it hands over: a reset would throw.
    socket.on('error', () => socket.destroy());
    const body = JSON.stringify({
      error: {
        code: 'VALIDATION_FAILED',
        message: 'CONNECT is not served: this is not a proxy',
      },
    } satisfies ErrorBody);
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
