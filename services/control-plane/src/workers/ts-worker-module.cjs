// How a worker thread's entry loads the module that does its work (worker-entry.cjs,
// openapi-worker.mjs). The main thread bundles that module into one CommonJS text and hands it over
// in `workerData` (worker-module.ts); the thread compiles it as the module's own file, so its
// externals resolve from the module's directory. Without a bundle the thread loads the TypeScript
// through tsx's `tsImport`, a loader scoped to that one import: a worker thread does not get the
// server's loader (on Node 20 tsx registers its ES module hooks in the main thread only, and vitest
// runs the control plane inside its own process), and Node's own type stripping, where it exists,
// refuses some of this code.
//
// The pool entry is CommonJS on purpose: piscina first require()s its entry, and under
// `node --import tsx` an ES module entry with a top-level await went through tsx's CommonJS hook,
// a synchronous esbuild transform that failed on every start.
const { createRequire } = require('node:module');
const { dirname } = require('node:path');
const { pathToFileURL } = require('node:url');
const { runInThisContext } = require('node:vm');
const { workerData } = require('node:worker_threads');

/** The `workerData` key of the bundled module (worker-module.ts WORKER_MODULE_KEY). */
const WORKER_MODULE_KEY = 'bindery.workerModule';

/** The bundled module given to this thread, if any: `{path, code?}`. */
function givenModule() {
  return workerData !== null && typeof workerData === 'object' ? workerData[WORKER_MODULE_KEY] : undefined;
}

/** CommonJS `code` run as the file at `path`: its exports. */
function compileCommonJs(code, path) {
  const wrapper = runInThisContext(
    `(function (exports, require, module, __filename, __dirname) {${code}\n})`,
    { filename: path },
  );
  const module = { exports: {} };
  wrapper.call(module.exports, module.exports, createRequire(path), module, path, dirname(path));
  return module.exports;
}

/** The module at `path` (absolute), as a promise of its namespace. */
async function loadModule(path) {
  const given = givenModule();
  if (given !== undefined && given.path === path && typeof given.code === 'string') {
    return compileCommonJs(given.code, path);
  }
  const url = pathToFileURL(path).href;
  const { tsImport } = await import('tsx/esm/api');
  return tsImport(url, url);
}

/**
 * The default export of the module at `path`, as a promise. Exported as the entry's whole
 * `module.exports`, it makes piscina wait for the module before the thread reports ready: the
 * module loads while the worker starts, not when its first task arrives (a worker blocks in
 * piscina's wait loop once ready, so an import left running would stall until then).
 */
function taskOf(path) {
  return loadModule(path).then((loaded) => loaded.default);
}

module.exports = { givenModule, loadModule, taskOf };
