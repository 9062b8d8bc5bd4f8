/** Settings both services read, declared once so their kinds and bounds cannot drift apart. */
import { boolean, derived, integer, oneOf, secret, string, url, type Setting } from './schema.ts';

export const LOG_LEVEL = oneOf({
  values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  default: 'info',
  doc: 'log level (pino)',
});
export const LOG_FORMAT = oneOf({
  values: ['auto', 'pretty', 'json'],
  default: 'auto',
  doc: '`pretty`: one readable line per event; `json`: pino JSON lines; `auto`: pretty on a terminal, JSON otherwise',
});
export const LOG_REQUESTS = boolean({ default: true, doc: '`false` stops the per-request log lines' });
export const OPS_TOKEN = secret({
  doc: 'the gateways’ ops credential for `POST /cache/invalidate`; `pnpm start` generates one per start',
});
export const METRICS_TOKEN = secret({
  doc: 'when set, `GET /metrics` needs `Authorization: Bearer <METRICS_TOKEN>`; unset = open',
});
export const REDIS_URL = url({
  schemes: ['redis', 'rediss'],
  secret: true,
  doc: 'Redis for exposure-change fan-out (channel `bindery:config-invalidate`); unset = HTTP only',
});
export const SHUTDOWN_GRACE_MS = integer({
  min: 0,
  max: 600_000,
  unit: 'ms',
  default: 30_000,
  doc: 'on SIGTERM/SIGINT, how long requests in flight may still run; past it connections are cut and the process exits 1',
});

/**
 * OpenTelemetry traces, by the standard `OTEL_*` variables (the SDK's own specification names them).
 * Off unless an exporter is asked for: `OTEL_TRACES_EXPORTER=otlp`, or an OTLP endpoint set.
 */
export const TRACING_SETTINGS = {
  OTEL_SDK_DISABLED: boolean({ default: false, doc: '`true` turns traces off whatever else is set' }),
  OTEL_EXPORTER_OTLP_ENDPOINT: url({
    base: true,
    doc: 'an OTLP/HTTP collector; traces go to `<it>/v1/traces` (unset, with `OTEL_TRACES_EXPORTER=otlp`: `http://localhost:4318`)',
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url({
    doc: 'where traces are posted, whole (wins over `OTEL_EXPORTER_OTLP_ENDPOINT`)',
  }),
  OTEL_TRACES_EXPORTER: oneOf({
    values: ['otlp', 'none'],
    default: derived('`otlp` when an OTLP endpoint is set, else `none`', (v) =>
      v.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined
        ? ('otlp' as const)
        : ('none' as const),
    ),
    doc: '`otlp`: export traces (OTLP over HTTP, JSON bodies); `none`: no traces, and tracing costs nothing',
  }),
  OTEL_EXPORTER_OTLP_HEADERS: secret({
    doc: 'headers sent with each export, `key=value,key2=value2` (values URL-encoded); never logged',
  }),
  OTEL_SERVICE_NAME: string({
    doc: 'the service name on its spans; unset = `bindery-gateway` or `bindery-control-plane`',
  }),
  OTEL_TRACES_SAMPLER: oneOf({
    values: [
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
      'always_on',
      'always_off',
      'traceidratio',
    ],
    default: 'parentbased_always_on',
    doc: 'which calls are recorded; `parentbased_*` follow the caller’s `traceparent` sampled flag',
  }),
  OTEL_TRACES_SAMPLER_ARG: {
    kind: 'number 0–1',
    doc: 'the ratio of calls the `*traceidratio` samplers record',
    shownDefault: '`1`',
    secret: false,
    fallback: () => 1,
    parse: (raw: string) => {
      const ratio = Number(raw);
      return /^\s*[0-9.eE+-]+\s*$/.test(raw) && ratio >= 0 && ratio <= 1
        ? { ok: true as const, value: ratio }
        : { ok: false as const, problem: 'must be a number from 0 to 1' };
    },
  } satisfies Setting<number>,
} as const;
