/**
 * How a request to the control plane failed: the one error family of control-plane/, saying how
 * far the request got, so a caller knows whether sending it again is safe.
 */
/**
 * How far a failed request got:
 * - `not-sent`: it never reached the control plane (breaker open, connection refused): nothing
 *   was applied, and sending it again is safe;
 * - `no-answer`: it was (or may have been) sent, and no answer came (timeout, connection lost
 *   after the request started): the control plane may have acted on it;
 * - `error-answer`: the control plane answered with a server error (or an answer the gateway
 *   cannot read): it may have acted on it before failing;
 * - `refused`: the control plane answered 4xx: it refused the request itself (a wrong token, a
 *   route it does not have), so nothing was applied, and sending it again fails the same way.
 */
export type Delivery = 'not-sent' | 'no-answer' | 'error-answer' | 'refused';

/** The control plane could not be reached, failed, or refused the gateway's request. */
export class ControlPlaneError extends Error {
  override name = 'ControlPlaneError';
  constructor(
    message: string,
    readonly delivery: Delivery,
    readonly timedOut = false,
    /** The HTTP status of an answer (`error-answer`, `refused`). */
    readonly status?: number,
  ) {
    super(message);
  }

  /** False only when the request certainly never reached the control plane. */
  get sent(): boolean {
    return this.delivery !== 'not-sent';
  }
}

/** Not sent: the circuit breaker is open (the control plane failed repeatedly and has not recovered). */
export class CircuitOpenError extends ControlPlaneError {
  override name = 'CircuitOpenError';
  constructor() {
    super(
      'the control plane is unavailable (it failed repeatedly; the gateway is waiting for it to recover)',
      'not-sent',
    );
  }
}
