/**
 * Where custom JavaScript tools run: a QuickJS sandbox (quickjs-emscripten, WebAssembly) inside a
 * pool of worker threads, never on the control plane's event loop. Each call gets a fresh QuickJS
 * runtime and context in a worker, bounded in time (host calls included), memory, stack, result
 * size and console output; it sees only standard JavaScript and the `ctx` the caller builds from
 * its host functions, which run back here on the event loop (host-bridge.ts).
 *
 * The pool is worker-pool.ts's, as for long queries: a fair queue per tenant in front of the
 * threads, RATE_LIMITED past it, and a worker that overruns its deadline (a long native step the
 * interrupt handler cannot stop) is terminated and replaced.
 */
import { MessageChannel } from 'node:worker_threads';
import { FairWorkerPool, type PoolRefusal, type WorkerRun } from '../../../workers/worker-pool.ts';
import { workerFile } from '../../../workers/worker-file.ts';
import { answerHostCalls, hostFunctions, type ToolHost } from './host-bridge.ts';
import { SecretRedaction } from './secret-redaction.ts';
import {
  DEFAULT_SANDBOX_LIMITS,
  MAX_SOURCE_BYTES,
  type NoticeWants,
  type SandboxLimits,
  type SandboxOutcome,
  type SandboxTask,
  type SandboxWorkerData,
  type ToolInput,
} from './protocol.ts';
import type { JsonValue } from '@bindery/context-ops';
import type { SourceCheck } from '../../../domain/context.ts';

export interface CustomToolSandboxOptions {
  /** Worker threads, all kept running. */
  threads: number;
  /** Calls waiting for a thread at most; more answer RATE_LIMITED. */
  queue: number;
  /** Calls of one tenant in the pool at once, running or waiting; more answer RATE_LIMITED. */
  perTenant: number;
  /** Memory of one call, in MiB (LIMIT_EXCEEDED, limit `memory`, above). */
  memoryMb: number;
  /** Limits of every call unless the call narrows them. */
  limits?: Partial<SandboxLimits>;
  log?: { warn(details: object, message: string): void };
  /** Told the running and waiting counts whenever they change (for gauges). */
  report?(running: number, queued: number): void;
  /** Told of every refusal (for a counter). */
  refused?(reason: PoolRefusal): void;
}

/** One call of a custom tool. */
export interface CustomToolCall {
  /** The tool's source: an ES module whose default export is `async function (args, ctx)`. */
  code: string;
  /** The arguments (already validated against the tool's input schema). */
  args: Record<string, JsonValue>;
  /** Who the call counts against in the pool's fairness (the user owning the exposure). */
  tenant: string;
  /** Limits narrower than the sandbox's for this call. */
  limits?: Partial<SandboxLimits>;
  /**
   * Aborted when the caller gave up: host calls in flight are stopped and later ones refused, so
   * code awaiting them ends; code that only computes runs on to its end or its time limit.
   */
  signal?: AbortSignal | undefined;
  /**
   * What the call's client can be asked and has answered (absent: nothing): a tool that asks it
   * ends with an `input` outcome once nothing else can go on.
   */
  input?: ToolInput | undefined;
}

export type { SourceCheck };

const MIB = 1024 * 1024;
// A worker checks its deadline between bytecode steps; a single native step (sorting a large
// array, say) runs on until it ends. Terminating the thread this long after the deadline bounds
// that, at the price of a replacement thread (it loads its module anew).
const TERMINATE_AFTER_MS = 250;
// The V8 heap of a worker holds what crosses the boundary (arguments, results, console lines, host
// answers); the tool's own memory is the engine's WebAssembly memory, outside this heap.
const WORKER_HEAP_MB = 128;
// Checking a source runs its module's top level once.
const CHECK_ARGS = '{}';
// ...within at least this much time: a worker's first run (the engine's start) on a loaded host
// can take longer than a call's budget, and a save must not fail for that. A top level slower than
// a call's budget is saved, and its calls then end with TIMEOUT, naming the call's limit.
const CHECK_MIN_TIME_MS = 5_000;
// The end marker of a call's notices follows its outcome by a moment; past this the caller is
// answered without the notices still on their way (the worker would have to be stuck).
const NOTICES_WAIT_MS = 1_000;

export class CustomToolSandbox {
  readonly #options: CustomToolSandboxOptions;
  readonly #limits: SandboxLimits;
  readonly #workers: FairWorkerPool<SandboxTask, SandboxOutcome>;

  constructor(options: CustomToolSandboxOptions) {
    this.#options = options;
    this.#limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    const workerData: SandboxWorkerData = { memoryBytes: options.memoryMb * MIB };
    this.#workers = new FairWorkerPool({
      name: 'custom tool worker',
      module: workerFile('sandbox-worker', import.meta.url),
      threads: options.threads,
      // Every call runs in a worker, so every thread is kept: a call never waits for one to start
      // (about 0.2 s of CPU on a quiet host, much longer under load) while another runs.
      warmThreads: options.threads,
      queue: options.queue,
      perTenant: options.perTenant,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      workerData,
      // Waiting longer than two whole calls may run means the workers are saturated: say so.
      maxWaitMs: 2 * (this.#limits.timeoutMs + TERMINATE_AFTER_MS),
      terminateAfterMs: TERMINATE_AFTER_MS,
      refusal: (reason) => new Refusal(reason),
      ...(options.report && { report: options.report }),
      ...(options.log && { log: options.log }),
    });
  }

  /** The limits a call gets unless it narrows them. */
  get limits(): Readonly<SandboxLimits> {
    return this.#limits;
  }

  /** Starts the worker threads (each loads its engine) now rather than at the first call. */
  warm(): void {
    this.#workers.warm();
  }

  /** Calls running in a worker and waiting for one, now. */
  get load(): { running: number; queued: number } {
    return this.#workers.load;
  }

  /**
   * Runs a custom tool: its default export is called with a JSON copy of `args` and a `ctx` holding
   * the host functions `host` supplies. Never throws: every failure is an outcome with a code
   * (TIMEOUT, LIMIT_EXCEEDED, RESULT_TOO_LARGE, RATE_LIMITED, UPSTREAM_FAILED for what the tool
   * threw, or the code it chose).
   */
  async runCustomTool(call: CustomToolCall, host: ToolHost = {}): Promise<SandboxOutcome> {
    if (call.signal?.aborted) {
      return {
        ok: false,
        code: 'UPSTREAM_FAILED',
        message: 'The call was cancelled by its caller before it ran.',
        details: { cancelled: true },
        console: [],
      };
    }
    const limits = narrow(this.#limits, call.limits);
    const tooLarge = sourceTooLarge(call.code);
    if (tooLarge) return { ok: false, code: 'UPSTREAM_FAILED', ...tooLarge, console: [] };
    let argsJson: string;
    try {
      argsJson = JSON.stringify(call.args);
    } catch {
      return { ok: false, code: 'VALIDATION_FAILED', message: 'The arguments are not JSON.', console: [] };
    }
    const functions = hostFunctions(host);
    const notices: NoticeWants = {
      progress: host.progress !== undefined,
      ...(host.log && { logLevel: host.log.level }),
    };
    const hearsNotices = notices.progress || notices.logLevel !== undefined;
    const ended = new AbortController();
    let port: MessageChannel['port2'] | undefined;
    let noticesEnded: Promise<void> | undefined;
    if (functions.length > 0 || hearsNotices) {
      const channel = new MessageChannel();
      port = channel.port2;
      // The error is logged by name and message only, with the call's secrets taken out: a failed
      // fetch, say, may quote a URL that carries one.
      const redaction = new SecretRedaction(host.secrets ?? {});
      noticesEnded = answerHostCalls(
        channel.port1,
        host,
        limits,
        ended.signal,
        (fn, error) => {
          const { name, message } =
            error instanceof Error ? error : { name: typeof error, message: String(error) };
          this.#options.log?.warn(
            { host_function: fn, error: { name, message: redaction.text(message) } },
            'a custom tool host function failed',
          );
        },
        call.signal,
      );
    }
    try {
      const run = await this.#workers.run(
        call.tenant,
        limits.timeoutMs,
        (clock) => ({
          ...clock,
          mode: 'run',
          code: call.code,
          argsJson,
          limits,
          functions,
          secrets: { ...host.secrets },
          ...(hearsNotices && { notices }),
          ...(port && { port }),
          ...(call.input && { input: call.input }),
        }),
        port ? { transferList: [port] } : {},
      );
      // The outcome came on the pool's channel and may overtake the last notices on the port:
      // they reach the caller before the result does (the worker ends them with a marker).
      if (hearsNotices && noticesEnded && run.status === 'done')
        await settledWithin(noticesEnded, NOTICES_WAIT_MS);
      return this.#outcome(run, limits);
    } catch (error) {
      if (error instanceof Refusal) return this.#refusal(error.reason, limits);
      throw error;
    } finally {
      ended.abort();
    }
  }

  /**
   * Checks a custom tool's source when it is saved: it compiles as an ES module, its top level runs
   * within the limits, and its default export is a function. A syntax error names its line and
   * column. Runs in a worker like a call (the top level is the tool's code).
   */
  async checkCustomToolSource(code: string, tenant: string): Promise<SourceCheck> {
    const tooLarge = sourceTooLarge(code);
    if (tooLarge) return { ok: false, ...tooLarge };
    const limits = { ...this.#limits, timeoutMs: Math.max(this.#limits.timeoutMs, CHECK_MIN_TIME_MS) };
    let outcome: SandboxOutcome;
    try {
      const run = await this.#workers.run(tenant, limits.timeoutMs, (clock) => ({
        ...clock,
        mode: 'check',
        code,
        argsJson: CHECK_ARGS,
        limits,
        functions: [],
        secrets: {},
      }));
      outcome = this.#outcome(run, limits);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      outcome = this.#refusal(error.reason, limits);
    }
    if (outcome.ok) return { ok: true };
    if (outcome.code === 'RATE_LIMITED' || outcome.code === 'INTERNAL') {
      return {
        ok: false,
        message: outcome.message,
        details: { field: 'code' },
        unchecked: { code: outcome.code, ...(outcome.details && { details: outcome.details }) },
      };
    }
    const details = (outcome.details ?? {}) as { line?: number; column?: number };
    return {
      ok: false,
      message: outcome.message,
      details: {
        field: 'code',
        ...(details.line !== undefined && { line: details.line }),
        ...(details.column !== undefined && { column: details.column }),
      },
    };
  }

  /** Stops every worker; waiting calls are refused. */
  async close(): Promise<void> {
    await this.#workers.close();
  }

  #outcome(run: WorkerRun<SandboxOutcome>, limits: SandboxLimits): SandboxOutcome {
    switch (run.status) {
      case 'done':
        return run.outcome;
      case 'deadline':
        this.#options.log?.warn(
          { time_ms: limits.timeoutMs },
          'custom tool worker terminated past its deadline',
        );
        return {
          ok: false,
          code: 'TIMEOUT',
          message: `The tool ran past its time limit of ${limits.timeoutMs} ms and was stopped.`,
          details: { limit: 'time', timeout_ms: limits.timeoutMs },
          console: [],
        };
      case 'out_of_memory':
        this.#options.log?.warn(
          { heap_mb: WORKER_HEAP_MB },
          'custom tool worker ran out of heap; it is replaced',
        );
        return {
          ok: false,
          code: 'LIMIT_EXCEEDED',
          message: `The tool ran out of memory: a call may use ${this.#options.memoryMb} MiB.`,
          details: { limit: 'memory', memory_mb: this.#options.memoryMb },
          console: [],
        };
      case 'failed':
        this.#options.log?.warn({ err: run.error }, 'custom tool worker failed');
        return {
          ok: false,
          code: 'INTERNAL',
          message: 'The custom tool could not be run; try again.',
          console: [],
        };
    }
  }

  // `retry_after_seconds` as every RATE_LIMITED answer (docs/reference/admin-api.md): one call's time, rounded up.
  #refusal(reason: PoolRefusal, limits: SandboxLimits): SandboxOutcome {
    this.#options.refused?.(reason);
    const seconds = Math.max(1, Math.ceil(limits.timeoutMs / 1000));
    const why =
      reason === 'tenant_limit'
        ? `This account already has ${this.#options.perTenant} custom tool calls in progress.`
        : reason === 'closing'
          ? 'The server is shutting down.'
          : 'Too many custom tool calls right now.';
    return {
      ok: false,
      code: 'RATE_LIMITED',
      message: `${why} Retry in about ${seconds} s.`,
      details: { retry_after_seconds: seconds, reason },
      console: [],
    };
  }
}

/** Resolves when `promise` settles or `ms` have passed, whichever comes first. */
async function settledWithin(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** A refusal of the pool, carried to where the outcome is made. */
class Refusal extends Error {
  constructor(readonly reason: PoolRefusal) {
    super(reason);
  }
}

// A call may lower the sandbox's limits, never raise them.
function narrow(base: SandboxLimits, call: Partial<SandboxLimits> | undefined): SandboxLimits {
  if (call === undefined) return base;
  const out = { ...base };
  for (const key of Object.keys(base) as (keyof SandboxLimits)[]) {
    const value = call[key];
    if (typeof value === 'number' && value > 0) out[key] = Math.min(base[key], value);
  }
  return out;
}

function sourceTooLarge(code: string): { message: string; details: { field: 'code' } } | undefined {
  const size = Buffer.byteLength(code);
  if (size <= MAX_SOURCE_BYTES) return undefined;
  return {
    message: `The source takes ${size} bytes, more than the ${MAX_SOURCE_BYTES} a custom tool may have.`,
    details: { field: 'code' },
  };
}
