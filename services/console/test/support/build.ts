/**
 * Makes sure the browser tests see a build of the current sources: `pnpm install` builds the
 * console, and this builds it again only when it is missing or older than a source file (so a
 * fresh clone's run never rewrites the build other suites' control planes may be serving). The
 * build runs as its own process in production mode (vitest's NODE_ENV=test would make React's
 * development build).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

function newestChange(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newestChange(join(path, entry))));
}

export default function setup(): void {
  const index = join(root, 'dist', 'index.html');
  const sources = ['src', 'index.html', 'vite.config.ts', 'scripts'].map((entry) => join(root, entry));
  if (existsSync(index) && statSync(index).mtimeMs >= Math.max(...sources.map(newestChange))) return;
  const built = spawnSync(process.execPath, [join(root, 'node_modules/vite/bin/vite.js'), 'build'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error(`the console build failed (exit ${built.status})`);
}
