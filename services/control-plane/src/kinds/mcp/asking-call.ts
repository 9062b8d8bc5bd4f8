/**
 * A tool call of a 2025-era upstream server that asks its client while it runs
 * (`elicitation/create`, `sampling/createMessage`, `roots/list`), relayed to the agent behind the
 * call in rounds: a round runs until the call ends or asks what has not been answered, and then
 * ends with those requests (the executor answers them `input_required`, the gateway asks the agent
 * in its era); the next round brings the answers, which go to the server as the answers of its
 * requests, and the call goes on. The call itself stays where it runs, on this control plane, on a
 * connection of its own (pool.ts), for ASK_WAIT_MS at most between rounds.
 *
 * Time: the call's own timeout counts only while a round runs (a person filling a form is not the
 * server being slow); the wait between rounds has its own limit. Cancellation: a round's signal
 * cancels the call; between rounds nothing does but that limit.
 */
import { randomUUID } from 'node:crypto';
import { MAX_INPUT_RESPONSES, type ToolProgress } from '@bindery/contracts';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DomainError } from '../../domain/errors.ts';
import type { Asker } from './instance.ts';

/** How long a call waits for its agent's answers between rounds (the gateway asks a legacy client as long). */
export const ASK_WAIT_MS = 10 * 60_000;

/** Rounds of one call at most: past them the call is ended (as the gateway bounds its own). */
export const MAX_ASK_ROUNDS = 8;

/** The keys a request is asked under, per method, numbered (`elicit-1`, as custom tools name theirs). */
const KEY_OF: Record<string, string> = {
  'elicitation/create': 'elicit',
  'sampling/createMessage': 'sample',
  'roots/list': 'roots',
};

interface Pending {
  method: string;
  params: Record<string, unknown>;
  resolve(answer: Record<string, unknown>): void;
  reject(error: unknown): void;
}

/** What a round ended with: the call's result, or what the agent is to be asked. */
export type RoundOutcome =
  { result: CallToolResult } | { asks: Record<string, { method: string; params: Record<string, unknown> }> };

export class AskingCall implements Asker {
  readonly id = randomUUID();
  /** Cancels the upstream call (the round's caller gave up, a timeout, the wait ran out). */
  readonly abort = new AbortController();
  private readonly pending = new Map<string, Pending>();
  private readonly counts = new Map<string, number>();
  private outcome: { result: CallToolResult } | { error: unknown } | undefined;
  private wake: (() => void) | undefined;
  /** A round runs now (the pool refuses a second one at once). */
  inRound = false;
  private rounds = 0;
  private activeLeftMs: number;
  private activeSince = 0;
  private activeTimer: NodeJS.Timeout | undefined;
  private waitTimer: NodeJS.Timeout | undefined;
  /** Told the call's progress while a round runs (the round's own caller). */
  progress: ((report: ToolProgress) => void) | undefined;
  /** Told the call's stderr lines while a round runs. */
  stderr: ((line: string) => void) | undefined;
  /** Told the server's log messages while a round runs. */
  log: ((message: { level: unknown; data: unknown }) => void) | undefined;

  /**
   * `budgetMs`: the call's own timeout (counted while rounds run); `timedOut` names it when it
   * passes; `forget` is called once nothing can collect the call any more (its result was taken,
   * or nobody came back within ASK_WAIT_MS).
   */
  constructor(
    budgetMs: number,
    private readonly timedOut: () => DomainError,
    private readonly forget: () => void,
  ) {
    this.activeLeftMs = budgetMs;
  }

  /** Starts the call: `call` runs it on the upstream with the signal this object cancels it by. */
  run(call: (signal: AbortSignal) => Promise<CallToolResult>): Promise<void> {
    return call(this.abort.signal).then(
      (result) => this.settle({ result }),
      (error: unknown) =>
        this.settle({ error: this.abort.signal.aborted ? this.abort.signal.reason : error }),
    );
  }

  /** The server asks its client (instance.ts routes it here): held until a round brings the answer. */
  ask(
    method: string,
    params: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> {
    if (this.outcome) return Promise.reject(new Error('the call has ended'));
    if (this.pending.size >= MAX_INPUT_RESPONSES) {
      return Promise.reject(new Error(`more than ${MAX_INPUT_RESPONSES} requests to the client at once`));
    }
    const n = (this.counts.get(method) ?? 0) + 1;
    this.counts.set(method, n);
    const key = `${KEY_OF[method] ?? method}-${n}`;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      this.pending.set(key, { method, params, resolve, reject });
      // The server withdrew its request (notifications/cancelled): nothing to ask any more.
      signal.addEventListener(
        'abort',
        () => {
          if (this.pending.delete(key)) reject(signal.reason);
        },
        { once: true },
      );
      this.wake?.();
    });
  }

  /**
   * One round: the answers by key go to the requests they answer (others are ignored), and the
   * call runs until it ends (its result, or its failure thrown) or has requests not yet answered.
   */
  async round(
    answers: Record<string, unknown>,
    signal: AbortSignal | undefined,
    heard: {
      progress?: ((report: ToolProgress) => void) | undefined;
      stderr?: ((line: string) => void) | undefined;
      log?: ((message: { level: unknown; data: unknown }) => void) | undefined;
    } = {},
  ): Promise<RoundOutcome> {
    this.inRound = true;
    this.rounds += 1;
    this.resume();
    this.progress = heard.progress;
    this.stderr = heard.stderr;
    this.log = heard.log;
    for (const [key, answer] of Object.entries(answers)) {
      const waiting = this.pending.get(key);
      if (!waiting) continue;
      this.pending.delete(key);
      waiting.resolve(answer as Record<string, unknown>);
    }
    const cancel = () => this.abort.abort(signal?.reason);
    if (signal?.aborted) cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      for (;;) {
        if (this.outcome) {
          if ('error' in this.outcome) throw this.outcome.error;
          return { result: this.outcome.result };
        }
        if (this.pending.size > 0) {
          // Requests a server sends together are asked together: one turn lets the others in.
          await new Promise((resolve) => setImmediate(resolve));
          if (this.outcome) continue;
          if (this.rounds >= MAX_ASK_ROUNDS) {
            this.abort.abort(
              new DomainError(
                'UPSTREAM_FAILED',
                `the upstream server asked its client more than ${MAX_ASK_ROUNDS} rounds in one call`,
              ),
            );
            continue;
          }
          this.park();
          return {
            asks: Object.fromEntries(
              [...this.pending].map(([key, { method, params }]) => [key, { method, params }]),
            ),
          };
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
      }
    } finally {
      signal?.removeEventListener('abort', cancel);
      this.progress = undefined;
      this.stderr = undefined;
      this.log = undefined;
      this.inRound = false;
    }
  }

  private settle(outcome: { result: CallToolResult } | { error: unknown }): void {
    if (this.outcome) return;
    this.outcome = outcome;
    clearTimeout(this.activeTimer);
    for (const [, waiting] of this.pending) waiting.reject(new Error('the call has ended'));
    this.pending.clear();
    this.wake?.();
  }

  /** A round starts: the call's own time runs again. */
  private resume(): void {
    clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
    if (this.outcome) return;
    this.activeSince = performance.now();
    this.activeTimer = setTimeout(() => this.abort.abort(this.timedOut()), Math.max(1, this.activeLeftMs));
    this.activeTimer.unref();
  }

  /** A round ends with requests: the call's own time stops, and the wait for the agent starts. */
  private park(): void {
    clearTimeout(this.activeTimer);
    this.activeLeftMs -= performance.now() - this.activeSince;
    this.waitTimer = setTimeout(() => {
      this.abort.abort(
        new DomainError(
          'TIMEOUT',
          `nobody answered what the upstream server asked within ${ASK_WAIT_MS / 60_000} minutes`,
        ),
      );
      this.forget();
    }, ASK_WAIT_MS);
    this.waitTimer.unref();
  }

  /** Ends the call (its result was taken, or it failed): nothing holds it any more. */
  done(): void {
    clearTimeout(this.waitTimer);
    clearTimeout(this.activeTimer);
    // A DomainError: the pool tells it as it is, and never counts it against the server.
    if (!this.outcome) {
      this.abort.abort(new DomainError('UPSTREAM_FAILED', 'the call was given up', { cancelled: true }));
    }
    this.forget();
  }
}
