/**
 * How both services log. JSON lines (pino) for machines, the default when stdout is not a
 * terminal; one readable line per event for a person (a terminal, or `LOG_FORMAT=pretty`), through
 * pino-pretty. Requests: one line per answered request ("GET /api/v2/adis 200 in 3.1 ms") at info,
 * the arrival at debug; probes (health, readiness, metrics) only at debug, so a scraper polling
 * every few seconds does not bury everything else.
 */
import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import PinoPretty from 'pino-pretty';
import { traceFields, tracingOn } from './tracing.ts';

export type LogFormat = 'auto' | 'pretty' | 'json';

/** The routes whose requests are logged at debug only: polled by machines, rarely worth reading. */
export const PROBE_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** True when logs should be written for a person: `pretty`, or `auto` on a terminal. */
export function humanLogs(format: LogFormat, output: { isTTY?: boolean } = process.stdout): boolean {
  return format === 'pretty' || (format === 'auto' && output.isTTY === true);
}

interface RequestLine {
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
  reqId?: unknown;
}

/** A request's line as a person reads it; other lines keep their message. */
function readableMessage(log: Record<string, unknown>, messageKey: string): string {
  const { req, res, responseTime, reqId } = log as RequestLine;
  const message = String(log[messageKey] ?? '');
  const request = req?.method !== undefined && res?.statusCode !== undefined;
  const text = request
    ? `${req.method} ${req.url ?? ''} ${res.statusCode}` +
      (typeof responseTime === 'number' ? ` in ${responseTime.toFixed(1)} ms` : '') +
      (message === 'request completed' ? '' : ` (${message})`)
    : message;
  return reqId === undefined ? text : `${text} [${String(reqId)}]`;
}

export interface LoggerSettings {
  level: string;
  format: LogFormat;
  /** The service's name, on every line (`control-plane`, `gateway`). */
  name: string;
  /** How a request shows in its lines (both services redact the api_key in URLs). */
  serializeRequest?: (request: FastifyRequest) => { method?: string; url?: string; [key: string]: unknown };
  /** Where lines go instead of stdout (tests): anything with pino's `write(line)`. */
  destination?: { write(line: string): unknown };
}

/** Fastify's `logger` option for a service: pino, JSON or readable as `format` and stdout say. */
export function loggerOptions(settings: LoggerSettings): FastifyServerOptions['logger'] {
  const { level, name, serializeRequest, destination } = settings;
  const serializers = serializeRequest && { req: serializeRequest };
  // With traces on, a line written inside a call names its trace and span; off, nothing is added.
  const traced = tracingOn() && { mixin: traceFields };
  const human = humanLogs(settings.format, (destination ?? process.stdout) as { isTTY?: boolean });
  if (!human)
    return {
      level,
      name,
      ...(serializers && { serializers }),
      ...(destination && { stream: destination }),
      ...traced,
    };
  const pretty = PinoPretty({
    destination: (destination as NodeJS.WritableStream | undefined) ?? 1,
    // Written as they come, so the last lines before a crash or an exit are never lost.
    sync: true,
    colorize: destination === undefined && process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    // Shown in the message instead (readableMessage); the host and pid say nothing to a person here.
    ignore: 'pid,hostname,req,res,responseTime,reqId',
    singleLine: true,
    messageFormat: readableMessage,
  });
  return { level, name, ...(serializers && { serializers }), stream: pretty, ...traced };
}

/** The trace a request was served in, for its answer's line (written after the trace's span). */
const requestTraces = new WeakMap<FastifyRequest, { trace_id: string; span_id?: string }>();

/**
 * Names the trace `request` is served in on its answer's line. Lines written inside the trace
 * name it already (the logger's mixin); the answer's line is written once the span has ended.
 */
export function noteRequestTrace(
  request: FastifyRequest,
  trace: { trace_id: string; span_id?: string },
): void {
  requestTraces.set(request, trace);
}

/**
 * Fastify's request lines as this module describes them: one line per answer (method, URL,
 * status, time) instead of two, at debug for probes. `enabled: false` drops them all.
 */
export class RequestLogController extends LogController {
  readonly #enabled: boolean;

  constructor(options: { enabled: boolean }) {
    super({ disableRequestLogging: !options.enabled });
    this.#enabled = options.enabled;
  }

  override incomingRequest(request: FastifyRequest): void {
    if (this.#enabled) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (!this.#enabled) return;
    const line = { ...requestTraces.get(request), req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else if (PROBE_ROUTES.has(request.routeOptions.url ?? '')) reply.log.debug(line, 'request completed');
    else reply.log.info(line, 'request completed');
  }

  /** The answer's own line says 404 (with the URL redacted); Fastify's extra line would not redact it. */
  override routeNotFound(): void {}
}
