/** Settings both services read, declared once so their kinds and bounds cannot drift apart. */
import { boolean, integer, oneOf, secret, url } from './schema.ts';

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
