/**
 * @bindery/service-kit: what both services share that only runs in Node (contracts stays wire
 * shapes, safe in the browser): the settings engine (`@bindery/service-kit/settings`), the one way a configured secret (INTERNAL_TOKEN, OPS_TOKEN,
 * METRICS_TOKEN) is checked against an `Authorization` header, logging, graceful shutdown, and the
 * refusal of requests whose framing is ambiguous (two Host headers, an absolute URL as target).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerToken } from '@bindery/contracts';

export {
  PROBE_ROUTES,
  RequestLogController,
  humanLogs,
  loggerOptions,
  noteRequestTrace,
  type LogFormat,
  type LoggerSettings,
} from './logging.ts';
export { createClient as createRedisClient } from './redis-client.ts';
export {
  isStartedMessage,
  tellLauncher,
  underLauncher,
  type ControlPlaneStarted,
  type GatewayStarted,
  type StartedMessage,
} from './launcher.ts';
export {
  ACK_CHANNEL,
  INVALIDATION_CHANNEL,
  MAX_TABLE_CHANGES,
  RESOURCE_URI_MAX_CHARS,
  TABLE_ID_MAX_CHARS,
  resourceUpdates,
  type ResourceUpdate,
  invalidatesConfig,
  subscribeInvalidations,
  type InvalidationMessage,
  type TableChange,
  type SubscribeOptions,
  type Subscription,
} from './invalidation-subscriber.ts';
export { refuseConnect, requestFramingProblem, requestTargetPath } from './request-framing.ts';
export {
  closeOnSignals,
  drainIdleWhileClosing,
  type ShutdownOptions,
  type ShutdownTarget,
} from './shutdown.ts';
export {
  SpanKind,
  activeCarrier,
  activeTraceId,
  carriedContext,
  carriedTraceId,
  detached,
  inSpan,
  openSpan,
  spanFailed,
  startTracing,
  traceFields,
  tracingOn,
  tracingSettings,
  type Span,
  type TraceCarrier,
  type Tracing,
  type TracingSettings,
} from './tracing.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * A check of `Authorization` headers against one configured secret: true only for
 * `Bearer <secret>`. The comparison takes the same time whatever the header holds: both sides are
 * hashed to 32 bytes first, so neither a differing byte nor a differing length shows in the timing.
 */
export function bearerTokenCheck(secret: string): (authorization: string | undefined) => boolean {
  const expected = digest(secret);
  return (authorization) => {
    const token = bearerToken(authorization);
    return token !== undefined && timingSafeEqual(digest(token), expected);
  };
}
