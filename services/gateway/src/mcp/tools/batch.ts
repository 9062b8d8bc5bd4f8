/**
 * Running a batch of tool calls, shared by the progressive catalog's `execute_apis` and the REST
 * entry's `tool-calls`: each call under its own time limit, at most `concurrency` at a time, and
 * each answer as plain data (`{ok, data}` or `{ok: false, error}`), never a throw for a call that
 * failed or went unanswered.
 */
import type { ToolError, ToolResult } from '@bindery/contracts';
import { ControlPlaneError } from '../../control-plane/errors.ts';
import { unansweredCall } from './call-failures.ts';
import type { ExposedTool, RunExtra } from './tool-index.ts';

export type CallOutcome = { ok: true; data: unknown } | { ok: false; error: ToolError['error'] };

/**
 * A tool's answer as plain data: its structured content (unwrapped from `result` for the
 * operations that wrap it), else its first text parsed as JSON, else that text.
 */
export function answerData(answer: ToolResult, wrapsResult: boolean): unknown {
  if (answer.structuredContent !== undefined) {
    return wrapsResult ? answer.structuredContent.result : answer.structuredContent;
  }
  const first = answer.content.find((item) => item.type === 'text') as { text?: unknown } | undefined;
  if (!first || typeof first.text !== 'string') return null;
  try {
    return JSON.parse(first.text) as unknown;
  } catch {
    return first.text;
  }
}

/**
 * Runs one call of `tool` with a time limit: `timeoutMs` without an answer is an unanswered call
 * (timed out; a write may still have happened, and the error says so).
 */
export async function runWithin(
  tool: ExposedTool,
  args: Record<string, unknown>,
  requestId: string,
  extra: RunExtra,
  timeoutMs: number,
): Promise<CallOutcome> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new ControlPlaneError(`${tool.name} took longer than ${timeoutMs} ms`, 'no-answer', true)),
        timeoutMs,
      );
    });
    const run = tool.run(args, requestId, extra);
    // Past the time limit nobody waits for it: its late failure is no one's to handle.
    run.catch(() => undefined);
    const answer = await Promise.race([run, timeout]);
    const data = answerData(answer, tool.wrapsResult);
    if (!answer.isError) return { ok: true, data };
    const error = (data as { error?: ToolError['error'] } | null)?.error;
    if (error && typeof error.code === 'string' && typeof error.message === 'string')
      return { ok: false, error };
    // A failure in another shape (an upstream MCP server's own): its data kept as it came.
    return {
      ok: false,
      error: {
        code: 'UPSTREAM_FAILED',
        message: typeof data === 'string' ? data : 'the tool reported a failure (see details.data)',
        ...(typeof data !== 'string' && data !== null && { details: { data } }),
      },
    };
  } catch (error) {
    if (!(error instanceof ControlPlaneError)) throw error;
    return {
      ok: false,
      error: unansweredCall(error, { readOnly: tool.readOnly, idempotencyKey: extra.idempotencyKey }),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `work(0..count-1)`, at most `concurrency` at a time, in index order of starting. */
export async function inPool(
  count: number,
  concurrency: number,
  work: (index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), count) }, worker));
}
