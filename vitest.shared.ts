/**
 * What every package's tests share: workspace packages resolve to their TypeScript sources (the
 * `bindery-source` export condition; services themselves run the built `dist/`), and suites whose
 * code starts worker threads or service processes build the workspace first (`tsc -b`, a no-op in
 * well under a second when nothing changed), so a thread or a process never runs older code than
 * the sources under test.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CONDITIONS = ['bindery-source', 'module', 'node', 'development|production'];

/** Vite's resolve options for tests: workspace packages from their sources. */
export const sourceResolution = {
  resolve: { conditions: CONDITIONS },
  ssr: { resolve: { conditions: CONDITIONS } },
};

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
