/**
 * One `tools/call`, start to finish, for the SDK handler and the direct answer alike: a catalog
 * tool of a progressive exposure is answered by `progressive.ts`; any other name is routed to a
 * tool (`source-routing.ts`), its arguments checked, and it runs through the control plane. The
 * client hears the call's log lines (`call-log.ts`) and, given a progress token, its progress.
 */
import {
  headerParamsOf,
  paramHeaderMismatch,
  progressiveTools,
  toolError,
  URL_ELICITATION_REQUIRED_ERROR,
  type ToolLogLine,
  type ToolProgress,
  type ToolResult,
} from '@bindery/contracts';
import { ErrorCode, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ControlPlaneError } from '../../control-plane/errors.ts';
import { MODERN_ERRORS } from '../modern/envelope.ts';
import type { ParamHeader } from '../handler-table.ts';
import type { Exposure } from '../../control-plane/exposure-cache.ts';
import type { ClientLog, McpSessionContext, Notify } from '../session-context.ts';
import { unstorableArguments } from '../unstorable-arguments.ts';
import { WireError } from '../wire-error.ts';
import { unansweredCall } from './call-failures.ts';
import { finishLines, refusalLine, startLine } from './call-log.ts';
import { MAX_INPUT_ROUNDS, answerRounds, type RequestInput } from './client-input.ts';
import { callCatalogTool, isCatalogTool } from './progressive.ts';
import { routeTool, unknownToolRefusal } from './source-routing.ts';
import { toolIndex } from './tool-index.ts';

/** What a call carries besides the tool's name and arguments. */
export interface ToolCall {
  sessionId: string | undefined;
  requestId: string;
  /** `params._meta["bindery/idempotency_key"]`: a write sent again with it writes once. */
  idempotencyKey?: string | undefined;
  notify?: Notify | undefined;
  known?: Exposure;
  /** Aborted when the client cancels the call (notifications/cancelled) or goes away. */
  signal?: AbortSignal;
  /** The client's `_meta.progressToken`: progress reports of the call are sent with it. */
  progressToken?: string | number;
  /** `_meta["bindery/source"]`: where the client thinks the tool lives (`source-routing.ts`). */
  sourceHint?: string | undefined;
  /**
   * What the client can be asked for input, and how (`client-input.ts`); absent: nothing, and a
   * tool that asks fails with a tool error naming the capability.
   */
  input?: RequestInput | undefined;
  /**
   * A modern request's `Mcp-Param-*` headers: those of the tool's marked arguments must match
   * them (MCP 2026-07-28, SEP-2243). Absent in the legacy era.
   */
  paramHeader?: ParamHeader | undefined;
}

export type ToolCallContext = Pick<
  McpSessionContext,
  'exposure' | 'client' | 'metrics' | 'log' | 'progressive' | 'clientLog'
>;

/** Why the request's headers do not match the arguments `inputSchema` marks (x-mcp-header), if they do not. */
function headerMismatch(
  inputSchema: Record<string, unknown>,
  args: Record<string, unknown>,
  header: ParamHeader,
): string | undefined {
  const marks = headerParamsOf(inputSchema);
  // Marks that break the rules are refused at sync and save; one stored before is not checked.
  if (!marks.ok || marks.params.length === 0) return undefined;
  return paramHeaderMismatch(marks.params, args, header);
}

/** Milliseconds since `started` (a performance.now() reading), to two decimals. */
const msSince = (started: number) => Math.round((performance.now() - started) * 100) / 100;

/**
 * The result of calling tool `name`: a tool's failure is an `isError` result, and so is a call the
 * control plane left unanswered (`call-failures.ts`). Throws WireError -32602 for a name that
 * names no tool.
 */
export async function callTool(
  session: ToolCallContext,
  name: string,
  args: Record<string, unknown>,
  call: ToolCall,
): Promise<CallToolResult> {
  const exposure = await session.exposure(call.known);
  const log: ClientLog['send'] = (notify, line) => session.clientLog.send(notify, line);
  const index = toolIndex(exposure, session.client);
  const progressive = exposure.kind === 'aei' && exposure.config.aei.exposure_mode === 'progressive';
  if (progressive && isCatalogTool(name, exposure.config)) {
    await log(call.notify, startLine(name));
    const started = performance.now();
    const result = await callCatalogTool(
      name,
      args,
      exposure.config,
      index,
      call.sessionId,
      session.progressive,
      call.requestId,
    );
    session.metrics.toolCalls.inc({ status: result.isError ? 'error' : 'ok' });
    for (const line of finishLines(name, result, msSince(started))) await log(call.notify, line);
    return result;
  }
  const routed = progressive ? undefined : routeTool(index, name, call.sourceHint);
  if (routed?.ignoredHint !== undefined) {
    session.log.info({ tool: name, source: routed.ignoredHint }, 'unknown source hint ignored');
  }
  const tool = routed && 'tool' in routed ? routed.tool : undefined;
  if (!tool) {
    session.metrics.toolCalls.inc({ status: 'unknown_tool' });
    const refusal = unknownToolRefusal(name, routed, () =>
      progressive
        ? progressiveTools(exposure.kind === 'aei' && exposure.config.aei.catalog_search).map((t) => t.name)
        : index.list.map((t) => t.name),
    );
    await log(call.notify, refusalLine(name, refusal.message));
    throw new WireError(ErrorCode.InvalidParams, refusal.message, refusal.details);
  }
  // A modern call's Mcp-Param-* headers say what its marked arguments are: a header missing or
  // saying otherwise is refused (400, HeaderMismatch), before anything is sent to the client.
  const mismatch = call.paramHeader && headerMismatch(tool.inputSchema, args, call.paramHeader);
  if (mismatch) {
    session.metrics.toolCalls.inc({ status: 'header_mismatch' });
    throw new WireError(MODERN_ERRORS.HEADER_MISMATCH, `Header mismatch: ${mismatch}`);
  }
  // A number that overflowed to Infinity would reach the control plane as null: only here can
  // it still be seen, so the gateway refuses it as the control plane refuses a NUL.
  const unstorable = unstorableArguments(args);
  if (unstorable) {
    session.metrics.toolCalls.inc({ status: 'error' });
    const refused: CallToolResult = toolError(unstorable);
    for (const line of finishLines(name, refused, 0)) await log(call.notify, line);
    return refused;
  }
  await log(call.notify, startLine(name));
  const started = performance.now();
  let result: CallToolResult;
  try {
    const token = call.progressToken;
    const notify = call.notify;
    const extra = {
      idempotencyKey: call.idempotencyKey,
      signal: call.signal,
      sessionId: call.sessionId,
      sourceHint: call.sourceHint,
      // The client hears log messages: the tool's own lines (a custom tool's ctx.log) at its level
      // reach it on this call's stream, named after the tool, as the gateway's lines do.
      ...(session.clientLog.level !== undefined &&
        notify && {
          log: {
            level: session.clientLog.level,
            send: (line: ToolLogLine) => void log(notify, { ...line, logger: name }),
          },
        }),
      // The client sent a progress token: each report of the tool reaches it on this call's stream.
      ...(token !== undefined &&
        notify && {
          progress: (report: ToolProgress) => {
            notify({ method: 'notifications/progress', params: { progressToken: token, ...report } }).catch(
              (error: unknown) => session.log.debug({ err: error }, 'progress not delivered to the client'),
            );
          },
        }),
    };
    const input = tool.asksInput ? call.input : undefined;
    // A legacy client is asked on the call's stream, round after round; a modern one is answered
    // input_required and retries itself (client-input.ts).
    const rounds = await answerRounds(
      input,
      (round, withdraw) =>
        tool.run(args, call.requestId, {
          ...extra,
          ...(withdraw && { signal: undefined }),
          ...(round && { input: round }),
        }),
      (answer) => answer.input_required,
      call.signal,
    );
    const answer =
      'answer' in rounds
        ? rounds.answer
        : toolError({
            code: rounds.failure.code,
            message:
              rounds.failure.message ??
              `The tool asked its client for input ${MAX_INPUT_ROUNDS} times in one call; a call may ask at most that often.`,
          });
    result = clientResult(answer, input);
    session.metrics.toolCalls.inc({ status: result.isError ? 'error' : 'ok' });
  } catch (error) {
    if (!(error instanceof ControlPlaneError)) throw error;
    session.metrics.toolCalls.inc({ status: 'upstream_failed' });
    session.log.warn({ tool: name, err: error.message }, 'tool call failed upstream');
    const failure = unansweredCall(error, { readOnly: tool.readOnly, idempotencyKey: call.idempotencyKey });
    result = toolError(failure);
  }
  for (const line of finishLines(name, result, msSince(started))) await log(call.notify, line);
  return result;
}

/**
 * The control plane's answer as the client gets it: an input request as MCP `input_required` (a
 * modern client), a request the modern era refuses as its JSON-RPC error (-32021, -32602); the
 * answer's own fields for the gateway are never sent on.
 */
function clientResult(answer: ToolResult, input: RequestInput | undefined): CallToolResult {
  const { input_required: asked, protocol_error: refusal, task, ...result } = answer;
  const modern = input !== undefined && input.ask === undefined;
  // An upstream made a task (only for a modern request that declared the extension): its handle.
  if (task && input?.tasks !== undefined) return { resultType: 'task', ...task } as unknown as CallToolResult;
  if (asked) {
    return {
      resultType: 'input_required',
      inputRequests: asked.requests,
      requestState: asked.state,
    } as unknown as CallToolResult;
  }
  // URL elicitation (an upstream's OAuth connection to make) is asked of any client that declared
  // it: the error exists since 2025-11-25, whose clients are legacy-era sessions here.
  if (refusal && (modern || (input !== undefined && refusal.code === URL_ELICITATION_REQUIRED_ERROR))) {
    throw new WireError(refusal.code, refusal.message, refusal.data);
  }
  return result as CallToolResult;
}
