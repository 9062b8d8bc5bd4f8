/**
 * Cancelling what a request runs when its caller goes: the gateway closes its request when its MCP
 * client cancels the call or goes away, and the kind running the call hears it through this signal
 * (an HTTP tool's request is cut, an upstream server gets notifications/cancelled).
 */
import type { ServerResponse } from 'node:http';

/** Runs `gone` when the answer's connection closes before the answer was written whole. */
export function onCallerGone(raw: ServerResponse, gone: () => void): void {
  raw.once('close', () => {
    if (!raw.writableFinished) gone();
  });
}

/** Aborted with `reason` when the answer's connection closes before the answer was written whole. */
export function abortedOnClose(raw: ServerResponse, reason: string): AbortSignal {
  const cancel = new AbortController();
  onCallerGone(raw, () => cancel.abort(reason));
  return cancel.signal;
}
