/**
 * One call of an HTTP tool: build the request, send it through the dispatcher the caller gives
 * (the SSRF guard in production), read the answer within the tool's time and size bounds, and turn
 * it into a JSON value (after `result_path`), text, or a DomainError with a DESIGN.md §8 code.
 *
 * Redirects are followed (at most `maxRedirects`, 5 by default) by the same loop as every outgoing
 * request (`sendFollowingRedirects`): each hop through the dispatcher, so the SSRF guard checks
 * each hop's address, and on a change of origin only headers that never carry credentials go
 * along (a secret header meant for the API never reaches the host it redirects to). A 3xx left
 * over (no `location`, or `maxRedirects` 0) is an UPSTREAM_FAILED error naming the status and
 * `location`.
 *
 * Every message and detail that leaves here goes through `redact`, so a secret echoed by the API
 * (or carried by a URL in a network error) never reaches the caller.
 */
import {
  HTTP_TOOL_LIMITS,
  MAX_JSON_DEPTH,
  jsonNestsDeeperThan,
  type HttpToolConfig,
} from '@bindery/contracts';
import {
  DEFAULT_LIMITS,
  DEFAULT_QUERY_BUDGET,
  OpError,
  executeRead,
  type JsonValue,
  type Limits,
} from '@bindery/context-ops';
import type { Dispatcher } from 'undici';
import { DomainError } from '../../domain/errors.ts';
import { sendFollowingRedirects } from '../../outbound/outbound-fetch.ts';
import { outgoingRequest, type ResolveSecrets } from './outgoing-request.ts';
import {
  contentLength,
  decodeText,
  excerpt,
  isJsonMediaType,
  mediaType,
  readBounded,
} from './response-body.ts';
import { urlTemplateOf } from './url-template.ts';

export interface HttpCallLimits {
  /** Ceiling over a tool's `timeout_ms` (the operator's bound). */
  maxTimeoutMs: number;
  /** Ceiling over a tool's `max_response_bytes`. */
  maxResponseBytes: number;
  /** How much of a failed answer's body the error carries. */
  errorExcerptBytes: number;
  /** The bounds `result_path` is evaluated within (context-ops query limits). */
  resultPath: Limits;
  /** Redirects followed at most (0: a 3xx is answered as an error naming its location). */
  maxRedirects: number;
}

export const DEFAULT_HTTP_CALL_LIMITS: HttpCallLimits = Object.freeze({
  maxTimeoutMs: HTTP_TOOL_LIMITS.maxTimeoutMs,
  maxResponseBytes: HTTP_TOOL_LIMITS.maxResponseBytes,
  errorExcerptBytes: 1024,
  // result_path runs on the request's thread: a quarter second is far above what a path over an
  // answer of a few megabytes needs, and keeps a hostile one from holding the thread.
  resultPath: { ...DEFAULT_LIMITS, query: { ...DEFAULT_QUERY_BUDGET, timeMs: 250 } },
  maxRedirects: 5,
});

export interface HttpCallDeps {
  /** Every connection goes through it (the SSRF guard in production). */
  dispatcher: Dispatcher;
  /** Replaces `{{secret.NAME}}` in a config value; throws its own error for an unknown secret. */
  resolveSecrets: ResolveSecrets;
  /** Removes secret values from a text bound for a caller (messages, excerpts). */
  redact: (text: string) => string;
  limits?: Partial<HttpCallLimits>;
  /**
   * Sent as the `Idempotency-Key` header (unless the tool's config sets one), so an API that
   * honours it applies a retried request once.
   */
  idempotencyKey?: string | undefined;
  /**
   * Aborted when the caller gave up (the gateway closed its request): the request is not sent, or
   * is cut where it is, and the call fails (OUTCOME_UNKNOWN once a method that may write was sent).
   */
  signal?: AbortSignal | undefined;
}

/** What a successful call answers: a JSON value (structured result) or text. */
export type HttpToolAnswer =
  { type: 'json'; status: number; value: JsonValue } | { type: 'text'; status: number; text: string };

// Headers worth reporting for an answer without a body (HEAD, 204): none of them carries a credential.
const REPORTED_HEADERS = ['content-type', 'content-length', 'etag', 'last-modified', 'location'];

class DeadlinePassed extends Error {}
class CallerGone extends Error {}

/**
 * Sends the tool's request for `args` (already checked against its input schema) and answers the
 * result; throws DomainError: VALIDATION_FAILED (an argument that cannot be sent), UPSTREAM_FAILED
 * (unreachable, non-2xx, invalid JSON, binary answer, cancelled by the caller), TIMEOUT (GET/HEAD
 * past `timeout_ms`), OUTCOME_UNKNOWN (another method past it, or cancelled once sent: the API may
 * have acted), RESULT_TOO_LARGE (answer over `max_response_bytes`), or what `result_path` raises.
 */
export async function callHttpTool(
  config: HttpToolConfig,
  args: Record<string, unknown>,
  deps: HttpCallDeps,
): Promise<HttpToolAnswer> {
  const limits = { ...DEFAULT_HTTP_CALL_LIMITS, ...deps.limits };
  const timeoutMs = Math.min(config.timeout_ms ?? HTTP_TOOL_LIMITS.defaultTimeoutMs, limits.maxTimeoutMs);
  const maxBytes = Math.min(
    config.max_response_bytes ?? HTTP_TOOL_LIMITS.defaultResponseBytes,
    limits.maxResponseBytes,
  );
  const template = urlTemplateOf(config);
  // Messages name the endpoint as configured: filled URLs may carry a secret in their query.
  const endpoint = `${config.method} ${template.origin}${template.path}`;
  const fail = (code: DomainError['code'], message: string, details: Record<string, unknown> = {}) =>
    new DomainError(code, deps.redact(message), redactDetails(details, deps.redact));

  const outgoing = await outgoingRequest(config, args, deps.resolveSecrets);
  if (deps.idempotencyKey !== undefined) outgoing.headers['idempotency-key'] ??= deps.idempotencyKey;
  const reads = config.method === 'GET' || config.method === 'HEAD';
  const cancelled = (sent: boolean) =>
    sent && !reads
      ? fail(
          'OUTCOME_UNKNOWN',
          `the call of ${endpoint} was cancelled by its caller before the API answered; the request may have been applied, check before retrying`,
          { cancelled: true },
        )
      : fail('UPSTREAM_FAILED', `the call of ${endpoint} was cancelled by its caller`, { cancelled: true });
  if (deps.signal?.aborted) throw cancelled(false);
  // One signal for the request, aborted by the deadline or by the caller (cheaper than
  // AbortSignal.any, which every call would pay).
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlinePassed()), timeoutMs);
  const onCancel = () => deadline.abort(new CallerGone());
  deps.signal?.addEventListener('abort', onCancel, { once: true });
  // Why the request was cut: the caller gave up, or the deadline passed.
  const stopped = () =>
    deadline.signal.reason instanceof CallerGone
      ? cancelled(true)
      : reads
        ? fail('TIMEOUT', `${endpoint} did not answer within ${timeoutMs} ms`, { timeout_ms: timeoutMs })
        : fail(
            'OUTCOME_UNKNOWN',
            `${endpoint} did not answer within ${timeoutMs} ms; the request may have been applied, check before retrying`,
            { timeout_ms: timeoutMs },
          );
  try {
    let response: Dispatcher.ResponseData;
    try {
      response = await sendFollowingRedirects(
        deps.dispatcher,
        { url: new URL(outgoing.url), redirects: 0 },
        {
          method: outgoing.method,
          headers: outgoing.headers,
          ...(outgoing.body !== undefined && { body: outgoing.body }),
          signal: deadline.signal,
        },
        limits.maxRedirects,
      );
    } catch (error) {
      if (deadline.signal.aborted) throw stopped();
      // The dispatcher (an address guard, say) may refuse with a domain error of its own.
      if (error instanceof DomainError) throw fail(error.code, error.message, error.details);
      throw fail('UPSTREAM_FAILED', `could not reach ${endpoint}: ${describe(error)}`, causeCode(error));
    }
    const { statusCode: status, headers, body } = response;
    try {
      if (status < 200 || status > 299) {
        const read = await readBounded(body, limits.errorExcerptBytes, undefined);
        const location = headers.location;
        throw fail('UPSTREAM_FAILED', `${endpoint} answered HTTP ${status}`, {
          status,
          body_excerpt: excerpt(read.bytes),
          body_truncated: read.truncated,
          ...(status >= 300 && status < 400 && location !== undefined && { location: String(location) }),
        });
      }
      const read = await readBounded(body, maxBytes, contentLength(headers));
      if (read.truncated) {
        throw fail(
          'RESULT_TOO_LARGE',
          `${endpoint} answered more than ${maxBytes} bytes (max_response_bytes); reading stopped there`,
          {
            limit_bytes: maxBytes,
          },
        );
      }
      return interpret(config, status, headers, read.bytes, limits, fail, endpoint);
    } finally {
      if (!body.readableEnded) body.destroy();
    }
  } catch (error) {
    // The deadline (or the caller) also cuts a body that is still arriving.
    if (deadline.signal.aborted && !(error instanceof DomainError)) throw stopped();
    throw error;
  } finally {
    clearTimeout(timer);
    deps.signal?.removeEventListener('abort', onCancel);
  }
}

type Fail = (code: DomainError['code'], message: string, details?: Record<string, unknown>) => DomainError;

function interpret(
  config: HttpToolConfig,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bytes: Buffer,
  limits: HttpCallLimits,
  fail: Fail,
  endpoint: string,
): HttpToolAnswer {
  if (bytes.length === 0) {
    const reported: Record<string, JsonValue> = {};
    for (const name of REPORTED_HEADERS) {
      const value = headers[name];
      if (value !== undefined) reported[name] = String(value);
    }
    return { type: 'json', status, value: { status, headers: reported } };
  }
  const { type, charset } = mediaType(headers);
  const text = decodeText(bytes, charset);
  if (text === undefined) {
    throw fail(
      'UPSTREAM_FAILED',
      `${endpoint} answered ${type || 'a body'} that is not text; a tool can only return text or JSON`,
      {
        status,
        content_type: type,
      },
    );
  }
  if (!isJsonMediaType(type)) return { type: 'text', status, text };
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw fail('UPSTREAM_FAILED', `${endpoint} answered JSON nested deeper than ${MAX_JSON_DEPTH} levels`, {
      status,
    });
  }
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (error) {
    throw fail('UPSTREAM_FAILED', `${endpoint} answered invalid JSON: ${describe(error)}`, {
      status,
      body_excerpt: text.slice(0, limits.errorExcerptBytes),
    });
  }
  if (config.result_path === undefined) return { type: 'json', status, value };
  try {
    return {
      type: 'json',
      status,
      value: executeRead('query', value, { query: config.result_path }, {}, limits.resultPath).result,
    };
  } catch (error) {
    if (error instanceof OpError) throw fail(error.code, `result_path: ${error.message}`, error.details);
    throw error;
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`.slice(0, 500);
}

function causeCode(error: unknown): Record<string, unknown> {
  const code =
    (error as { code?: unknown } | null)?.code ??
    (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return typeof code === 'string' ? { cause_code: code } : {};
}

function redactDetails(
  details: Record<string, unknown> | undefined,
  redact: (text: string) => string,
): Record<string, unknown> | undefined {
  if (details === undefined) return undefined;
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return redact(value);
    if (Array.isArray(value)) return value.map(walk);
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item)]));
    }
    return value;
  };
  return walk(details) as Record<string, unknown>;
}
