/**
 * Resources, resource templates and prompts of the upstream MCP servers attached to an AEI, as
 * config v2 carries them (`upstream_resources`, `upstream_resource_templates`, `upstream_prompts`; the control plane already left out what the AEI's own
 * resources and prompts, or an earlier attached server, offer under the same URI or name). Reading
 * one or getting one goes through the control plane (`upstreamRequest`), which checks the server
 * is still attached and the entry still listed, asks the server and audits the request.
 */
import type {
  ConfigUpstreamPrompt,
  ConfigUpstreamResource,
  ConfigUpstreamResourceTemplate,
  UpstreamRequestBody,
} from '@bindery/contracts';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { ControlPlaneClient } from '../control-plane/client.ts';
import { ControlPlaneError } from '../control-plane/errors.ts';
import type { Exposure } from '../control-plane/exposure-cache.ts';
import { JSONRPC } from '../http/jsonrpc-errors.ts';
import { auditedCaller } from './tools/tool-index.ts';
import { MAX_INPUT_ROUNDS, answerRounds, type RequestInput } from './tools/client-input.ts';
import { WireError } from './wire-error.ts';

export function upstreamResourcesOf(exposure: Exposure): readonly ConfigUpstreamResource[] {
  return exposure.kind === 'aei' ? (exposure.config.upstream_resources ?? []) : [];
}

export function upstreamTemplatesOf(exposure: Exposure): readonly ConfigUpstreamResourceTemplate[] {
  return exposure.kind === 'aei' ? (exposure.config.upstream_resource_templates ?? []) : [];
}

export function upstreamPromptsOf(exposure: Exposure): readonly ConfigUpstreamPrompt[] {
  return exposure.kind === 'aei' ? (exposure.config.upstream_prompts ?? []) : [];
}

/**
 * What an upstream entry says of itself for clients to show, as MCP names it: `_meta`, `icons` and
 * (resources, templates) `annotations`, exactly as the server listed them.
 */
export function presented(entry: {
  meta?: Record<string, unknown>;
  icons?: unknown[];
  annotations?: Record<string, unknown>;
}): { _meta?: Record<string, unknown>; icons?: never[]; annotations?: never } {
  return {
    ...(entry.annotations !== undefined && { annotations: entry.annotations as never }),
    ...(entry.icons !== undefined && { icons: entry.icons as never[] }),
    ...(entry.meta !== undefined && { _meta: entry.meta }),
  };
}

/** What the request is about, for messages: the resource's URI or the prompt's name. */
interface Subject {
  kind: 'resource' | 'prompt';
  name: string;
}

/**
 * Asks the control plane to read a resource or get a prompt of an upstream server; the upstream's
 * MCP result, or a WireError: -32002 (a resource no longer there), -32602 (arguments the upstream
 * refused, a result over the limit, a prompt no longer there), -32029 (rate limited), -32050 (the
 * upstream or the control plane failed or did not answer).
 */
export async function askUpstream<T>(
  exposure: Exposure & { kind: 'aei' },
  client: ControlPlaneClient,
  body: Omit<UpstreamRequestBody, 'config_version' | 'input'>,
  subject: Subject & {
    schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } };
  },
  signal?: AbortSignal,
  input?: RequestInput,
): Promise<T> {
  // A withdrawn round (the client gave up while asked) has nothing to end here: a modern upstream
  // holds nothing between rounds.
  const ask = (round: UpstreamRequestBody['input'], withdraw?: true) =>
    withdraw
      ? Promise.reject(new Error('nothing is held for this request'))
      : client.upstreamRequest(
          exposure.config.aei.id,
          {
            ...body,
            config_version: exposure.config.aei.config_version,
            ...(auditedCaller(exposure) !== undefined && { caller: auditedCaller(exposure) }),
            ...(round && { input: round }),
          },
          signal,
        );
  let rounds;
  try {
    // A modern upstream asked the agent (client-input.ts): a legacy session is asked here, round
    // after round; a modern client is answered input_required and retries itself.
    rounds = await answerRounds(
      input,
      ask,
      (answer) => ('input_required' in answer ? answer.input_required : undefined),
      signal,
    );
  } catch (error) {
    throw unanswered(error);
  }
  if ('failure' in rounds) {
    const { code, message } = rounds.failure;
    if (code === 'LIMIT_EXCEEDED') {
      throw new WireError(
        ErrorCode.InvalidParams,
        `the upstream server asked for input ${MAX_INPUT_ROUNDS} times for ${subject.kind} "${subject.name.slice(0, 200)}"; a request may ask at most that often`,
        { code },
      );
    }
    throw code === 'TIMEOUT'
      ? new WireError(JSONRPC.UNAVAILABLE, message ?? '', { code })
      : new WireError(ErrorCode.InvalidParams, message ?? '', { code });
  }
  const { answer } = rounds;
  if ('input_required' in answer) {
    return {
      resultType: 'input_required',
      inputRequests: answer.input_required.requests,
      requestState: answer.input_required.state,
    } as T;
  }
  if ('result' in answer) {
    // Passed on as it came, once it is the result MCP says it must be: a client would refuse it.
    const parsed = subject.schema.safeParse(answer.result);
    if (parsed.success) return parsed.data;
    throw new WireError(
      JSONRPC.UNAVAILABLE,
      `the upstream server's answer for ${subject.kind} "${subject.name.slice(0, 200)}" is not a valid MCP result`,
      {
        code: 'UPSTREAM_FAILED',
      },
    );
  }
  const { code, message } = answer.error;
  const shown = subject.name.slice(0, 200);
  if (code === 'NOT_FOUND' || code === 'FORBIDDEN') {
    throw subject.kind === 'resource'
      ? new WireError(JSONRPC.RESOURCE_NOT_FOUND, `${shown}: ${message}`, { code })
      : new WireError(ErrorCode.InvalidParams, `prompt "${shown}": ${message}`, { code });
  }
  throw refusedWith(code, message);
}

/** The control plane did not answer a request made for a client: -32050. */
export function unanswered(error: unknown): unknown {
  if (!(error instanceof ControlPlaneError)) return error;
  return new WireError(JSONRPC.UNAVAILABLE, `the control plane did not answer: ${error.message}`, {
    code: 'UPSTREAM_FAILED',
  });
}

/**
 * The JSON-RPC error of the control plane's refusal `code` of an upstream request: a request the
 * client can mend is -32602, a rate limit -32029, a failure of the upstream or ours -32050.
 */
export function refusedWith(code: string, message: string): WireError {
  switch (code) {
    case 'FORBIDDEN':
    case 'VALIDATION_FAILED':
    case 'RESULT_TOO_LARGE':
    case 'LIMIT_EXCEEDED':
      return new WireError(ErrorCode.InvalidParams, message, { code });
    case 'RATE_LIMITED':
      return new WireError(JSONRPC.RATE_LIMITED, message, { code });
    default:
      return new WireError(JSONRPC.UNAVAILABLE, message, { code });
  }
}
