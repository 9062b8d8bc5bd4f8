// Prisma CLI config for this service. Only `prisma generate` is used here (the client is generated
// from ../../prisma/schema.prisma); migrations are applied by our own in-process runner
// (src/db/migrate.ts), so no schema engine binary is needed. Prisma would otherwise try to download
// one; pointing it at any existing executable stops that, and generate never runs it.
import { defineConfig } from 'prisma/config';

process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= process.execPath;

export default defineConfig({
  schema: '../../prisma/schema.prisma',
  migrations: { path: '../../prisma/migrations' },
});
