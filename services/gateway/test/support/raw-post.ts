/**
 * A POST through node:http, which (unlike fetch) sends Host, Origin and framing exactly as given:
 * `chunked` sends the body without a content-length, `beforeBody` runs after the headers are sent
 * and before the body is, `from` is the loopback address to send from (127.0.0.1 by default), so
 * one test can play several clients.
 */
import { request, type IncomingHttpHeaders } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface RawPostOptions {
  headers?: Record<string, string>;
  chunked?: boolean;
  beforeBody?: () => Promise<void>;
  from?: string;
}

export function rawPost(
  baseUrl: string,
  path: string,
  body: string,
  options: RawPostOptions = {},
): Promise<RawAnswer> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        ...(options.from && { localAddress: options.from }),
        method: 'POST',
        path,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(!options.chunked && { 'content-length': String(Buffer.byteLength(body)) }),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    if (options.beforeBody) {
      req.flushHeaders();
      options.beforeBody().then(() => req.end(body), reject);
      return;
    }
    if (options.chunked) req.write(body.slice(0, 5));
    req.end(options.chunked ? body.slice(5) : body);
  });
}
