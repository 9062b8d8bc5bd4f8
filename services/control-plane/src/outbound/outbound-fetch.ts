/**
 * One outgoing HTTP request on behalf of a user (an HTTP tool's call, a custom tool's fetch, an
 * OpenAPI document fetched by URL), bounded every way: through the SSRF-guarded dispatcher, at
 * most so many redirects (each hop guarded again), a deadline for the whole exchange and a cap on
 * the answer's size. Failures are DomainErrors with a code and a message naming the origin, never
 * the path or query (those may carry secrets).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { request, type Dispatcher } from 'undici';
import { DomainError } from '../domain/errors.ts';

export const OUTBOUND_DEFAULTS = {
  timeoutMs: 10_000,
  maxBodyBytes: 1024 * 1024,
  maxRedirects: 5,
} as const;

export interface OutboundRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Ends the request early (the caller gave up); the deadline applies as well. */
  signal?: AbortSignal;
  /**
   * Told each redirect's target before it is followed; throwing refuses it (a custom tool's
   * allowed_hosts, which the guard's address check knows nothing of).
   */
  beforeRedirect?(target: URL): void;
}

export interface OutboundLimits {
  /** Deadline of the whole exchange, redirects and reading the answer included (TIMEOUT). */
  timeoutMs: number;
  /** Largest answer body, in bytes (LIMIT_EXCEEDED). */
  maxBodyBytes: number;
  /** Redirects followed at most (UPSTREAM_FAILED beyond); 0 returns the first 3xx as it is. */
  maxRedirects: number;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Where the answer came from, after redirects. */
  url: string;
  redirects: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Headers that may follow a redirect to another origin. Anything else the caller set (an
 * Authorization, an api-key header filled from a secret) was meant for the first origin only.
 */
const PORTABLE_HEADERS = new Set(['accept', 'accept-language', 'user-agent', 'content-type']);

function checkScheme(url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DomainError(
      'VALIDATION_FAILED',
      `only http and https URLs can be fetched, not ${url.protocol}`,
      {
        scheme: url.protocol.slice(0, -1),
      },
    );
  }
}

/** Where a request is while it follows redirects: updated at every hop, read for messages. */
export interface RedirectTrail {
  url: URL;
  redirects: number;
}

/**
 * Sends a request through `dispatcher` and follows redirects (at most `maxRedirects`; 0 answers the
 * first 3xx as it is) the way every outgoing request of Bindery does: each hop through the same
 * dispatcher (so the guard checks each hop's address), only http(s) locations, 303 (and 301/302
 * after a POST) as a GET without body, and on a change of origin only the portable headers kept.
 * Answers the last response with its body unread; `trail` says where it came from. Throws
 * DomainError for too many redirects or a location that is not http(s); network failures as
 * undici raises them.
 */
export async function sendFollowingRedirects(
  dispatcher: Dispatcher,
  trail: RedirectTrail,
  init: Omit<OutboundRequest, 'signal'> & { signal: AbortSignal },
  maxRedirects: number,
): Promise<Dispatcher.ResponseData> {
  let method = (init.method ?? 'GET').toUpperCase();
  let headers: Record<string, string> = { ...init.headers };
  let body = init.body;
  for (;;) {
    const { url } = trail;
    const answer = await request(url, { dispatcher, method, headers, body, signal: init.signal });
    const location = answer.headers.location;
    if (!REDIRECTS.has(answer.statusCode) || typeof location !== 'string' || maxRedirects <= 0) return answer;
    await answer.body.dump();
    if (trail.redirects >= maxRedirects) {
      throw new DomainError(
        'UPSTREAM_FAILED',
        `${url.origin} redirected more than ${maxRedirects} times; not followed further`,
        { origin: url.origin, max_redirects: maxRedirects },
      );
    }
    const next = new URL(location, url);
    checkScheme(next);
    init.beforeRedirect?.(next);
    if (
      answer.statusCode === 303 ||
      ((answer.statusCode === 301 || answer.statusCode === 302) && method === 'POST')
    ) {
      // As browsers do: the redirect is fetched with GET, without the body.
      method = method === 'HEAD' ? 'HEAD' : 'GET';
      body = undefined;
      headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !/^content-/i.test(name)));
    }
    if (next.origin !== url.origin) {
      headers = Object.fromEntries(
        Object.entries(headers).filter(([name]) => PORTABLE_HEADERS.has(name.toLowerCase())),
      );
    }
    trail.url = next;
    trail.redirects++;
  }
}

/**
 * Sends the request through `dispatcher` (a guarded one: `createGuardedDispatcher`) and reads the
 * whole answer. Any status is an answer (a 404 is returned, not thrown); refusals and limits throw:
 * FORBIDDEN (the SSRF guard), TIMEOUT, LIMIT_EXCEEDED (size), UPSTREAM_FAILED (unreachable, too
 * many redirects), VALIDATION_FAILED (not an http(s) URL).
 */
export async function fetchGuarded(
  dispatcher: Dispatcher,
  target: string | URL,
  init: OutboundRequest = {},
  limits: Partial<OutboundLimits> = {},
): Promise<OutboundResponse> {
  const { timeoutMs, maxBodyBytes, maxRedirects } = { ...OUTBOUND_DEFAULTS, ...limits };
  let start: URL;
  try {
    start = new URL(target);
  } catch {
    throw new DomainError('VALIDATION_FAILED', 'not a valid URL');
  }
  checkScheme(start);
  const trail: RedirectTrail = { url: start, redirects: 0 };
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
  try {
    const answer = await sendFollowingRedirects(dispatcher, trail, { ...init, signal }, maxRedirects);
    const { url } = trail;
    const declared = Number(answer.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBodyBytes) {
      discard(answer.body);
      throw tooLarge(url, maxBodyBytes);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBodyBytes) {
        discard(answer.body);
        throw tooLarge(url, maxBodyBytes);
      }
      chunks.push(chunk);
    }
    return {
      status: answer.statusCode,
      headers: answer.headers,
      body: Buffer.concat(chunks),
      url: url.href,
      redirects: trail.redirects,
    };
  } catch (error) {
    const { url } = trail;
    if (error instanceof DomainError) throw error;
    if (deadline.aborted) {
      throw new DomainError('TIMEOUT', `${url.origin} did not answer within ${timeoutMs} ms`, {
        origin: url.origin,
        timeout_ms: timeoutMs,
      });
    }
    if (signal.aborted) {
      throw new DomainError('UPSTREAM_FAILED', `the request to ${url.origin} was cancelled`, {
        origin: url.origin,
      });
    }
    // Connection failures name their cause by code (ECONNREFUSED, ENOTFOUND, ...); their messages
    // may quote more of the request than its origin.
    const code = (error as { code?: unknown }).code;
    throw new DomainError(
      'UPSTREAM_FAILED',
      `could not reach ${url.origin}${typeof code === 'string' ? ` (${code})` : ''}`,
      { origin: url.origin, ...(typeof code === 'string' && { cause: code }) },
    );
  }
}

/** Stops reading an answer; the abort this raises on the stream is expected, not a failure. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

function tooLarge(url: URL, maxBodyBytes: number): DomainError {
  return new DomainError(
    'LIMIT_EXCEEDED',
    `the answer of ${url.origin} is larger than ${maxBodyBytes} bytes`,
    { origin: url.origin, limit: 'response_bytes', max_bytes: maxBodyBytes },
  );
}
