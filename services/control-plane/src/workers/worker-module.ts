/**
 * The module a worker thread runs, bundled into one CommonJS text by the main thread, once per
 * process and module, and handed to each thread in its `workerData` (worker-entry.cjs and
 * ts-worker-module.cjs load it there).
 *
 * Why: a thread that loads TypeScript itself registers tsx's loader, which on Node 20 runs its hooks
 * in a thread of their own, and then passes every one of its module's files through them: about
 * 1 s of CPU per thread, and every control plane starts four or more (docs/decisions/028-workers-load-one-bundled-module.md, "Workers
 * load one bundled module"). Compiling one prepared text costs about a fifth of that. The bundle is
 * made from the sources at hand when the pool is made, so a thread never runs older code than its
 * process; should the bundling fail, the thread loads the TypeScript itself, as before.
 */
import { build, buildSync, type BuildOptions, type BuildResult } from 'esbuild';
import { fileURLToPath } from 'node:url';

/** The `workerData` key of the bundled module; ts-worker-module.cjs reads the same literal. */
export const WORKER_MODULE_KEY = 'bindery.workerModule';

/** What a thread is given: its module's path, and its bundled text unless bundling failed. */
export interface WorkerModule {
  path: string;
  code?: string;
}

/**
 * Packages a bundle leaves to the thread's `require`, resolved from the module's own directory:
 * piscina, so a task shares the one instance piscina's own worker script loaded, and QuickJS, whose
 * WebAssembly file is found beside its package.
 */
const EXTERNAL = ['piscina', 'quickjs-emscripten-core', '@jitl/*'];

const bundles = new Map<string, WorkerModule>();
const pending = new Map<string, Promise<WorkerModule>>();

/**
 * The worker module at `url` (a TypeScript file), bundled on first use in this process. It blocks
 * the event loop while esbuild works (0.1-0.3 s): for pools made at start; see workerModuleLater.
 */
export function workerModule(url: URL): WorkerModule {
  const path = fileURLToPath(url);
  let bundled = bundles.get(path);
  if (bundled === undefined) {
    bundled = { path, code: textOf(path, () => buildSync(options(path))) };
    bundles.set(path, bundled);
  }
  return bundled;
}

/** workerModule without blocking the event loop: for a thread made while requests are served. */
export function workerModuleLater(url: URL): Promise<WorkerModule> {
  const path = fileURLToPath(url);
  const done = bundles.get(path);
  if (done !== undefined) return Promise.resolve(done);
  let waiting = pending.get(path);
  if (waiting === undefined) {
    waiting = build(options(path))
      .then(
        (built) => textOf(path, () => built),
        (error: unknown) =>
          textOf(path, () => {
            throw error;
          }),
      )
      .then((code) => {
        const bundled = { path, code };
        bundles.set(path, bundled);
        pending.delete(path);
        return bundled;
      });
    pending.set(path, waiting);
  }
  return waiting;
}

/** `workerData` for a thread of `module`: the thread's own data and the module. */
export function workerDataWith(module: WorkerModule, data: object = {}): Record<string, unknown> {
  return { ...data, [WORKER_MODULE_KEY]: module };
}

function options(path: string): BuildOptions & { write: false } {
  return {
    entryPoints: [path],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: EXTERNAL,
    write: false,
    logLevel: 'silent',
    // esbuild hides this warning for files under node_modules; an empty `import.meta` is wrong
    // wherever it is.
    logOverride: { 'empty-import-meta': 'error' },
  };
}

/**
 * The text of a finished build, or undefined (and a process warning) for a failed one.
 *
 * esbuild keeps its service process (and, for buildSync, a thread) for further builds, about 70 MB
 * for the life of the process. It is not stopped: stopping the sync service terminates the thread
 * that spawned its process, and nothing then reaps that process (a zombie per control plane; the
 * upstream suites count them). Bundling at start through the async API instead, whose process the
 * main thread reaps, would allow stopping it: not done yet.
 */
function textOf(path: string, result: () => BuildResult<{ write: false }>): string | undefined {
  try {
    const built = result();
    // A warning is a bundle that may not run as its sources do.
    if (built.warnings.length > 0) throw new Error(built.warnings.map((w) => w.text).join('; '));
    return built.outputFiles[0]?.text;
  } catch (error) {
    // The thread loads the TypeScript itself: slower to start, the same code.
    process.emitWarning(
      `could not bundle the worker module ${path}, so its threads load it themselves: ${String(error)}`,
    );
    return undefined;
  }
}
