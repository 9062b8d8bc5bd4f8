// Pins that every setting reaches the process that reads it and is documented: turbo runs `pnpm
// test` and `pnpm bench` in strict env mode, so a variable turbo.json does not list never reaches
// them (a setting that silently keeps its default; `pnpm start` passes the whole environment, see
// start.happy.test.ts). Every variable of either service's settings schema,
// and every process.env name any source, test or benchmark of the repository reads, must be passed
// through; every setting must be in docs/configuration.md.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTING_NAMES } from '@bindery/service-kit/settings';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SELF = relative(ROOT, fileURLToPath(import.meta.url));
const SCANNED = ['services', 'packages', 'bench', 'prisma/scripts'];
// Passed to every task by turbo itself, whatever turbo.json says.
const ALWAYS_PASSED = new Set(['PATH']);

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir))) {
    if (entry === 'node_modules' || entry === 'generated' || entry.startsWith('.')) continue;
    const path = join(dir, entry);
    if (statSync(join(ROOT, path)).isDirectory()) found.push(...sourceFiles(path));
    else if (/\.(?:ts|mts|mjs|js)$/.test(entry)) found.push(path);
  }
  return found;
}

/** Every `process.env.NAME` read anywhere (an assignment of a default, `??=`, is not a read). */
function processEnvReads(): Map<string, string> {
  const names = new Map<string, string>();
  for (const file of SCANNED.flatMap(sourceFiles)) {
    if (file === SELF) continue;
    for (const match of read(file).matchAll(
      /process\.env(?:\.([A-Z][A-Z0-9_]*)\b|\[['"]([A-Z][A-Z0-9_]*)['"]\])(?!\s*\?\?=)/g,
    )) {
      const name = match[1] ?? match[2]!;
      if (!names.has(name)) names.set(name, file);
    }
  }
  return names;
}

function passedByTurbo(): Set<string> {
  const turbo = JSON.parse(read('turbo.json')) as {
    globalEnv?: string[];
    globalPassThroughEnv?: string[];
    tasks: Record<string, { env?: string[]; passThroughEnv?: string[] }>;
  };
  const names = [...(turbo.globalEnv ?? []), ...(turbo.globalPassThroughEnv ?? [])];
  for (const task of ['test', 'bench']) {
    names.push(...(turbo.tasks[task]?.env ?? []), ...(turbo.tasks[task]?.passThroughEnv ?? []));
  }
  return new Set(names);
}

const settings = new Set(SETTING_NAMES);

describe('settings', () => {
  it('are found: the schemas hold the settings both services are known to read', () => {
    for (const name of [
      'DATABASE_URL',
      'INTERNAL_TOKEN',
      'EXECUTE_ITEM_TIMEOUT_MS',
      'GATEWAY_ALLOWED_HOSTS',
    ]) {
      expect(settings, name).toContain(name);
    }
    expect(processEnvReads().get('TEST_DATABASE_URL')).toBeDefined();
  });

  it('every one of either schema is passed through by turbo', () => {
    const passed = passedByTurbo();
    expect([...settings].filter((name) => !passed.has(name)).sort()).toEqual([]);
  });

  it('every process.env name read by a source, test or benchmark is passed through by turbo', () => {
    const passed = passedByTurbo();
    const missing = [...processEnvReads()]
      .filter(([name]) => !passed.has(name) && !ALWAYS_PASSED.has(name))
      .map(([name, file]) => `${name} (${file})`);
    expect(missing.sort()).toEqual([]);
  });

  it('every one of either schema is in docs/configuration.md', () => {
    const documented = new Set(
      read('docs/configuration.md')
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) => /`([A-Z][A-Z0-9_]+)`/.exec(line)![1]!),
    );
    expect([...settings].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });
});
