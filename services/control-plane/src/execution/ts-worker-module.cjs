// How a worker thread's entry loads the TypeScript module that does its work (query-worker.cjs,
// sandbox/sandbox-worker.cjs, openapi-worker.mjs): through tsx's `tsImport`, a loader scoped to
// that one import. A worker thread does not get the server's loader (on Node 20 tsx registers its
// ES module hooks in the main thread only, and vitest runs the control plane inside its own
// process), and Node's own type stripping, where it exists, refuses some of this code.
//
// The pool entries are CommonJS on purpose: piscina first require()s its entry, and under
// `node --import tsx` an ES module entry with a top-level await went through tsx's CommonJS hook,
// a synchronous esbuild transform that failed on every start.
const { pathToFileURL } = require('node:url');

/** The module at `path` (absolute), as a promise of its namespace. */
async function importTypeScript(path) {
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
  return importTypeScript(path).then((loaded) => loaded.default);
}

module.exports = { importTypeScript, taskOf };
