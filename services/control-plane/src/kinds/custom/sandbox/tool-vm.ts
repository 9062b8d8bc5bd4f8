/**
 * One custom tool call inside QuickJS (runs in a worker thread, see sandbox-worker.ts): a fresh
 * runtime and context, the prelude (vm-prelude.ts), the tool's module, then its default export
 * called with the arguments and `ctx`, driven until its promise settles.
 *
 * The engine is the synchronous QuickJS build. Host functions return QuickJS promises: a host call
 * posts its request to the event loop and the drive loop awaits the answers, resolves the
 * promises and runs the VM's pending jobs again. So several host calls can be in flight at once
 * (`Promise.all`), the VM never blocks the worker's event loop while the host works, and the
 * WebAssembly build stays the small, fast one (asyncify would allow one suspended call at a time).
 *
 * Limits: the deadline is wall time from the task's start, host calls included: QuickJS's
 * interrupt handler stops running code past it, and the drive loop stops waiting for answers at
 * it. Memory is the WebAssembly memory of the engine (see engine.ts), plus QuickJS's own limit on
 * any one allocation. The stack is bounded so deep recursion is a QuickJS error rather than an
 * overflow of the worker's native stack.
 */
import type { JsonValue } from '@bindery/context-ops';
import {
  LOG_LEVELS,
  type ClientInputCapability,
  type ErrorCode,
  type InputRequest,
  type LogLevel,
} from '@bindery/contracts';
import type {
  JSPromiseState,
  QuickJSContext,
  QuickJSDeferredPromise,
  QuickJSHandle,
  QuickJSRuntime,
} from 'quickjs-emscripten-core';
import { ConsoleCapture } from './console-capture.ts';
import type { Engine } from './engine.ts';
import {
  MAX_INPUT_REQUESTS,
  type ConsoleLevel,
  type HostAnswer,
  type HostFunction,
  type InputOutcome,
  type SandboxOutcome,
  type SandboxTask,
  ruleDetails,
} from './protocol.ts';
import { SecretRedaction } from './secret-redaction.ts';
import { ToolNotices, type ProgressReport } from './tool-notices.ts';
import { PRELUDE } from './vm-prelude.ts';

/** The name the tool's module has in QuickJS's error positions. */
const MODULE_NAME = 'tool.js';
// Bytes of the emscripten stack QuickJS may use. Deep recursion ends as a QuickJS "stack overflow"
// error well before the worker's native stack (4 MiB) overflows; an overflow there would leave the
// engine in an unknown state.
const MAX_STACK_BYTES = 256 * 1024;
const CONSOLE_LEVELS: readonly ConsoleLevel[] = ['log', 'info', 'warn', 'error', 'debug'];
// Codes a tool may choose by throwing an error with a `code` (host errors it does not catch carry
// theirs this way too); any other thrown value is UPSTREAM_FAILED.
const TOOL_CHOSEN_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'VALIDATION_FAILED',
  'NOT_FOUND',
  'CONFLICT',
  'FORBIDDEN',
  'PRECONDITION_FAILED',
  'RATE_LIMITED',
  'UPSTREAM_FAILED',
  'TIMEOUT',
  'LIMIT_EXCEEDED',
  'RESULT_TOO_LARGE',
  'PAYLOAD_TOO_LARGE',
  'OUTCOME_UNKNOWN',
  'RULE_VIOLATED',
]);

/** What the tool threw (or what the engine threw at it), as the prelude describes it. */
interface Thrown {
  error: boolean;
  name?: string;
  type?: string;
  message: string;
  code?: string | null;
  details?: unknown;
  stack?: string;
}

type Failure = Extract<SandboxOutcome, { ok: false }>;

/** Ends the call early with a tool error (a limit, a bad source); thrown inside this module only. */
class CallEnded extends Error {
  constructor(readonly failure: Omit<Failure, 'console'>) {
    super(failure.message);
  }
}

/** Ends the call to ask its client first (nothing else could go on); thrown inside this module only. */
class InputNeeded extends Error {}

/** What a tool throws, uncaught, when it asks a client that lacks the capability (vm-prelude.ts). */
const MISSING_CAPABILITY_CODE = 'MISSING_CLIENT_CAPABILITY';

/**
 * Runs one task on `engine` until `deadline` (this thread's `performance.now()` clock) and answers
 * its outcome; never throws for anything the tool does. `engineFailed` is set when the engine
 * itself may be damaged (the caller then discards it).
 */
export async function runInVm(
  engine: Engine,
  task: SandboxTask,
  deadline: number,
  memoryBytes: number,
): Promise<{ outcome: SandboxOutcome; engineFailed: boolean }> {
  const call = new ToolCall(engine, task, deadline, memoryBytes);
  let outcome: SandboxOutcome;
  let engineFailed = false;
  try {
    outcome = await call.execute();
  } catch (error) {
    engineFailed = true;
    outcome = call.failure(call.unexpected(error));
  }
  // Sent before the outcome is answered: the event loop waits for it before it answers the caller.
  call.notices.end();
  try {
    call.dispose();
  } catch {
    // A runtime that does not free cleanly (QuickJS asserts on leaks) must not serve another call.
    engineFailed = true;
  }
  return { outcome: call.redact(outcome), engineFailed };
}

class ToolCall {
  readonly #engine: Engine;
  readonly #task: SandboxTask;
  readonly #deadline: number;
  readonly #memoryBytes: number;
  readonly #runtime: QuickJSRuntime;
  readonly #vm: QuickJSContext;
  readonly #console: ConsoleCapture;
  readonly #redaction: SecretRedaction;
  /** `ctx.progress` and `ctx.log`, bounded, on their way to the caller. */
  readonly notices: ToolNotices;
  /** Handles this call made and must free before its runtime. */
  readonly #handles: QuickJSHandle[] = [];
  readonly #pending = new Map<number, QuickJSDeferredPromise>();
  readonly #answers: HostAnswer[] = [];
  #wake: (() => void) | undefined;
  #nextId = 0;
  #interrupted = false;
  /** What the tool asked its client this round, by key, and the keys of the answers it used. */
  readonly #inputs = new Map<string, InputRequest>();
  readonly #answered = new Set<string>();
  /** Capabilities the tool asked for that the client did not declare. */
  readonly #missing = new Set<ClientInputCapability>();

  constructor(engine: Engine, task: SandboxTask, deadline: number, memoryBytes: number) {
    this.#engine = engine;
    engine.reset();
    this.#task = task;
    this.#deadline = deadline;
    this.#memoryBytes = memoryBytes;
    this.#console = new ConsoleCapture(task.limits);
    this.#redaction = new SecretRedaction(task.secrets);
    this.notices = new ToolNotices(task.port, task.notices, task.limits, this.#redaction);
    this.#runtime = engine.module.newRuntime();
    // QuickJS's own limit: it bounds any single allocation (its running total is not kept in this
    // build, so the engine's WebAssembly memory is what bounds the sum).
    this.#runtime.setMemoryLimit(memoryBytes);
    this.#runtime.setMaxStackSize(MAX_STACK_BYTES);
    this.#runtime.setInterruptHandler(() => {
      if (performance.now() < this.#deadline) return false;
      this.#interrupted = true;
      return true;
    });
    // No module loader is set: `import` of anything fails.
    this.#vm = this.#runtime.newContext();
    task.port?.on('message', (answer: HostAnswer) => {
      this.#answers.push(answer);
      this.#wake?.();
    });
  }

  async execute(): Promise<SandboxOutcome> {
    try {
      const run = this.#prelude();
      const main = await this.#loadModule();
      if (this.#task.mode === 'check') return { ok: true, value: null, console: this.#console.entries() };
      const args = this.#keep(this.#vm.newString(this.#task.argsJson));
      const promise = this.#keep(
        this.#vm.unwrapResult(this.#vm.callFunction(run, this.#vm.undefined, main, args)),
      );
      const settled = await this.#settle(promise);
      if (settled.type === 'rejected') {
        // The runner catches what the tool throws; only the engine's own failures (out of memory
        // while describing an error, say) reject it.
        throw new CallEnded(this.#engineError(this.#dumpThrown(this.#keep(settled.error))));
      }
      if (settled.type !== 'fulfilled') throw new Error('a settled promise is pending');
      return this.#finish(this.#vm.getString(this.#keep(settled.value)));
    } catch (error) {
      if (error instanceof CallEnded) return this.failure(error.failure);
      if (error instanceof InputNeeded) return this.#inputOutcome();
      throw error;
    }
  }

  #inputOutcome(): InputOutcome {
    return {
      ok: 'input',
      requests: Object.fromEntries(this.#inputs),
      answered: [...this.#answered],
      console: this.#console.entries(),
    };
  }

  failure(failure: Omit<Failure, 'console'>): Failure {
    return { ...failure, console: this.#console.entries() };
  }

  /** An exception of the host side of the engine (not of the tool): most often memory running out. */
  unexpected(error: unknown): Omit<Failure, 'console'> {
    if (this.#interrupted || performance.now() >= this.#deadline) return this.#timeout();
    const message = error instanceof Error ? error.message : String(error);
    if (this.#engine.growthRefused || /out of memory/i.test(message)) return this.#outOfMemory();
    if (/call stack/i.test(message)) return this.#stackExceeded();
    return { ok: false, code: 'INTERNAL', message: 'The custom tool could not be run; try again.' };
  }

  redact(outcome: SandboxOutcome): SandboxOutcome {
    if (!this.#redaction.active) return outcome;
    const console = this.#redaction.console(outcome.console);
    if (outcome.ok === 'input') {
      // What the client is asked is shown to a person or a model: no secret goes in it.
      const requests = this.#redaction.json(outcome.requests as unknown as JsonValue);
      return { ...outcome, requests: requests as unknown as InputOutcome['requests'], console };
    }
    if (outcome.ok) return { ok: true, value: this.#redaction.json(outcome.value), console };
    return { ...outcome, message: this.#redaction.text(outcome.message), console };
  }

  dispose(): void {
    this.#task.port?.removeAllListeners('message');
    this.#wake = undefined;
    for (const deferred of this.#pending.values()) deferred.dispose();
    this.#pending.clear();
    for (const handle of this.#handles.splice(0)) if (handle.alive) handle.dispose();
    this.#vm.dispose();
    this.#runtime.dispose();
  }

  #keep(handle: QuickJSHandle): QuickJSHandle {
    this.#handles.push(handle);
    return handle;
  }

  // Evaluates the prelude and builds `console`, `ctx` and the runner; answers the runner.
  #prelude(): QuickJSHandle {
    const vm = this.#vm;
    const factory = this.#keep(
      vm.unwrapResult(vm.evalCode(PRELUDE, 'prelude.js', { type: 'global', strict: true })),
    );
    const hostCall = this.#keep(vm.newFunction('hostCall', (fn, payload) => this.#hostCall(fn, payload)));
    const consoleWrite = this.#keep(
      vm.newFunction('consoleWrite', (level, message) => {
        const name = vm.getString(level) as ConsoleLevel;
        if (CONSOLE_LEVELS.includes(name)) this.#console.write(name, vm.getString(message));
      }),
    );
    const notify = this.#keep(
      vm.newFunction('notify', (kind, first, second) => {
        // Only the prelude holds this native, and it passes strings; a notice never fails the tool.
        try {
          const name = vm.getString(kind);
          if (name === 'progress') this.notices.progress(JSON.parse(vm.getString(first)) as ProgressReport);
          else if (name === 'log' && second !== undefined) {
            this.notices.log(vm.getString(first) as LogLevel, vm.getString(second));
          } else if (name === 'input' && second !== undefined) {
            this.#inputs.set(vm.getString(first), JSON.parse(vm.getString(second)) as InputRequest);
          } else if (name === 'answered') this.#answered.add(vm.getString(first));
          else if (name === 'missing') this.#missing.add(vm.getString(first) as ClientInputCapability);
        } catch {
          // Nothing to tell the tool: the caller misses one notice.
        }
      }),
    );
    const limits = this.#task.limits;
    const config = this.#keep(
      vm.newString(
        JSON.stringify({
          functions: this.#task.functions,
          secrets: this.#task.secrets,
          maxConsoleBytes: limits.maxConsoleBytes,
          maxResultBytes: limits.maxResultBytes,
          logLevels: LOG_LEVELS,
          logLevel: LOG_LEVELS.find((level) => this.notices.hears(level)) ?? null,
          progress: this.notices.hearsProgress,
          input: this.#task.input ?? null,
          maxInputRequests: MAX_INPUT_REQUESTS,
        }),
      ),
    );
    return this.#keep(
      vm.unwrapResult(vm.callFunction(factory, vm.undefined, hostCall, consoleWrite, notify, config)),
    );
  }

  // Evaluates the tool's module and answers its default export, a function.
  async #loadModule(): Promise<QuickJSHandle> {
    const vm = this.#vm;
    const evaluated = vm.evalCode(this.#task.code, MODULE_NAME, { type: 'module', strict: true });
    if (evaluated.error) {
      const thrown = this.#dumpThrown(this.#keep(evaluated.error));
      throw new CallEnded(this.#sourceProblem(thrown));
    }
    const loading = this.#keep(evaluated.value);
    const settled = await this.#settle(loading);
    if (settled.type === 'rejected') {
      throw new CallEnded(this.#sourceProblem(this.#dumpThrown(this.#keep(settled.error))));
    }
    if (settled.type !== 'fulfilled') throw new Error('a settled promise is pending');
    const namespace = settled.notAPromise ? settled.value : this.#keep(settled.value);
    const main = this.#keep(vm.getProp(namespace, 'default'));
    if (vm.typeof(main) !== 'function') {
      throw new CallEnded({
        ok: false,
        code: this.#task.mode === 'check' ? 'VALIDATION_FAILED' : 'UPSTREAM_FAILED',
        message:
          'The source must export a function as its default export: ' +
          '`export default async function (args, ctx) { ... }`.',
        details: { field: 'code' },
      });
    }
    return main;
  }

  // Runs the VM's jobs and feeds it host answers until `promise` settles, within the deadline.
  async #settle(promise: QuickJSHandle): Promise<JSPromiseState> {
    const vm = this.#vm;
    for (;;) {
      this.#applyAnswers();
      while (this.#runtime.hasPendingJob()) {
        const jobs = this.#runtime.executePendingJobs();
        if (jobs.error) {
          // A job's uncaught error lands in the promise it belonged to, except the engine's own
          // (interrupted, out of memory): those end the call.
          const thrown = this.#dumpThrown(jobs.error);
          jobs.error.dispose();
          if (this.#interrupted) throw new CallEnded(this.#timeout());
          if (isOutOfMemory(thrown) || this.#engine.growthRefused) throw new CallEnded(this.#outOfMemory());
        }
      }
      if (this.#interrupted) throw new CallEnded(this.#timeout());
      const state = vm.getPromiseState(promise);
      if (state.type !== 'pending') return state;
      if (this.#pending.size === 0 && this.#answers.length === 0) {
        // Nothing else can go on: the tool waits for its client's answers (the next round).
        if (this.#inputs.size > 0) throw new InputNeeded();
        // Nothing can settle it: there are no timers, and no host call is awaited.
        throw new CallEnded({
          ok: false,
          code: 'UPSTREAM_FAILED',
          message:
            'The tool awaited a promise that can never settle (the sandbox has no timers; only ctx host calls complete later).',
        });
      }
      const left = this.#deadline - performance.now();
      if (left <= 0) throw new CallEnded(this.#timeout());
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
        // An answer that came in while the VM was running wakes at once.
        if (this.#answers.length > 0) this.#wake();
      });
      this.#wake = undefined;
      if (performance.now() >= this.#deadline) throw new CallEnded(this.#timeout());
    }
  }

  // The native behind the prelude's `hostCall(fn, payloadJson)`: answers a QuickJS promise.
  #hostCall(fnHandle: QuickJSHandle, payloadHandle: QuickJSHandle): QuickJSHandle {
    const vm = this.#vm;
    const fn = vm.getString(fnHandle) as HostFunction;
    const payload = vm.typeof(payloadHandle) === 'string' ? vm.getString(payloadHandle) : 'null';
    const deferred = vm.newPromise();
    const limits = this.#task.limits;
    const refuse = (code: ErrorCode, message: string) => {
      const answer = vm.newString(`0${JSON.stringify({ code, message })}`);
      deferred.resolve(answer);
      answer.dispose();
    };
    const size = Buffer.byteLength(payload);
    if (!this.#task.functions.includes(fn) || this.#task.port === undefined) {
      refuse('FORBIDDEN', `ctx.${fn} is not available to this tool.`);
    } else if (size > limits.maxHostRequestBytes) {
      refuse(
        'PAYLOAD_TOO_LARGE',
        `ctx.${fn}: the arguments take ${size} bytes of JSON, more than the ${limits.maxHostRequestBytes} a host call may carry.`,
      );
    } else if (this.#pending.size >= limits.maxHostCallsInFlight) {
      refuse(
        'LIMIT_EXCEEDED',
        `ctx.${fn}: ${limits.maxHostCallsInFlight} host calls are already awaiting their answers; await some first.`,
      );
    } else {
      const id = ++this.#nextId;
      this.#pending.set(id, deferred);
      this.#task.port.postMessage({ id, fn, payload });
    }
    return deferred.handle;
  }

  #applyAnswers(): void {
    for (const answer of this.#answers.splice(0)) {
      const deferred = this.#pending.get(answer.id);
      if (deferred === undefined) continue;
      this.#pending.delete(answer.id);
      const text = answer.ok
        ? `1${answer.payload}`
        : `0${JSON.stringify({ code: answer.code, message: answer.message, details: answer.details })}`;
      const handle = this.#vm.newString(text);
      deferred.resolve(handle);
      handle.dispose();
      deferred.dispose();
    }
  }

  // The runner's tagged answer (see vm-prelude.ts) as the outcome.
  #finish(answer: string): SandboxOutcome {
    const tag = answer[0];
    const body = answer.slice(1);
    const limits = this.#task.limits;
    if (tag === '3' || (tag === '1' && Buffer.byteLength(body) > limits.maxResultBytes)) {
      const size = tag === '3' ? Number(body) : Buffer.byteLength(body);
      return this.failure({
        ok: false,
        code: 'RESULT_TOO_LARGE',
        message: `The tool's result takes ${size} bytes of JSON, more than the ${limits.maxResultBytes} allowed.`,
        details: { limit_bytes: limits.maxResultBytes },
      });
    }
    if (tag === '1')
      return { ok: true, value: JSON.parse(body) as JsonValue, console: this.#console.entries() };
    const thrown = parseThrown(body);
    if (tag === '0' && thrown.code === MISSING_CAPABILITY_CODE && this.#missing.size > 0) {
      return this.failure({
        ok: false,
        code: 'PRECONDITION_FAILED',
        message: thrown.message,
        details: { missing_capabilities: [...this.#missing] },
        missingCapabilities: [...this.#missing],
      });
    }
    if (tag === '2') {
      if (this.#engine.growthRefused) return this.failure(this.#outOfMemory());
      return this.failure({
        ok: false,
        code: 'UPSTREAM_FAILED',
        message: `The tool's result is not JSON: ${thrown.message}. Return plain objects, arrays, strings, numbers, booleans or null.`,
      });
    }
    return this.failure(this.#toolError(thrown));
  }

  // What the tool threw, as a tool error: its code when it chose one, else UPSTREAM_FAILED.
  #toolError(thrown: Thrown): Omit<Failure, 'console'> {
    if (isOutOfMemory(thrown) || this.#engine.growthRefused) return this.#outOfMemory();
    if (isStringTooLong(thrown)) return this.#outOfMemory('a string grew past the longest the engine allows');
    if (isStackOverflow(thrown)) return this.#stackExceeded();
    const where = position(thrown.stack);
    const chosen = TOOL_CHOSEN_CODES.has(thrown.code as ErrorCode) ? (thrown.code as ErrorCode) : undefined;
    const text = thrown.error ? `${thrown.name}: ${thrown.message}` : thrown.message;
    return {
      ok: false,
      code: chosen ?? 'UPSTREAM_FAILED',
      message: chosen ? thrown.message : `The tool threw ${text}`,
      details: {
        thrown: thrown.error ? (thrown.name ?? 'Error') : (thrown.type ?? 'unknown'),
        ...where,
        // A table's rule refused a write the tool did not catch: the rule is named as for any tool.
        ...(chosen === 'RULE_VIOLATED' && ruleDetails(thrown.details)),
      },
    };
  }

  // A source that does not compile or whose module fails while loading.
  #sourceProblem(thrown: Thrown): Omit<Failure, 'console'> {
    if (this.#interrupted) return this.#timeout();
    if (isOutOfMemory(thrown) || isStringTooLong(thrown) || this.#engine.growthRefused)
      return this.#toolError(thrown);
    const where = position(thrown.stack);
    const at = where.line === undefined ? '' : ` (line ${where.line}, column ${where.column})`;
    const syntax = thrown.name === 'SyntaxError';
    return {
      ok: false,
      code: this.#task.mode === 'check' ? 'VALIDATION_FAILED' : 'UPSTREAM_FAILED',
      message: syntax
        ? `The source has a syntax error${at}: ${thrown.message}`
        : `The source failed while loading${at}: ${thrown.name ?? 'Error'}: ${thrown.message}`,
      details: { field: 'code', ...where },
    };
  }

  #engineError(thrown: Thrown): Omit<Failure, 'console'> {
    if (this.#interrupted) return this.#timeout();
    if (isOutOfMemory(thrown)) return this.#outOfMemory();
    if (isStackOverflow(thrown)) return this.#stackExceeded();
    return this.#toolError(thrown);
  }

  #timeout(): Omit<Failure, 'console'> {
    const ms = this.#task.limits.timeoutMs;
    return {
      ok: false,
      code: 'TIMEOUT',
      message: `The tool ran past its time limit of ${ms} ms (host calls included).`,
      details: { limit: 'time', timeout_ms: ms },
    };
  }

  #outOfMemory(why?: string): Omit<Failure, 'console'> {
    const mb = Math.round(this.#memoryBytes / (1024 * 1024));
    return {
      ok: false,
      code: 'LIMIT_EXCEEDED',
      message: `The tool ran out of memory: ${why ?? `a call may use ${mb} MiB`}.`,
      details: { limit: 'memory', memory_mb: mb },
    };
  }

  #stackExceeded(): Omit<Failure, 'console'> {
    return {
      ok: false,
      code: 'LIMIT_EXCEEDED',
      message: 'The tool recursed too deeply (stack overflow).',
      details: { limit: 'stack' },
    };
  }

  // A QuickJS exception as a Thrown. Reading it may run the tool's getters, under the same deadline
  // as the rest of its code (past it, the interrupt handler stops them at once).
  #dumpThrown(handle: QuickJSHandle): Thrown {
    try {
      const dumped: unknown = this.#vm.dump(handle);
      if (dumped !== null && typeof dumped === 'object') {
        const error = dumped as { name?: unknown; message?: unknown; stack?: unknown };
        return {
          error: true,
          name: typeof error.name === 'string' ? error.name : 'Error',
          message: typeof error.message === 'string' ? error.message.slice(0, 4000) : '',
          stack: typeof error.stack === 'string' ? error.stack.slice(0, 2000) : '',
        };
      }
      return { error: false, type: typeof dumped, message: String(dumped).slice(0, 4000) };
    } catch {
      return { error: false, type: 'unknown', message: 'a value that cannot be described' };
    }
  }
}

function parseThrown(body: string): Thrown {
  try {
    const value = JSON.parse(body) as Partial<Thrown>;
    if (typeof value === 'object' && value !== null && typeof value.message === 'string') {
      return value as Thrown;
    }
  } catch {
    // The tool replaced JSON.stringify's behaviour for its own objects: describe it generically.
  }
  return { error: false, type: 'unknown', message: 'a value that cannot be described' };
}

function isOutOfMemory(thrown: Thrown): boolean {
  return thrown.name === 'InternalError' && thrown.message === 'out of memory';
}

// Concatenation builds ropes without copying, so doubling a string reaches QuickJS's length cap
// (2^30 characters) before it takes the memory.
function isStringTooLong(thrown: Thrown): boolean {
  return thrown.message === 'string too long';
}

function isStackOverflow(thrown: Thrown): boolean {
  return thrown.name === 'InternalError' && thrown.message === 'stack overflow';
}

/** Line and column of the innermost frame in the tool's module, from a QuickJS stack. */
function position(stack: string | undefined): { line?: number; column?: number } {
  const match = /tool\.js:(\d+):(\d+)/.exec(stack ?? '');
  return match ? { line: Number(match[1]), column: Number(match[2]) } : {};
}
