/**
 * OpenAPI import benchmark (issue: tool kinds).
 *   pnpm --filter @bindery/bench bench:openapi [-- --operations 1200] [-- --mb 12] [-- --format json,yaml]
 *     [-- --engine postgres|pglite|none]
 * Generates a document of 1,000+ operations and 10+ MB (support/openapi-document.ts), writes it as
 * JSON and as YAML, and imports each in a fresh process (support/openapi-import-run.ts): time from
 * the text to the tool configs (parse, upgrade, $ref resolution, mapping, schema checks) and the
 * process's peak RSS. Then through the route, `POST /api/v2/openapi-imports` of a real control
 * plane (fresh database): the first import (conversion in its worker thread, then one transaction
 * writing every ADI), a re-import that finds no change, and a dry run; the control plane's peak
 * RSS, and how long a cheap request waited meanwhile (the event loop stays free). Targets: under
 * 30 s and 1 GB.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { ADMIN_TOKEN, startControlPlane } from './support/control-plane.ts';
import { generateOpenApiDocument } from './support/openapi-document.ts';
import { peakRssMb, rssMb } from './support/stats.ts';
import { benchArgs } from './support/args.ts';

const { values } = parseArgs({
  args: benchArgs(),
  options: {
    operations: { type: 'string', default: '1200' },
    mb: { type: 'string', default: '12' },
    format: { type: 'string', default: 'json,yaml' },
    engine: { type: 'string', default: 'postgres' },
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

if (values.engine !== 'none') {
  const engine = values.engine === 'pglite' ? 'pglite' : 'postgres';
  const cp = await startControlPlane(engine, { OPENAPI_IMPORT_MAX_BYTES: String(256 * 1024 * 1024) });
  try {
    const text = JSON.stringify(document);
    const body = JSON.stringify({ document: text, base_url: 'https://api.example.com' });
    const post = async (extra: Record<string, unknown> = {}) => {
      const payload =
        Object.keys(extra).length === 0 ? body : JSON.stringify({ ...JSON.parse(body), ...extra });
      const started = performance.now();
      const res = await fetch(`${cp.url}/api/v2/openapi-imports`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: payload,
      });
      const answer = (await res.json()) as Record<string, unknown[] | number>;
      if (res.status >= 300)
        throw new Error(`import answered ${res.status}: ${JSON.stringify(answer).slice(0, 500)}`);
      return { ms: performance.now() - started, answer };
    };
    /** Latencies of GET /healthz, one after another, while `work` runs: is the event loop free? */
    const whileRunning = async <T>(work: Promise<T>) => {
      const waits: number[] = [];
      let done = false;
      const result = work.finally(() => (done = true));
      while (!done) {
        const started = performance.now();
        await fetch(`${cp.url}/healthz`).then((r) => r.text());
        waits.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return { result: await result, maxWaitMs: Math.max(...waits) };
    };
    const count = (answer: Record<string, unknown[] | number>, key: string) =>
      Array.isArray(answer[key]) ? answer[key].length : answer[key];
    const line = (
      label: string,
      run: { ms: number; answer: Record<string, unknown[] | number> },
      maxWait: number,
    ) =>
      console.log(
        `  ${label.padEnd(24)} ${(run.ms / 1000).toFixed(2).padStart(6)} s  added ${count(run.answer, 'added')}, ` +
          `changed ${count(run.answer, 'changed')}, removed ${count(run.answer, 'removed')}, ` +
          `unchanged ${count(run.answer, 'unchanged')}, warnings ${count(run.answer, 'warnings')}; ` +
          `slowest /healthz meanwhile ${maxWait.toFixed(0)} ms`,
      );
    console.log(
      `through POST /api/v2/openapi-imports (${engine}, JSON text in a ${(body.length / 1024 / 1024).toFixed(1)} MB body); ` +
        `control plane RSS before ${rssMb(cp.pid).toFixed(0)} MB`,
    );
    const first = await whileRunning(post());
    line('first import', first.result, first.maxWaitMs);
    const again = await whileRunning(post());
    line('re-import (no change)', again.result, again.maxWaitMs);
    const dry = await whileRunning(post({ dry_run: true }));
    line('dry run', dry.result, dry.maxWaitMs);
    console.log(
      `  control plane peak RSS ${peakRssMb(cp.pid).toFixed(0)} MB (conversion thread included), ` +
        `now ${rssMb(cp.pid).toFixed(0)} MB`,
    );
  } finally {
    await cp.stop();
  }
}
