// Prints the SQL that takes a database from one data model to another, for authoring migrations
// and for the drift test. Usage:
//   node scripts/schema-sql.mjs                 # empty database -> prisma/schema.prisma
//   node scripts/schema-sql.mjs --from OLD.prisma  # OLD -> prisma/schema.prisma (a new migration)
// Needs a reachable PostgreSQL (DATABASE_URL, else 127.0.0.1:5432); nothing is written to it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve('prisma/package.json')), 'build', 'index.js');
const work = mkdtempSync(join(tmpdir(), 'bindery-schema-sql-'));

// Prisma 6 wants a url in the datasource block (Prisma 7 forbids one): add it to a temporary copy.
function withUrl(file, name) {
  const text = readFileSync(file, 'utf8').replace(
    /datasource\s+db\s*\{[^}]*\}/,
    'datasource db {\n  provider = "postgresql"\n  url = "postgresql://unused"\n}',
  );
  const out = join(work, name);
  writeFileSync(out, text);
  return out;
}

const args = process.argv.slice(2);
const fromIndex = args.indexOf('--from');
const from =
  fromIndex >= 0
    ? ['--from-schema-datamodel', withUrl(args[fromIndex + 1], 'from.prisma')]
    : ['--from-empty'];
const to = withUrl(join(here, '..', 'schema.prisma'), 'to.prisma');
// Any existing file stops Prisma from downloading engines it never runs on this path.
const stub = join(work, 'stub');
writeFileSync(stub, '');
const result = spawnSync(
  process.execPath,
  [
    cli,
    'migrate',
    'diff',
    ...from,
    '--to-schema-datamodel',
    to,
    '--script',
    '--config',
    join(here, 'schema-sql.config.ts'),
  ],
  {
    encoding: 'utf8',
    env: {
      ...process.env,
      PRISMA_QUERY_ENGINE_LIBRARY: stub,
      PRISMA_SCHEMA_ENGINE_BINARY: stub,
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
    },
    timeout: 120_000,
  },
);
rmSync(work, { recursive: true, force: true });
if (result.status !== 0) {
  process.stderr.write(result.stderr || result.stdout || String(result.error));
  process.exit(result.status ?? 1);
}
process.stdout.write(
  result.stdout.replace(/^-- CreateSchema\nCREATE SCHEMA IF NOT EXISTS "public";\n\n/, ''),
);
