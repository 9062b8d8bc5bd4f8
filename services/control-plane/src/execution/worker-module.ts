/**
 * The module a worker thread runs, bundled into one CommonJS text by the main thread, once per
 * process and module, and handed to each thread in its `workerData` (worker-entry.cjs and
 * ts-worker-module.cjs load it there).
 *
 * Why: a thread that loads TypeScript itself registers tsx's loader, which on Node 20 runs its hooks
 * in a thread of their own, and then passes every one of its module's files through them: about
 * 1 s of CPU per thread, and every control plane starts four or more (docs/decisions.md, "Workers
 * load one bundled module"). Compiling one prepared text costs about a fifth of that. The bundle is
 * made from the sources at hand when the pool is made, so a thread never runs older code than its
 * process; should the bundling fail, the thread loads the TypeScript itself, as before.
 */
import { buildSync } from 'esbuild';
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

/** The worker module at `url` (a TypeScript file), bundled on first use in this process. */
export function workerModule(url: URL): WorkerModule {
  const path = fileURLToPath(url);
  let bundled = bundles.get(path);
  if (bundled === undefined) {
    bundled = { path, code: bundle(path) };
    bundles.set(path, bundled);
  }
  return bundled;
}

/** `workerData` for a thread of the module at `url`: the thread's own data and the module. */
export function workerDataFor(url: URL, data: object = {}): Record<string, unknown> {
  return { ...data, [WORKER_MODULE_KEY]: workerModule(url) };
}

function bundle(path: string): string | undefined {
  try {
    const built = buildSync({
      entryPoints: [path],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: EXTERNAL,
      write: false,
      logLevel: 'silent',
    });
    // A warning is a bundle that may not run as its sources do (`import.meta` is empty in CommonJS).
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
