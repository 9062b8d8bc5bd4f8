/**
 * The worker side of a custom tool call: runs in a thread of the sandbox's pool (sandbox.ts).
 * Starts the task's clock, runs it in this thread's QuickJS engine and answers the outcome as plain
 * data. A call that may have damaged the engine (it failed to free, or the engine threw) makes the
 * thread load a fresh engine for its next call.
 */
import { workerData } from 'node:worker_threads';
import { startTask } from '../../../workers/task-clock.ts';
import { discardEngine, quickjsEngine } from './engine.ts';
import type { SandboxOutcome, SandboxTask, SandboxWorkerData } from './protocol.ts';
import { runInVm } from './tool-vm.ts';

const { memoryBytes } = workerData as SandboxWorkerData;

/** Runs one task (piscina calls it); never throws for anything the tool does. */
export default async function runSandboxTask(task: SandboxTask): Promise<SandboxOutcome> {
  try {
    // The clock starts once the engine is ready: loading it (a new thread's first call, or after a
    // discarded engine) is the thread starting, which on a loaded host can take most of a second,
    // and must not be charged to the tool. The pool still bounds how long a start may take.
    const engine = await quickjsEngine(memoryBytes);
    const started = startTask(task);
    const { outcome, engineFailed } = await runInVm(
      engine,
      task,
      started + task.limits.timeoutMs,
      memoryBytes,
    );
    if (engineFailed) discardEngine();
    return outcome;
  } catch {
    // The engine could not even make a runtime (it failed to load, or an earlier call broke it in a
    // way nothing noticed): the next call gets a fresh one.
    discardEngine();
    return {
      ok: false,
      code: 'INTERNAL',
      message: 'The custom tool could not be run; try again.',
      console: [],
    };
  } finally {
    task.port?.close();
  }
}

// The engine is loaded while the worker starts, not while the first caller waits.
quickjsEngine(memoryBytes).catch(() => undefined);
