/**
 * Trial runs (`POST /api/v2/adis/trial-runs`): a custom tool its author has not saved yet, run
 * once with arguments. The config is checked by the very checks a create runs (adis.ts
 * checkAdiDraft: same errors, a syntax error's line and column included), the arguments by the
 * executor's own check against its input schema, and the code runs through the custom kind's
 * `run` (same sandbox, limits, secrets, console capture and output-schema check) as a call marked
 * `trial`: its context is read, never written. Nothing is stored and no tool call is audited.
 * It checks configs as a create does, through the registry, so it sits beside adis.ts, above the
 * kind folders.
 */
import {
  CONSOLE_META_KEY,
  type CreateAdiBody,
  type TrialRunBody,
  type TrialRunConsoleLine,
  type TrialRunResult,
} from '@bindery/contracts';
import { OpError, type JsonValue } from '@bindery/context-ops';
import { DomainError } from '../domain/errors.ts';
import { CustomToolSandbox } from './custom/sandbox/index.ts';
import { checkAdiDraft } from './adis.ts';
import { checkArguments } from './arguments.ts';
import type { DomainContext, Principal } from '../domain/context.ts';
import { ContextStore } from '../context/context-store.ts';
import { ToolAnswer, type KindServices } from './kind.ts';
import type { RegisteredKindServices } from './registry.ts';

/** What a trial run needs of the executor's options: the parts a custom tool's call reaches. */
export type TrialRunOptions = Pick<KindServices, 'outbound'> & {
  /** The kind's log (a custom tool's console, at debug), and a line per run (info). */
  log: { debug(details: object, message: string): void; info(details: object, message: string): void };
};

/** Where a trial run's messages name the tool when its config has no name yet. */
const UNNAMED = 'the tool';

/**
 * Runs an unsaved custom tool once. A config or arguments a create or a call would refuse are
 * refused the same way (VALIDATION_FAILED, NOT_FOUND, ...); once it runs, how the run ended is
 * the answer (`ok: false` with the tool error a call would have answered), with its console.
 */
export async function trialRun(
  ctx: DomainContext,
  caller: Principal,
  body: TrialRunBody,
  trial: TrialRunOptions,
): Promise<TrialRunResult> {
  const sandbox = ctx.sandbox;
  const contexts = ctx.contexts;
  if (!(sandbox instanceof CustomToolSandbox) || !(contexts instanceof ContextStore)) {
    throw new DomainError('INTERNAL', 'custom tools cannot be tried here: no sandbox runs them');
  }
  const input = { ...body.config, kind: body.kind } as CreateAdiBody;
  const { module, columns } = await checkAdiDraft(ctx.prisma, caller, input, sandbox);
  const toolName = input.name ?? UNNAMED;
  const args = checkArguments(module.inputSchema(columns), body.arguments ?? {}, toolName);
  // A custom tool's call reaches only the sandbox, the contexts (reads: writes are refused in a
  // trial), the outbound dispatcher (ctx.fetch) and the log; the rest of the executor's options
  // (audit, bindings, queries, metrics) belong to saved tools' calls.
  const options = {
    ...trial,
    sandbox,
    contexts,
  } as Partial<RegisteredKindServices> as RegisteredKindServices;
  const meta: Record<string, JsonValue> = {};
  const started = performance.now();
  const done = (outcome: Omit<TrialRunResult, 'console' | 'duration_ms'>): TrialRunResult => {
    const result: TrialRunResult = {
      ...outcome,
      console: (meta[CONSOLE_META_KEY] ?? []) as unknown as TrialRunConsoleLine[],
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
    };
    // No audit row (nothing was saved to audit), but a trace of each run: who, which tool, how it
    // went; never its arguments nor its answer.
    trial.log.info(
      {
        user_id: caller.userId,
        tool: toolName,
        ok: result.ok,
        code: result.error?.code,
        duration_ms: result.duration_ms,
      },
      'custom tool trial run',
    );
    return result;
  };
  try {
    const answer = await module.run({
      ctx,
      options,
      toolName,
      adiId: null,
      adi: columns,
      args,
      userId: caller.userId,
      keyed: undefined,
      meta,
      trial: true,
    });
    return done({ ok: true, result: answer instanceof ToolAnswer ? answer.value : answer });
  } catch (error) {
    // A full sandbox pool, or a failure of the sandbox itself, is not the tool's doing: an HTTP
    // error (429, 500) as for any other request, not a run that failed.
    if (error instanceof DomainError && (error.code === 'RATE_LIMITED' || error.code === 'INTERNAL'))
      throw error;
    if (error instanceof DomainError || error instanceof OpError) {
      const { code, message, details } = error;
      return done({ ok: false, error: { code, message, ...(details && { details }) } });
    }
    throw error;
  }
}
