/**
 * OpenTelemetry traces for both services. Off by default, and then free: the SDK is not even
 * loaded, and every call site asks `tracingOn()` before it makes a span or reads a context. On,
 * the OpenTelemetry Node SDK records spans with the W3C trace context as its propagator and exports
 * them over OTLP/HTTP (JSON bodies), with the standard `OTEL_*` settings.
 *
 * A trace crosses the services inside the messages, not on the exchange: the gateway's calls to
 * the control plane share exchanges (a batch carries many calls), so each call carries its own
 * `traceparent` (`ExecuteRequest.trace`), the way MCP carries one in a request's `_meta`.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Sampler, SamplingResult } from '@opentelemetry/sdk-trace';

/** What the services' configs hold of the `OTEL_*` settings. */
export interface TracingSettings {
  exporter: 'otlp' | 'none';
  /** Where spans are posted, whole (`…/v1/traces`). */
  endpoint: string;
  /** Sent with each export; may carry a collector's credential. */
  headers: Record<string, string>;
  serviceName: string;
  sampler: string;
  samplerRatio: number;
}

/** The `OTEL_*` values of a service's parsed settings, as `TracingSettings`. */
export function tracingSettings(
  v: {
    OTEL_SDK_DISABLED: boolean;
    OTEL_TRACES_EXPORTER: 'otlp' | 'none';
    OTEL_EXPORTER_OTLP_ENDPOINT: string | undefined;
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: string | undefined;
    OTEL_EXPORTER_OTLP_HEADERS: string | undefined;
    OTEL_SERVICE_NAME: string | undefined;
    OTEL_TRACES_SAMPLER: string;
    OTEL_TRACES_SAMPLER_ARG: number;
  },
  service: string,
): TracingSettings {
  return {
    exporter: v.OTEL_SDK_DISABLED ? 'none' : v.OTEL_TRACES_EXPORTER,
    endpoint:
      v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
      `${v.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318'}/v1/traces`,
    headers: otlpHeaders(v.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: v.OTEL_SERVICE_NAME ?? service,
    sampler: v.OTEL_TRACES_SAMPLER,
    samplerRatio: v.OTEL_TRACES_SAMPLER_ARG,
  };
}

/** `key=value,key2=value2` with URL-encoded values, as the OTLP exporter specification writes them. */
function otlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const name = pair.slice(0, at).trim();
    try {
      headers[name] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      headers[name] = pair.slice(at + 1).trim();
    }
  }
  return headers;
}

let on = false;

/** Whether this process records traces: call sites ask before they make anything. */
export function tracingOn(): boolean {
  return on;
}

export interface Tracing {
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}

const OFF: Tracing = { shutdown: async () => {} };

/**
 * Starts the SDK when `settings` ask for traces. `outgoingRequests`: undici's requests (fetch
 * included) get client spans and carry `traceparent`; `instrumentations`: other libraries' own
 * (Prisma's queries). Theirs are made only under one of ours: a request or query of no call (a
 * lease renewal, a notice to a gateway) is not traced on its own.
 */
export async function startTracing(
  settings: TracingSettings,
  options: {
    outgoingRequests?: boolean;
    instrumentations?: () => Promise<unknown[]>;
    /**
     * The process is a public entry (the gateway): a caller's `traceparent` names the trace its
     * spans join, but whether they are recorded is this process's sampler's decision, not the
     * caller's sampled flag (which anyone can set, before authentication).
     */
    publicEntry?: boolean;
    /** Where a failed last export is said (shutdown never waits for it long). */
    log?: { warn(details: object, message: string): void };
  } = {},
): Promise<Tracing> {
  if (settings.exporter === 'none') return OFF;
  const [{ NodeSDK }, { OTLPTraceExporter }, { W3CTraceContextPropagator }, samplers, more] =
    await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/core'),
      import('@opentelemetry/sdk-trace'),
      options.instrumentations?.() ?? [],
    ]);
  const instrumentations = [
    ...(options.outgoingRequests ? [await outgoingRequestsInstrumentation()] : []),
    ...more,
  ];
  const root = (() => {
    switch (settings.sampler) {
      case 'always_off':
      case 'parentbased_always_off':
        return new samplers.AlwaysOffSampler();
      case 'traceidratio':
      case 'parentbased_traceidratio':
        return new samplers.TraceIdRatioBasedSampler(settings.samplerRatio);
      default:
        return new samplers.AlwaysOnSampler();
    }
  })();
  const inner = !settings.sampler.startsWith('parentbased_')
    ? root
    : new samplers.ParentBasedSampler({
        root,
        ...(options.publicEntry && { remoteParentSampled: root, remoteParentNotSampled: root }),
      });
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    traceExporter: new OTLPTraceExporter({ url: settings.endpoint, headers: settings.headers }),
    sampler: new UnderOurSpans(inner, samplers.SamplingDecision.NOT_RECORD),
    // W3C trace context whatever OTEL_PROPAGATORS says: it is what the services and MCP carry.
    textMapPropagator: new W3CTraceContextPropagator(),
    // A caller's text (a tool name, a URI) is bounded where it becomes an attribute.
    spanLimits: { attributeValueLengthLimit: 256 },
    // The type is the SDK's Instrumentation; the services pass theirs without importing its types.
    instrumentations: instrumentations as never,
    // Traces only: metrics stay Prometheus's (`/metrics`), logs stay pino's lines.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  on = true;
  return {
    shutdown: async () => {
      on = false;
      // A collector that is down must not hold a shutdown for the exporter's 30 s.
      const flushed = sdk.shutdown().catch((error: unknown) => {
        options.log?.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'the last traces were not exported',
        );
      });
      await Promise.race([flushed, new Promise((resolve) => setTimeout(resolve, SHUTDOWN_WAIT_MS).unref())]);
    },
  };
}

/** How long a shutdown waits for the last spans to leave. */
const SHUTDOWN_WAIT_MS = 2_000;

/**
 * undici's instrumentation (every outgoing request, fetch included, gets a client span and carries
 * `traceparent`), with the URL's query left out of the span: a filled URL may carry a secret there
 * (an HTTP tool's `{{secret.…}}`, an upstream server's `?api_key=`).
 */
async function outgoingRequestsInstrumentation(): Promise<unknown> {
  const { UndiciInstrumentation } = await import('@opentelemetry/instrumentation-undici');
  return new UndiciInstrumentation({
    requireParentforSpans: true,
    requestHook: (span, request) => {
      const at = request.path.indexOf('?');
      if (at === -1) return;
      span.setAttribute('url.full', `${request.origin}${request.path.slice(0, at)}?REDACTED`);
      span.setAttribute('url.query', 'REDACTED');
    },
  });
}

/**
 * Lets a library's span (Prisma's `prisma:*`) be recorded only inside a trace: alone it would be
 * a trace of its own for every background query.
 */
class UnderOurSpans implements Sampler {
  constructor(
    private readonly inner: Sampler,
    private readonly notRecord: SamplingResult['decision'],
  ) {}

  shouldSample(...args: Parameters<Sampler['shouldSample']>): SamplingResult {
    const [parent, , name] = args;
    if (name.startsWith('prisma:') && trace.getSpanContext(parent) === undefined) {
      return { decision: this.notRecord };
    }
    return this.inner.shouldSample(...args);
  }

  toString(): string {
    return `UnderOurSpans{${this.inner.toString()}}`;
  }
}

/** The W3C trace context a message carries (`traceparent`, `tracestate`), as MCP's `_meta` has it. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** The active span's context as a carrier for a message; undefined when tracing is off or no span is active. */
export function activeCarrier(): TraceCarrier | undefined {
  if (!on) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent === undefined
    ? undefined
    : { traceparent: carrier.traceparent, ...(carrier.tracestate && { tracestate: carrier.tracestate }) };
}

/**
 * The context a message's carrier names (an agent's `_meta`, a batch line's `trace`), else the one
 * its HTTP headers name, else none. The propagator checks the format: a malformed one is ignored.
 */
export function carriedContext(
  ...carriers: ReadonlyArray<Readonly<Record<string, unknown>> | undefined>
): Context {
  for (const carrier of carriers) {
    if (!carrier || typeof carrier.traceparent !== 'string') continue;
    const fields: Record<string, string> = { traceparent: carrier.traceparent };
    if (typeof carrier.tracestate === 'string') fields.tracestate = carrier.tracestate;
    const extracted = propagation.extract(ROOT_CONTEXT, fields);
    const found = trace.getSpanContext(extracted);
    if (found !== undefined && trace.isSpanContextValid(found)) return extracted;
  }
  return ROOT_CONTEXT;
}

/** The trace id a carrier names (a well-formed one), when tracing is on. */
export function carriedTraceId(carrier: Readonly<Record<string, unknown>> | undefined): string | undefined {
  if (!on || carrier === undefined) return undefined;
  // carriedContext answers a valid context or none.
  return trace.getSpanContext(carriedContext(carrier))?.traceId;
}

/** The active trace's id (32 hex digits), when tracing is on and a span is active. */
export function activeTraceId(): string | undefined {
  return traceFields().trace_id;
}

/** What a log line carries of the active span (pino's `mixin`), when there is one. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  if (!on) return {};
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export interface SpanStart {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; default the active context. */
  parent?: Context;
}

/**
 * Runs `work` in a new span (active inside it), ended when `work` settles; a throw marks it an
 * error. With tracing off, `work` runs alone, given no span.
 */
export async function inSpan<T>(
  name: string,
  start: SpanStart,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const opened = openSpan(name, start);
  if (!opened) return work(undefined);
  let failure: string | undefined;
  try {
    return await opened.run(() => work(opened.span));
  } catch (error) {
    failure = error instanceof Error ? error.message : 'failed';
    throw error;
  } finally {
    opened.end(failure);
  }
}

/**
 * Runs `work` outside any trace: what a call starts that outlives it (an upstream server's
 * connection, its standing stream, a notice to the gateways) is not part of that call's trace.
 */
export function detached<T>(work: () => T): T {
  return on ? context.with(ROOT_CONTEXT, work) : work();
}

/**
 * A span whose end is not a promise's (an HTTP answer that ends when its stream closes): `run`
 * runs code with it active, `end` ends it once. Undefined when tracing is off.
 */
export function openSpan(
  name: string,
  start: SpanStart,
): { span: Span; run<T>(work: () => T): T; end(failure?: string): void } | undefined {
  if (!on) return undefined;
  const parent = start.parent ?? context.active();
  const span = trace
    .getTracer('bindery')
    .startSpan(name, { kind: start.kind ?? SpanKind.INTERNAL, attributes: start.attributes ?? {} }, parent);
  const active = trace.setSpan(parent, span);
  let ended = false;
  return {
    span,
    run: (work) => context.with(active, work),
    end: (failure) => {
      if (ended) return;
      ended = true;
      if (failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
      span.end();
    },
  };
}

/** Marks `span` failed with `message` (a tool error, an HTTP 5xx): the work returned, but did not succeed. */
export function spanFailed(span: Span | undefined, message: string): void {
  span?.setStatus({ code: SpanStatusCode.ERROR, message });
}

export { SpanKind, type Span };
