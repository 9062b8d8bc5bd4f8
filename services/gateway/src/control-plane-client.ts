/**
 * The gateway's only way to data: HTTP to the control plane's internal API over a keep-alive
 * undici pool. Config reads retry once on a network fault (safe: they change nothing); tool
 * executions never retry, since a write may already have happened.
 */
import {
  ERROR_CODES,
  type ConfigV2,
  type ErrorBody,
  type ExecuteRequest,
  type LegacyConfig,
  type LegacyExecuteRequest,
  type ToolError,
  type ToolResult,
} from '@bindery/contracts';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool, errors as undiciErrors } from 'undici';
import type { GatewayMetrics } from './metrics.ts';

/** The control plane could not be reached or answered with a server error. */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
  }
}

export type ConfigAnswer =
  | { status: 'ok'; config: ConfigV2; etag: string | undefined }
  | { status: 'not-modified' }
  | { status: 'not-found' };

export type LegacyAnswer = { status: 'ok'; config: LegacyConfig } | { status: 'not-found' };

export interface ControlPlaneClientOptions {
  url: string;
  internalToken: string;
  configTimeoutMs: number;
  toolCallTimeoutMs: number;
  metrics: GatewayMetrics;
}

const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

function isNetworkFault(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code !== undefined && RETRYABLE.has(code);
}

/**
 * The control plane refusing a call for what the caller sent (400: arguments it cannot take, such
 * as text with a NUL character; 413: arguments over its body limit) is the caller's error, not an
 * upstream failure: it becomes a tool error with the control plane's own code and message.
 * Other statuses (401: a misconfigured token) remain upstream failures.
 */
function refusedCall(status: number, body: unknown): ToolResult | undefined {
  if (status !== 400 && status !== 413) return undefined;
  const error = (body as Partial<ErrorBody> | undefined)?.error;
  if (!error || !ERROR_CODES.includes(error.code) || typeof error.message !== 'string') return undefined;
  const refusal: ToolError = {
    error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) },
  };
  return { content: [{ type: 'text', text: JSON.stringify(refusal) }], isError: true };
}

export class ControlPlaneClient {
  readonly #pool: Pool;
  readonly #options: ControlPlaneClientOptions;
  readonly #auth: string;
  /** The latency histogram's children, bound once: a labelled observe looks its labels up each time. */
  readonly #latency: Record<'config' | 'legacy_config' | 'execute' | 'health', { observe(v: number): void }>;

  constructor(options: ControlPlaneClientOptions) {
    this.#options = options;
    const latency = options.metrics.upstreamLatency;
    this.#latency = {
      config: latency.labels('config'),
      legacy_config: latency.labels('legacy_config'),
      execute: latency.labels('execute'),
      health: latency.labels('health'),
    };
    this.#auth = `Bearer ${options.internalToken}`;
    this.#pool = new Pool(options.url, { connections: 128, keepAliveTimeout: 30_000, pipelining: 1 });
  }

  /**
   * One HTTP exchange, the body collected as text. A raw `dispatch` with a small handler: no
   * Readable stream per response, which is measurably cheaper on the tool-call path.
   */
  #send(
    method: 'GET' | 'POST',
    path: string,
    timeoutMs: number,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
    return new Promise((resolve, reject) => {
      let status = 0;
      let responseHeaders: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      this.#pool.dispatch(
        { method, path, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs },
        {
          // Declaring onRequestStart is what marks this as a handler of undici's current API.
          onRequestStart() {},
          onResponseStart(_controller, statusCode, received) {
            status = statusCode;
            responseHeaders = received;
          },
          onResponseData(_controller, chunk) {
            chunks.push(chunk);
          },
          onResponseEnd() {
            const text =
              chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
            resolve({ status, headers: responseHeaders, text });
          },
          onResponseError(_controller, error) {
            reject(error);
          },
        },
      );
    });
  }

  async #request(
    kind: 'config' | 'legacy_config' | 'execute' | 'health',
    method: 'GET' | 'POST',
    path: string,
    timeoutMs: number,
    options: { body?: unknown; headers?: Record<string, string>; retry: boolean },
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: unknown }> {
    const started = performance.now();
    if (kind === 'config' || kind === 'legacy_config') this.#options.metrics.configFetches.inc();
    const headers: Record<string, string> = { authorization: this.#auth, ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await this.#send(method, path, timeoutMs, headers, body);
        this.#latency[kind].observe((performance.now() - started) / 1000);
        if (response.status >= 500) {
          throw new UpstreamError(`control plane answered ${response.status} to ${method} ${kind}`);
        }
        return {
          status: response.status,
          headers: response.headers,
          body: response.text ? JSON.parse(response.text) : undefined,
        };
      } catch (error) {
        if (error instanceof UpstreamError) throw error;
        if (attempt === 0 && options.retry && isNetworkFault(error)) continue;
        const timedOut =
          error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError;
        throw new UpstreamError(
          timedOut
            ? `control plane did not answer ${kind} within ${timeoutMs} ms`
            : `control plane unreachable (${(error as { code?: string }).code ?? (error as Error).message})`,
          timedOut,
        );
      }
    }
  }

  /** Config v2 of an api_key; with `etag`, a 304 answers not-modified. */
  async config(apiKey: string, etag: string | undefined): Promise<ConfigAnswer> {
    const res = await this.#request(
      'config',
      'GET',
      `/internal/aei/mcp/${encodeURIComponent(apiKey)}/config`,
      this.#options.configTimeoutMs,
      { retry: true, ...(etag !== undefined && { headers: { 'if-none-match': etag } }) },
    );
    if (res.status === 304) return { status: 'not-modified' };
    // 400: the control plane refused to look the key up at all (a NUL in it, say): no such key.
    if (res.status === 404 || res.status === 400) return { status: 'not-found' };
    if (res.status !== 200) throw new UpstreamError(`control plane answered ${res.status} to a config read`);
    const header = res.headers.etag;
    return {
      status: 'ok',
      config: res.body as ConfigV2,
      etag: typeof header === 'string' ? header : undefined,
    };
  }

  /** The legacy v1 config of an api_key. */
  async legacyConfig(apiKey: string): Promise<LegacyAnswer> {
    const res = await this.#request(
      'legacy_config',
      'GET',
      `/internal/mcp-instance/${encodeURIComponent(apiKey)}`,
      this.#options.configTimeoutMs,
      { retry: true },
    );
    if (res.status === 404 || res.status === 400) return { status: 'not-found' };
    if (res.status !== 200)
      throw new UpstreamError(`control plane answered ${res.status} to a legacy config read`);
    return { status: 'ok', config: res.body as LegacyConfig };
  }

  /** Runs a bound tool; the answer is the executor's MCP result (isError included). */
  async execute(adiId: string, request: ExecuteRequest): Promise<ToolResult> {
    return this.#execute(`/internal/adi/${encodeURIComponent(adiId)}/execute`, request);
  }

  /** Runs a legacy instance's tool. */
  async executeLegacy(instanceId: string, request: LegacyExecuteRequest): Promise<ToolResult> {
    return this.#execute(`/internal/mcp-instance/${encodeURIComponent(instanceId)}/execute`, request);
  }

  async #execute(path: string, body: unknown): Promise<ToolResult> {
    const res = await this.#request('execute', 'POST', path, this.#options.toolCallTimeoutMs, {
      body,
      retry: false,
    });
    const refused = refusedCall(res.status, res.body);
    if (refused) return refused;
    if (res.status !== 200) {
      const message = (res.body as { error?: { message?: string } } | undefined)?.error?.message;
      throw new UpstreamError(
        `control plane refused the call (${res.status}${message ? `: ${message}` : ''})`,
      );
    }
    return res.body as ToolResult;
  }

  /** True when the control plane answers its health check. */
  async healthy(): Promise<boolean> {
    try {
      const res = await this.#request('health', 'GET', '/healthz', this.#options.configTimeoutMs, {
        retry: false,
      });
      return res.status === 200;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
