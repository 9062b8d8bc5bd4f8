/**
 * OpenAPI import benchmark (issue: tool kinds).
 *   pnpm --filter @bindery/bench bench:openapi [-- --operations 1200] [-- --mb 12] [-- --format json,yaml]
 * Generates a document of 1,000+ operations and 10+ MB (support/openapi-document.ts), writes it as
 * JSON and as YAML, and imports each in a fresh process (support/openapi-import-run.ts): time from
 * the text to the tool configs (parse, upgrade, $ref resolution, mapping, schema checks) and the
 * process's peak RSS. Targets: under 30 s and 1 GB.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { generateOpenApiDocument } from './support/openapi-document.ts';

const { values } = parseArgs({
  options: {
    operations: { type: 'string', default: '1200' },
    mb: { type: 'string', default: '12' },
    format: { type: 'string', default: 'json,yaml' },
  },
});

interface RunFigures {
  ms: number;
  bytes: number;
  tools: number;
  warnings: number;
  secrets: number;
  schemaBytes: number;
  baseRssMb: number;
  peakRssMb: number;
}

const runner = fileURLToPath(new URL('./support/openapi-import-run.ts', import.meta.url));
const document = generateOpenApiDocument({ operations: Number(values.operations), mb: Number(values.mb) });
const operations = Object.values(document.paths as Record<string, Record<string, unknown>>).reduce(
  (sum, item) => sum + Object.keys(item).filter((key) => key !== 'parameters').length,
  0,
);
const dir = await mkdtemp(join(tmpdir(), 'openapi-bench-'));
try {
  console.log(`OpenAPI import: ${operations} operations; targets < 30 s, < 1024 MB peak RSS`);
  for (const format of values.format.split(',')) {
    const text =
      format === 'yaml' ? stringify(document, { aliasDuplicateObjects: false }) : JSON.stringify(document);
    const file = join(dir, `api.${format}`);
    await writeFile(file, text);
    const run = spawnSync(process.execPath, ['--import', 'tsx', runner, file], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`the import of the ${format} document failed:\n${run.stderr}`);
    const figures = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as RunFigures;
    const mb = (figures.bytes / 1024 / 1024).toFixed(1);
    console.log(
      `  ${format.padEnd(4)} ${mb.padStart(5)} MB  ${(figures.ms / 1000).toFixed(2).padStart(6)} s  ` +
        `peak RSS ${figures.peakRssMb.toFixed(0).padStart(5)} MB (before the import ${figures.baseRssMb.toFixed(0)} MB)  ` +
        `${figures.tools} tools, ${figures.warnings} warnings, ${figures.secrets} secrets, ` +
        `input schemas ${(figures.schemaBytes / 1024 / 1024).toFixed(1)} MB in all`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
