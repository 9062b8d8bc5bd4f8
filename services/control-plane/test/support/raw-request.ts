/**
 * One HTTP request through node:http, sent exactly as given (any method with any body, any
 * Content-Type or none, a path already percent-encoded or an absolute URL, headers as a list
 * that may repeat a name, no Host at all), with a deadline: the answer, or `timedOut` when none
 * came in time.
 */
import { request } from 'node:http';

export interface RawRequest {
  method: string;
  path: string;
  /** A list alternates names and values (as `rawHeaders`), and may name one twice. */
  headers?: Record<string, string> | string[];
  /** False: no Host header unless `headers` has one (node:http adds one otherwise). */
  setHost?: boolean;
  body?: string;
  timeoutMs?: number;
  /**
   * An answer of type text/event-stream (a stream, which never ends by itself) is read this long,
   * then the connection is closed; `streamed` says so. Without it, such an answer times out.
   */
  streamForMs?: number;
}

export interface RawResponse {
  status: number;
  text: string;
  timedOut: boolean;
  /** The answer was a stream, read for `streamForMs` and then closed by the client. */
  streamed?: boolean;
}

export function rawRequest(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.path,
        headers: Array.isArray(req.headers)
          ? [
              ...(req.body !== undefined ? ['content-length', String(Buffer.byteLength(req.body))] : []),
              ...req.headers,
            ]
          : {
              ...(req.body !== undefined && { 'content-length': String(Buffer.byteLength(req.body)) }),
              ...req.headers,
            },
        ...(req.setHost === false && { setHost: false }),
        timeout: req.timeoutMs ?? 5_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const streaming = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        if (streaming && req.streamForMs !== undefined) {
          setTimeout(() => {
            outgoing.destroy();
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, text, timedOut: false, streamed: true });
          }, req.streamForMs);
          return;
        }
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            timedOut: false,
          }),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('timeout', () => {
      outgoing.destroy();
      resolve({ status: 0, text: '', timedOut: true });
    });
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}
