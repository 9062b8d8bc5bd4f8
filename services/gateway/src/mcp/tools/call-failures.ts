/**
 * What a tool call answers when the control plane could not give its outcome, worded for the one
 * decision a caller has to make: may I send it again? Four cases, by what the gateway knows:
 * - never sent (circuit breaker open, connection refused): nothing was applied, `UPSTREAM_FAILED`;
 * - refused (the control plane answered 4xx to the gateway's request: a wrong internal token, a
 *   route it lacks): nothing was applied either, `UPSTREAM_FAILED`, but repeating it fails the
 *   same way until an operator fixes the set-up;
 * - sent to a tool that only reads, no answer: nothing changed either, `TIMEOUT` or
 *   `UPSTREAM_FAILED`, safe to repeat;
 * - sent to a tool that may write, no answer (a timeout, a connection lost, a 5xx): it may have
 *   been applied, `OUTCOME_UNKNOWN`, never "try again" — check first, or repeat it with the same
 *   idempotency key, which answers the first outcome instead of writing twice.
 */
import { IDEMPOTENCY_META_KEY, type ToolError } from '@bindery/contracts';
import type { ControlPlaneError } from '../../control-plane/errors.ts';

export interface FailedCall {
  /** The tool only reads (a write-free operation): repeating it can change nothing. */
  readOnly: boolean;
  /** The idempotency key the call carried, if any. */
  idempotencyKey: string | undefined;
}

/** The `{code, message, details}` of a call whose outcome the control plane did not give. */
export function unansweredCall(error: ControlPlaneError, call: FailedCall): ToolError['error'] {
  if (error.delivery === 'refused') {
    return {
      code: 'UPSTREAM_FAILED',
      message: `${error.message}: nothing was applied; the refusal is about the gateway's request, not this call, so repeating it fails the same way until an operator fixes the gateway or the control plane`,
      details: { sent: true, applied: false, ...(error.status !== undefined && { status: error.status }) },
    };
  }
  if (!error.sent) {
    return {
      code: 'UPSTREAM_FAILED',
      message: `${error.message}; the call was not sent, so nothing was applied; try again shortly`,
      details: { sent: false },
    };
  }
  if (call.readOnly) {
    return {
      code: error.timedOut ? 'TIMEOUT' : 'UPSTREAM_FAILED',
      message: `${error.message}; the tool only reads, so nothing changed: try again shortly`,
      details: { sent: true },
    };
  }
  const retry =
    call.idempotencyKey === undefined
      ? `check the data before retrying, or send writes with an idempotency key (params._meta["${IDEMPOTENCY_META_KEY}"]) so a retry answers the first outcome instead of writing twice`
      : `retry with the same idempotency key ("${call.idempotencyKey}"): it answers the first outcome and never writes twice`;
  return {
    code: 'OUTCOME_UNKNOWN',
    message: `${error.message}; the write was sent but its answer never came, so it may have been applied: ${retry}`,
    details: {
      sent: true,
      ...(call.idempotencyKey !== undefined && { idempotency_key: call.idempotencyKey }),
    },
  };
}
