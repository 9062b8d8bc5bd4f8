/**
 * One OpenAPI import in a process of its own, so its peak RSS is the import's:
 *   node --import tsx support/openapi-import-run.ts <document file>
 * Prints one JSON line: milliseconds, tools, warnings, RSS before the import and the peak RSS.
 */
import { readFileSync } from 'node:fs';
import { openApiToHttpTools } from '../../services/control-plane/src/kinds/http/openapi/index.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: openapi-import-run.ts <document file>');
const baseRssMb = process.memoryUsage().rss / 1024 / 1024;
const started = performance.now();
const text = readFileSync(file, 'utf8');
const { tools, warnings, secrets } = openApiToHttpTools(text);
const ms = performance.now() - started;
process.stdout.write(
  `${JSON.stringify({
    ms,
    bytes: Buffer.byteLength(text),
    tools: tools.length,
    warnings: warnings.length,
    secrets: secrets.length,
    schemaBytes: tools.reduce((sum, tool) => sum + JSON.stringify(tool.config.input_schema).length, 0),
    baseRssMb,
    // maxRSS is in kilobytes.
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  })}\n`,
);
