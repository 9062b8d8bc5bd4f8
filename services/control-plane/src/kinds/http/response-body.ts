/**
 * Reading an API's answer without trusting its size: the body is read chunk by chunk and reading
 * stops at the limit, so a huge or endless answer costs at most the limit in memory.
 */
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';

export interface BoundedBody {
  bytes: Buffer;
  /** True when the body went on past the limit (reading stopped there). */
  truncated: boolean;
}

/**
 * Up to `limit` bytes of `body`. Past the limit the stream is destroyed (the connection is not
 * reused) and `truncated` is set; `declaredLength` (Content-Length) above the limit ends it before
 * a byte is read.
 */
export async function readBounded(
  body: Readable,
  limit: number,
  declaredLength: number | undefined,
): Promise<BoundedBody> {
  if (declaredLength !== undefined && declaredLength > limit) {
    body.destroy();
    return { bytes: Buffer.alloc(0), truncated: true };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size + chunk.length > limit) {
      chunks.push(chunk.subarray(0, limit - size));
      size = limit;
      body.destroy();
      return { bytes: Buffer.concat(chunks, size), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { bytes: Buffer.concat(chunks, size), truncated: false };
}

/** The declared Content-Length, when there is one and it is a number. */
export function contentLength(headers: Record<string, string | string[] | undefined>): number | undefined {
  const value = headers['content-length'];
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** The media type of a Content-Type header, lower-cased, and its charset. */
export function mediaType(headers: Record<string, string | string[] | undefined>): {
  type: string;
  charset: string | undefined;
} {
  const value = headers['content-type'];
  const text = (Array.isArray(value) ? value[0] : value) ?? '';
  const [type = '', ...parameters] = text.split(';');
  const charset = parameters
    .map((p) => p.trim())
    .find((p) => p.toLowerCase().startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/^"|"$/g, '');
  return { type: type.trim().toLowerCase(), charset };
}

/** True for `application/json`, `application/problem+json`, `text/json` and the like. */
export function isJsonMediaType(type: string): boolean {
  return /^(?:application|text)\/(?:[\w.+-]+\+)?json$/.test(type);
}

/**
 * The body as text in its declared charset (UTF-8 when absent or unknown); undefined when it is
 * not text in that charset (an image, say).
 */
export function decodeText(bytes: Buffer, charset: string | undefined): string | undefined {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8', { fatal: true });
  } catch {
    decoder = new TextDecoder('utf-8', { fatal: true });
  }
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

/** A short UTF-8 rendering of possibly truncated bytes, for error messages. */
export function excerpt(bytes: Buffer): string {
  // A character cut by the limit becomes U+FFFD instead of failing.
  return new TextDecoder('utf-8').decode(bytes);
}
