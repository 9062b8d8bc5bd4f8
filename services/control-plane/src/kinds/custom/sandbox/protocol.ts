/**
 * What the control plane's event loop and a custom tool's worker thread say to each other: the task
 * (source, arguments, limits, which host functions exist), the host calls the tool makes while it
 * runs (worker -> event loop, over a MessagePort handed over with the task) and their answers, and
 * the outcome. Everything here is plain data: it crosses threads by structured clone, and the
 * arguments and answers of host calls travel as JSON text, so no object of either side ever reaches
 * the other (nor the sandbox).
 */
import type { JsonValue } from '@bindery/context-ops';
import type {
  ClientInputCapabilities,
  ClientInputCapability,
  ErrorCode,
  InputRequest,
  LogLevel,
} from '@bindery/contracts';
import type { MessagePort } from 'node:worker_threads';
import type { TaskClock } from '../../../workers/task-clock.ts';

/** The bounds of one call; memory is the pool's (it sizes each worker's WebAssembly memory). */
export interface SandboxLimits {
  /** Wall time of the call, host calls included (TIMEOUT above). */
  timeoutMs: number;
  /** Largest result, in bytes of its JSON (RESULT_TOO_LARGE above). */
  maxResultBytes: number;
  /** Console entries kept; later ones are dropped and counted in a marker entry. */
  maxConsoleEntries: number;
  /** Bytes of console text kept (UTF-8), entries included; the entry that crosses it is cut. */
  maxConsoleBytes: number;
  /** Largest arguments of one host call, in bytes of their JSON (PAYLOAD_TOO_LARGE above). */
  maxHostRequestBytes: number;
  /** Largest answer of one host call, in bytes of its JSON (RESULT_TOO_LARGE above). */
  maxHostAnswerBytes: number;
  /** Host calls of one call awaiting their answer at once (LIMIT_EXCEEDED above). */
  maxHostCallsInFlight: number;
  /** `ctx.context.write` calls of one call (LIMIT_EXCEEDED above; the writes before it stand). */
  maxWrites: number;
  /**
   * `ctx.context.write` calls of one call per second, in bursts of up to maxHostCallsInFlight; a
   * write past the pace waits for its turn (within the call's time).
   */
  writesPerSecond: number;
  /**
   * `ctx.progress` reports of one call sent to the caller; past it only the latest is kept, and
   * sent when the call ends.
   */
  maxProgressReports: number;
  /** `ctx.log` lines of one call sent to the caller; past it one marker line says so, then none. */
  maxLogLines: number;
  /** Bytes of one `ctx.log` line's data as JSON; a larger one is sent cut, as a string. */
  maxLogLineBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = {
  timeoutMs: 1_000,
  maxResultBytes: 1_000_000,
  maxConsoleEntries: 100,
  maxConsoleBytes: 16 * 1024,
  maxHostRequestBytes: 1024 * 1024,
  maxHostAnswerBytes: 4 * 1024 * 1024,
  maxHostCallsInFlight: 16,
  maxWrites: 1_000,
  writesPerSecond: 100,
  maxProgressReports: 100,
  maxLogLines: 100,
  maxLogLineBytes: 8 * 1024,
};

/** Largest source of a custom tool, in bytes (VALIDATION_FAILED above). */
export const MAX_SOURCE_BYTES = 256 * 1024;

/** What every worker thread of the sandbox is started with. */
export interface SandboxWorkerData {
  /** The memory of one call, in bytes (the engine's WebAssembly memory is sized from it). */
  memoryBytes: number;
}

/** The host functions a tool may be given; each exists in the sandbox only when the caller supplies it. */
export type HostFunction = 'context.read' | 'context.write' | 'fetch';
/** What a call may tell its caller while it runs (one-way notices, HostNotice). */
export type NoticeFunction = 'progress' | 'log';

export interface SandboxTask extends TaskClock {
  /** `check` evaluates the module and checks its default export; `run` also calls it. */
  mode: 'check' | 'run';
  code: string;
  /** The arguments, as JSON text. */
  argsJson: string;
  limits: SandboxLimits;
  /** Which host functions exist for this call. */
  functions: HostFunction[];
  /** `ctx.secrets`: names and plain values, given by the caller. */
  secrets: Record<string, string>;
  /**
   * What the caller hears while the call runs: progress reports, and log lines at `logLevel` and
   * above (absent: it hears none). Without either, `ctx.progress` and `ctx.log` check their
   * arguments and send nothing.
   */
  notices?: NoticeWants;
  /** Where host calls and notices go (absent when the call has no host function and hears nothing). */
  port?: MessagePort;
  /**
   * What the call's client can be asked (`ctx.elicit`, `ctx.sample`, `ctx.roots`) and what it
   * already answered, by key (absent: it can be asked nothing).
   */
  input?: ToolInput;
}

/** The client's side of a call's input requests (SandboxTask.input). */
export interface ToolInput {
  capabilities: ClientInputCapabilities;
  /** The client's answers by key: the value of `ctx.elicit` (and the others) asked under that key. */
  responses: Record<string, JsonValue>;
}

/** Input requests one round of a call may make at most (a tool asking for more gets a RangeError). */
export const MAX_INPUT_REQUESTS = 16;

/** What a call's caller hears while it runs. */
export interface NoticeWants {
  progress: boolean;
  logLevel?: LogLevel | undefined;
}

/**
 * A one-way message, worker -> event loop, on the host call port: a progress report, a log line
 * (its data as JSON text), or the call's end (no notice follows; the event loop waits for it, since
 * the outcome travels on another channel and could overtake the last notices).
 */
export type HostNotice =
  | { notice: 'progress'; progress: number; total?: number; message?: string }
  | { notice: 'log'; level: LogLevel; data: string }
  | { notice: 'end' };

/** A host call, worker -> event loop; `payload` is the JSON text of its arguments. */
export interface HostRequest {
  id: number;
  fn: HostFunction;
  payload: string;
}

/** The answer to a host call, event loop -> worker; `payload` is the JSON text of the result. */
export type HostAnswer =
  | { id: number; ok: true; payload: string }
  | { id: number; ok: false; code: ErrorCode; message: string; details?: RuleDetails };

/**
 * What a refusal by a table's rule tells the tool besides its message (ctx.context.write's error
 * `details`, kept on the tool's error if it does not catch it): the rule, its path, the table.
 */
export interface RuleDetails {
  rule?: string;
  path?: string;
  table_id?: string;
}

/** The RuleDetails of an error's `details` (strings only, short), or undefined when it has none. */
export function ruleDetails(details: unknown): RuleDetails | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const out: RuleDetails = {};
  for (const key of ['rule', 'path', 'table_id'] as const) {
    const value = (details as Record<string, unknown>)[key];
    if (typeof value === 'string') out[key] = value.slice(0, 1_024);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

export type ConsoleLevel = 'log' | 'info' | 'warn' | 'error' | 'debug';

/** One line the tool wrote to its console; `truncated` marks where output was dropped. */
export interface ConsoleEntry {
  level: ConsoleLevel | 'truncated';
  message: string;
}

/** How a call ended: the tool's result, or a tool error with one of the shared codes. */
export type SandboxOutcome =
  | { ok: true; value: JsonValue; console: ConsoleEntry[] }
  | {
      ok: false;
      code: ErrorCode;
      message: string;
      details?: Record<string, unknown>;
      /** The tool needed capabilities its client did not declare (and did not catch the error). */
      missingCapabilities?: ClientInputCapability[];
      console: ConsoleEntry[];
    }
  | InputOutcome;

/**
 * The call waits for its client: nothing else could go on once the tool had asked (`ctx.elicit`,
 * say) for what `requests` names; `answered` are the keys of the answers it used.
 */
export interface InputOutcome {
  ok: 'input';
  requests: Record<string, InputRequest>;
  answered: string[];
  console: ConsoleEntry[];
}
