/**
 * What every package's tests share: workspace packages resolve to their TypeScript sources (the
 * `bindery-source` export condition; services themselves run the built `dist/`), and suites whose
 * code starts worker threads or service processes build the workspace first (`tsc -b`, a no-op in
 * well under a second when nothing changed), so a thread or a process never runs older code than
 * the sources under test.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

const CONDITIONS = ['bindery-source', 'module', 'node', 'development|production'];

/** Vite's resolve options for tests: workspace packages from their sources. */
export const sourceResolution = {
  resolve: { conditions: CONDITIONS },
  ssr: { resolve: { conditions: CONDITIONS } },
};

/**
 * Test files at once in the two long suites (the control plane's and the gateway's): at least two.
 * Vitest's default, one fewer than the cores, ran them one file at a time on a 2-core machine, and
 * once the shorter suites had ended the two left ran a file each while the cores were a fifth idle
 * (a file waits for its processes to start and stop): the control plane's suite alone set the
 * whole run's length. Every file starts its own services on its own database, so files do not
 * share state.
 */
export const LONG_SUITE_WORKERS = Math.max(2, availableParallelism() - 1);

/** The global setup that builds the workspace before a suite (see buildWorkspace). */
export const BUILD_SETUP = fileURLToPath(new URL('./vitest.shared.ts', import.meta.url));

/** Builds every package and service to its dist/ (incremental: only what changed). */
export function buildWorkspace(): void {
  const root = fileURLToPath(new URL('.', import.meta.url));
  const built = spawnSync(
    process.execPath,
    [`${root}node_modules/typescript/bin/tsc`, '-b', 'tsconfig.build.json'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (built.status !== 0)
    throw new Error(`the workspace build (tsc -b tsconfig.build.json) failed (exit ${built.status})`);
}

/** As a vitest global setup. */
export default buildWorkspace;
