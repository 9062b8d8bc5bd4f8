/**
 * A tool that asks its client for input (a custom tool's `ctx.elicit`, `ctx.sample`, `ctx.roots`),
 * in both eras. The control plane answers such a round `input_required` with the requests and a
 * signed state, keeping nothing; what the gateway does with it depends on the client:
 *
 * - a modern request (MCP 2026-07-28): the client is answered `InputRequiredResult`
 *   (`resultType: "input_required"`, `inputRequests`, `requestState`) and retries with its
 *   `inputResponses` and the state, which go back to the control plane as they came;
 * - a legacy session (2025-11-25 and before): the gateway asks the client itself, each request an
 *   `elicitation/create`, `sampling/createMessage` or `roots/list` on the call's own stream, and
 *   calls again with the answers and the state, round after round (at most MAX_INPUT_ROUNDS).
 *
 * Either way the tool runs again from its start with the answers it has, as MRTR prescribes.
 */
import {
  CLIENT_INPUT_CAPABILITIES,
  MAX_INPUT_KEY_CHARS,
  MAX_INPUT_RESPONSES,
  MAX_REQUEST_STATE_CHARS,
  type ClientInput,
  type ClientInputCapabilities,
  type InputRequest,
} from '@bindery/contracts';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  ListRootsResultSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../wire-error.ts';

/** Rounds of input one legacy call may go through before it fails. */
export const MAX_INPUT_ROUNDS = 8;
/**
 * How long a legacy client is given to answer one round (a person filling in a form): well within
 * the 30 minutes a requestState lasts.
 */
export const LEGACY_ASK_TIMEOUT_MS = 10 * 60_000;

/** A legacy client failed to answer an input request (it refused, timed out, or went away). */
export class ClientDidNotAnswer extends Error {
  constructor(
    readonly key: string,
    readonly timedOut: boolean,
    reason: string,
  ) {
    super(`the client did not answer input request "${key.slice(0, 64)}": ${reason.slice(0, 300)}`);
  }
}

/** What a call's client can be asked, and how (RequestExtra.input). */
export interface RequestInput {
  capabilities: ClientInputCapabilities;
  /** A modern retry: the client's answers to the previous round, by key. */
  responses?: Record<string, Record<string, unknown>> | undefined;
  /** A modern retry: the previous round's `requestState`, as the client sent it back. */
  state?: string | undefined;
  /**
   * A legacy session: sends `request` to the client on the call's stream and resolves with its
   * answer. Absent: the client is answered `input_required` (the modern era).
   */
  ask?: ((request: InputRequest, signal: AbortSignal | undefined) => Promise<unknown>) | undefined;
  /**
   * A modern request that declared the tasks extension: the digest of the credential it came with,
   * which a task an upstream makes for it is bound to (decision 071). Absent: no task is made.
   */
  tasks?: string | undefined;
}

/** The input capabilities an MCP client declared (legacy `initialize`, or a modern request's `_meta`). */
export function inputCapabilitiesOf(declared: unknown): RequestInput['capabilities'] {
  const out: RequestInput['capabilities'] = {};
  if (typeof declared !== 'object' || declared === null) return out;
  for (const name of CLIENT_INPUT_CAPABILITIES) {
    const value = (declared as Record<string, unknown>)[name];
    if (typeof value === 'object' && value !== null) out[name] = true;
  }
  // URL-mode elicitation (2025-11-25 and later): `elicitation: {url: {}}`; an upstream's OAuth
  // connection is asked for this way (decision 079).
  const elicitation = (declared as { elicitation?: unknown }).elicitation;
  if (typeof elicitation === 'object' && elicitation !== null && 'url' in elicitation)
    out.elicitation_url = true;
  return out;
}

/** True when the client can be asked anything at all. */
export function canBeAsked(input: RequestInput | undefined): boolean {
  return input !== undefined && Object.values(input.capabilities).some(Boolean);
}

/**
 * A modern retry's `inputResponses` and `requestState`, checked (-32602 for a shape no round could
 * use); each answer's own shape is the tool's to check, since only it knows what it asked.
 */
export function retryOf(params: Record<string, unknown>): Pick<RequestInput, 'responses' | 'state'> {
  const { inputResponses, requestState } = params;
  const out: Pick<RequestInput, 'responses' | 'state'> = {};
  if ('inputResponses' in params) {
    if (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses)) {
      throw new WireError(
        ErrorCode.InvalidParams,
        'Invalid params: inputResponses is an object of answers by key',
      );
    }
    const keys = Object.keys(inputResponses);
    if (keys.length > MAX_INPUT_RESPONSES) {
      throw new WireError(
        ErrorCode.InvalidParams,
        `Invalid params: inputResponses holds ${keys.length} answers, more than the ${MAX_INPUT_RESPONSES} a retry may`,
      );
    }
    for (const [key, answer] of Object.entries(inputResponses)) {
      if (key.length > MAX_INPUT_KEY_CHARS) {
        throw new WireError(
          ErrorCode.InvalidParams,
          `Invalid params: an inputResponses key is longer than ${MAX_INPUT_KEY_CHARS} characters`,
        );
      }
      if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
        throw new WireError(
          ErrorCode.InvalidParams,
          `Invalid params: inputResponses.${key.slice(0, 64)} is not a result (an object)`,
        );
      }
    }
    out.responses = inputResponses as Record<string, Record<string, unknown>>;
  }
  if ('requestState' in params) {
    if (typeof requestState !== 'string' || requestState.length > MAX_REQUEST_STATE_CHARS) {
      throw new WireError(
        ErrorCode.InvalidParams,
        `Invalid params: requestState is the string (of at most ${MAX_REQUEST_STATE_CHARS} characters) a previous round answered`,
      );
    }
    out.state = requestState;
  }
  return out;
}

/** What the control plane is told of the client for one round. */
export function roundInput(
  input: RequestInput,
  responses: Record<string, Record<string, unknown>> | undefined,
  state: string | undefined,
): ClientInput {
  return {
    capabilities: input.capabilities,
    ...(responses !== undefined && { responses }),
    ...(state !== undefined && { state }),
    ...(input.tasks !== undefined && { tasks: { holder: input.tasks } }),
  };
}

/**
 * Asks a legacy client every request of one round at once; resolves with the answers by key. A
 * request the client fails is the call's failure (its message says which).
 */
export async function askClient(
  ask: NonNullable<RequestInput['ask']>,
  requests: Record<string, InputRequest>,
  signal: AbortSignal | undefined,
): Promise<Record<string, Record<string, unknown>>> {
  // One failure ends the round: the other requests are withdrawn, not left waiting.
  const round = new AbortController();
  const stop = () => round.abort(signal?.reason);
  signal?.addEventListener('abort', stop, { once: true });
  try {
    const entries = await Promise.all(
      Object.entries(requests).map(async ([key, request]) => {
        try {
          const answer = await ask(request, round.signal);
          return [key, (answer ?? {}) as Record<string, unknown>] as const;
        } catch (error) {
          // The call itself was cancelled: that, not the client, ends it.
          if (signal?.aborted) throw error;
          const timedOut = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
          const reason = error instanceof Error ? error.message : String(error);
          round.abort();
          throw new ClientDidNotAnswer(key, timedOut, reason);
        }
      }),
    );
    return Object.fromEntries(entries);
  } finally {
    signal?.removeEventListener('abort', stop);
  }
}

/** Why a legacy client's rounds ended without an answer: too many of them, or a request unanswered. */
export interface RoundsFailure {
  code: 'LIMIT_EXCEEDED' | 'TIMEOUT' | 'VALIDATION_FAILED';
  /** What the client failed to answer (absent for LIMIT_EXCEEDED, which the caller words). */
  message?: string;
}

/**
 * One request to the control plane that may ask the client for input (a tool call, an upstream's
 * prompt or resource), round after round: `send` makes a round (with what the client can be asked
 * and, on a retry, its answers), `asked` reads what an answer asks. A legacy client is asked on the
 * request's stream and `send` runs again with its answers, at most MAX_INPUT_ROUNDS times; a
 * modern client's answer comes back as it is (it retries itself), as does one that asks nothing.
 */
export async function answerRounds<A>(
  input: RequestInput | undefined,
  send: (round: ClientInput | undefined, withdraw?: true) => Promise<A>,
  asked: (answer: A) => { requests: Record<string, InputRequest>; state: string } | undefined,
  signal: AbortSignal | undefined,
): Promise<{ answer: A } | { failure: RoundsFailure }> {
  let answer = await send(input && roundInput(input, input.responses, input.state));
  for (let round = 1; input?.ask; round += 1) {
    const question = asked(answer);
    if (!question) break;
    if (round > MAX_INPUT_ROUNDS) return { failure: { code: 'LIMIT_EXCEEDED' } };
    let responses;
    try {
      responses = await askClient(input.ask, question.requests, signal);
    } catch (error) {
      // Nothing will come back with answers: what waits for them (an upstream call the control
      // plane holds) is told at once, not left to its own expiry. `withdraw`: not on the call's
      // own signal, which may be the reason.
      void send({ ...roundInput(input, undefined, question.state), cancel: true }, true).catch(() => {});
      if (!(error instanceof ClientDidNotAnswer)) throw error;
      return { failure: { code: error.timedOut ? 'TIMEOUT' : 'VALIDATION_FAILED', message: error.message } };
    }
    answer = await send(roundInput(input, responses, question.state));
  }
  return { answer };
}

/** What a handler is told of its client for input, from the request's `extra` (both eras). */
export type InputOf = (extra: unknown) => RequestInput | undefined;

/** The schema a legacy client's answer to an input request is read with (the SDK checks it). */
const ANSWER_SCHEMAS = {
  'elicitation/create': ElicitResultSchema,
  'sampling/createMessage': CreateMessageResultSchema,
  'roots/list': ListRootsResultSchema,
} as const;

/** What the SDK tells a legacy handler besides the request: it can send requests to the client. */
interface SdkExtra {
  input?: RequestInput;
  sendRequest?: (
    request: { method: string; params?: Record<string, unknown> },
    schema: (typeof ANSWER_SCHEMAS)[keyof typeof ANSWER_SCHEMAS],
    options?: { signal?: AbortSignal; timeout?: number },
  ) => Promise<unknown>;
}

/**
 * The input of a request: a modern one's (set on its `extra` by the modern dispatch), else, for a
 * legacy session's request, the client's declared capabilities and asking it through the SDK on
 * the request's own stream. `clientCapabilities`: what the session's client declared.
 */
export function inputOf(clientCapabilities: (() => unknown) | undefined): InputOf {
  return (raw) => {
    const extra = raw as SdkExtra;
    if (extra.input) return extra.input;
    const send = extra.sendRequest;
    if (!clientCapabilities || !send) return undefined;
    return {
      capabilities: inputCapabilitiesOf(clientCapabilities()),
      ask: (request: InputRequest, signal) => {
        const schema = ANSWER_SCHEMAS[request.method as keyof typeof ANSWER_SCHEMAS];
        if (!schema) return Promise.reject(new Error(`no client request ${request.method}`));
        return send({ method: request.method, params: request.params }, schema, {
          timeout: LEGACY_ASK_TIMEOUT_MS,
          ...(signal && { signal }),
        });
      },
    };
  };
}

/** The modern era's handlers: a request's input is on its `extra` (serve.ts). */
export const modernInputOf: InputOf = (raw) => (raw as SdkExtra).input;
