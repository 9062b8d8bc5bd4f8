/**
 * Where a worker thread's module is, and what a thread is started with.
 *
 * Services run built JavaScript (`dist/`, made by `pnpm install` and `pnpm build`): a worker's
 * module is the `.js` file beside the code that starts it, and a thread loads it with plain node.
 * Tests run the TypeScript sources, and a worker thread gets no TypeScript loader; there the
 * thread runs the same module from the package's `dist/` (each suite's global setup builds it first,
 * so it is never older than the sources). No bundling, and no loader of our own.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The built file of the worker module `name` (no extension), beside `from` (an `import.meta.url`). */
export function workerFile(name: string, from: string): URL {
  const beside = new URL(`./${name}.js`, from);
  if (!from.endsWith('.ts')) return beside;
  // Running the sources: the same path under the package's dist/ (src/ and dist/ mirror each other).
  const href = beside.href;
  const at = href.lastIndexOf('/src/');
  if (at < 0) throw new Error(`worker module ${name}: ${from} is not under a package's src/`);
  const built = new URL(`${href.slice(0, at)}/dist/${href.slice(at + '/src/'.length)}`);
  if (!existsSync(fileURLToPath(built))) {
    throw new Error(`the worker module ${fileURLToPath(built)} is not built: run \`pnpm build\``);
  }
  return built;
}

/**
 * `require()` of an ES module off: the pool's thread loads our (ES) module with `require()` first
 * and `import()` when that fails. On Node 20, a thread terminated while `require()` loads an ES
 * module aborts the whole process (an assertion in `ModuleWrap::CreateRequiredModuleFacade`, seen
 * when a control plane was stopped right after it started, its threads still loading); `import()`
 * has no such path. Only where the running Node knows the option.
 */
const NO_REQUIRE_ESM = process.allowedNodeEnvironmentFlags.has('--experimental-require-module')
  ? ['--no-experimental-require-module']
  : [];

/**
 * Node options a worker thread starts with: none of its process's but source maps (and require of
 * ES modules off, above). A thread runs built JavaScript; a process running the sources (tests)
 * has a TypeScript loader among its options, which a thread must not inherit.
 */
export function workerExecArgv(): string[] {
  return [...process.execArgv.filter((option) => option === '--enable-source-maps'), ...NO_REQUIRE_ESM];
}
