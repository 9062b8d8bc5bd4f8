/**
 * Runs OpenAPI documents' conversions (kinds/http/openapi) in threads of their own: a large document
 * takes seconds of parsing, `$ref` resolution and schema compilation, which on the event loop would
 * hold every other request (tool calls, gateways' config fetches) that long. Each conversion is
 * bounded in time and its thread in heap, and a few run at once at most; each bound has its own
 * clear error. A thread is kept for a while after a quick conversion (loading the parser and the
 * mapping into a fresh thread takes seconds, converting a small document milliseconds), and
 * replaced after a large document, a number of conversions, a failure or a timeout.
 */
import { Worker } from 'node:worker_threads';
import { DomainError } from '../../../domain/errors.ts';
import type { OpenApiConversion, OpenApiImportOptions } from './index.ts';
import { CONVERSION_THREAD } from './conversion-thread.ts';
import type { ConversionOutcome, ConversionTask } from './openapi-worker.ts';
import { workerExecArgv, workerFile } from '../../../workers/worker-file.ts';

export interface ConversionLimits {
  /** Wall time of one conversion, a thread's start included (TIMEOUT above). */
  timeoutMs: number;
  /** Heap of a conversion thread, in MiB (LIMIT_EXCEEDED above). */
  memoryMb: number;
  /** Conversions running at once in this process (RATE_LIMITED beyond). */
  concurrent: number;
  /** How long an idle thread is kept for the next conversion. */
  idleMs: number;
  /** Conversions a thread serves before it is replaced (its caches grow with each document). */
  tasksPerThread: number;
  /**
   * A thread whose conversion took longer is not kept: a large document leaves hundreds of MB of
   * heap behind, and a thread's start (about a second) is small next to such a conversion.
   */
  keepAfterMs: number;
}

/**
 * Far above what the largest real documents need (13.6 MB and 1,200 operations: about 15 s and
 * 330 MB of RSS on a busy 2-core machine), low enough that a hostile document cannot hold a thread
 * or the machine's memory for long.
 */
export const CONVERSION_LIMITS: ConversionLimits = Object.freeze({
  timeoutMs: 120_000,
  memoryMb: 1024,
  concurrent: 2,
  idleMs: 60_000,
  tasksPerThread: 20,
  keepAfterMs: 2_000,
});

interface Thread {
  worker: Worker;
  ready: Promise<void>;
  tasks: number;
  idleTimer?: NodeJS.Timeout;
}

export class OpenApiConverter {
  private readonly limits: ConversionLimits;
  private readonly idle: Thread[] = [];
  private running = 0;
  private closed = false;

  constructor(limits: Partial<ConversionLimits> = {}) {
    this.limits = { ...CONVERSION_LIMITS, ...limits };
  }

  /** The document's HTTP tools; DomainErrors as the conversion raises them, or for a bound crossed. */
  async convert(document: unknown, options: OpenApiImportOptions): Promise<OpenApiConversion> {
    if (this.closed) throw new DomainError('RATE_LIMITED', 'the server is shutting down; try again');
    if (this.running >= this.limits.concurrent) {
      throw new DomainError(
        'RATE_LIMITED',
        `${this.running} OpenAPI imports are being converted on this server; try again when one has finished`,
        { concurrent: this.limits.concurrent },
      );
    }
    this.running++;
    try {
      const outcome = await this.inThread({ document, options });
      if (!outcome.ok)
        throw new DomainError(outcome.error.code, outcome.error.message, outcome.error.details);
      return outcome.conversion;
    } finally {
      this.running--;
    }
  }

  /** Ends every thread (the app is closing). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((thread) => this.retire(thread)));
  }

  private async spawn(): Promise<Thread> {
    const worker = new Worker(workerFile('openapi-worker', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: this.limits.memoryMb },
      workerData: CONVERSION_THREAD,
      execArgv: workerExecArgv(),
    });
    // An idle thread must not keep the process alive.
    worker.unref();
    const ready = new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) =>
        reject(new Error(`the OpenAPI conversion thread exited with code ${code}`)),
      );
    });
    // Observed here so a thread that dies while idle is no unhandled rejection.
    ready.catch(() => undefined);
    return { worker, ready, tasks: 0 };
  }

  private async retire(thread: Thread): Promise<void> {
    clearTimeout(thread.idleTimer);
    await thread.worker.terminate();
  }

  private release(thread: Thread, tookMs: number): void {
    if (this.closed || thread.tasks >= this.limits.tasksPerThread || tookMs > this.limits.keepAfterMs) {
      void this.retire(thread);
      return;
    }
    thread.idleTimer = setTimeout(() => {
      const at = this.idle.indexOf(thread);
      if (at >= 0) this.idle.splice(at, 1);
      void this.retire(thread);
    }, this.limits.idleMs);
    thread.idleTimer.unref();
    this.idle.push(thread);
  }

  private async inThread(task: ConversionTask): Promise<ConversionOutcome> {
    const thread = this.idle.pop() ?? (await this.spawn());
    clearTimeout(thread.idleTimer);
    thread.tasks++;
    const { worker } = thread;
    const limits = this.limits;
    // From when the thread has the task: a fresh thread's start is not the document's doing.
    let posted = performance.now();
    return new Promise((resolve, reject) => {
      let settled = false;
      const onMessage = (outcome: ConversionOutcome) => settle(true, () => resolve(outcome));
      const onError = (error: Error & { code?: string }) =>
        settle(false, () =>
          reject(
            error.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new DomainError(
                  'LIMIT_EXCEEDED',
                  `document: converting the OpenAPI document needed more than ${limits.memoryMb} MiB; import fewer operations (tags, paths, methods) or a smaller document`,
                  { field: 'document', limit: 'memory', memory_mb: limits.memoryMb },
                )
              : error,
          ),
        );
      const onExit = (code: number) =>
        settle(false, () =>
          reject(new Error(`the OpenAPI conversion thread exited with code ${code} before answering`)),
        );
      const timer = setTimeout(
        () =>
          settle(false, () =>
            reject(
              new DomainError(
                'TIMEOUT',
                `document: converting the OpenAPI document took longer than ${limits.timeoutMs} ms; import fewer operations (tags, paths, methods) or a smaller document`,
                { field: 'document', timeout_ms: limits.timeoutMs },
              ),
            ),
          ),
        limits.timeoutMs,
      );
      const settle = (healthy: boolean, action: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        action();
        // A thread that failed or ran out of time is not trusted with another document.
        if (healthy) this.release(thread, performance.now() - posted);
        else void this.retire(thread);
      };
      worker.on('error', onError);
      worker.on('exit', onExit);
      thread.ready.then(
        () => {
          if (settled) return;
          worker.on('message', onMessage);
          posted = performance.now();
          worker.postMessage(task);
        },
        (error: Error) => onError(error),
      );
    });
  }
}
