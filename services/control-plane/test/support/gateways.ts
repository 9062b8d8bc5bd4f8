/**
 * Stand-ins for gateways in invalidation tests: real loopback HTTP servers that record what the
 * control plane sends them, a port nothing listens on, and a log that keeps every line.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ExposureInvalidation,
  type ExposureInvalidationOptions,
  type InvalidationLog,
} from '../../src/exposure/exposure-invalidation.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RecordingGateway {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A gateway that records each request and answers with `answer` (204 by default); `answer` gets the
 * request's 1-based number, so a test can fail the first attempt and accept the second.
 */
export async function recordingGateway(
  answer: (attempt: number, res: ServerResponse) => void = (_, res) => res.writeHead(204).end(),
): Promise<RecordingGateway> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      answer(requests.length, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The URL of a loopback port that was free a moment ago and has nothing listening on it. */
export async function deadGatewayUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn';
  details: Record<string, unknown>;
  message: string;
}

/** An InvalidationLog that keeps every line; `waitFor` resolves at the first line matching. */
export function collectingLog(): InvalidationLog & {
  lines: LogLine[];
  waitFor(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
} {
  const lines: LogLine[] = [];
  const waiters: { match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  const add = (level: LogLine['level']) => (details: Record<string, unknown>, message: string) => {
    const line = { level, details, message };
    lines.push(line);
    for (const waiter of waiters.filter((w) => w.match(line))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  };
  return {
    lines,
    debug: add('debug'),
    info: add('info'),
    warn: add('warn'),
    waitFor(match, timeoutMs = 3_000) {
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching log line; got ${JSON.stringify(lines)}`)),
          timeoutMs,
        );
        waiters.push({
          match,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
  };
}

export const TEST_OPS_TOKEN = 'ops-token-for-invalidation-tests';

/**
 * An invalidation with a collecting log and fast retries, closed by the `cleanups` the caller
 * runs after each test.
 */
export function testInvalidation(
  options: Partial<ExposureInvalidationOptions>,
  cleanups: (() => Promise<void>)[],
): { invalidation: ExposureInvalidation; log: ReturnType<typeof collectingLog> } {
  const log = collectingLog();
  const invalidation = new ExposureInvalidation({
    gatewayUrls: [],
    opsToken: TEST_OPS_TOKEN,
    redisUrl: undefined,
    log,
    retryDelayMs: 20,
    ...options,
  });
  cleanups.push(() => invalidation.close());
  return { invalidation, log };
}
